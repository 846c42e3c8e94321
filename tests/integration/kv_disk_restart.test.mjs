// The G3 disk tier survives a crash: a router and one decode worker (prefill
// local) with a tiny G1 and G2 and a disk path; several multi-turn
// conversations push their blocks out of G1 and G2 onto disk; the worker is
// SIGKILLed and started again on the same disk path and address; every earlier turn,
// replayed, comes back with cached tokens > 0 (G1 and G2 start empty, so they
// came from disk) and the same tokens and text as the first run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startRouter, startWorker, waitForHealthy, inferenceClient, oracle, kvBytesPerToken, scrape, sum, waitFor } from './cluster.mjs';

// G1 ~16 blocks of 16 tokens (one turn of ~170 tokens fits), G2 ~4 (20 KiB
// a block on stories260K).
const blockBytes = 16 * kvBytesPerToken;
const workerArgs = (dir) => ['--kv-budget', String(16 * blockBytes), '--kv-host-bytes', String(4 * blockBytes), '--kv-disk-path', dir,
  '--kv-disk-bytes', '16M', '--kv-disk-min-hits', '1', '--max-num-seqs', '1'];

const CONVERSATIONS = 3;
const TURNS = 3;
const MAX_TOKENS = 16;

// a deterministic user message of `n` token ids (the oracle's prompts,
// shifted per conversation and turn so no two conversations share a block).
function userTokens(conv, turn, n) {
  const base = oracle.cases.flatMap((c) => c.prompt_ids.slice(1));
  return [...Array(n)].map((_, i) => 3 + ((base[(i + turn * 7) % base.length] + conv * 37 + turn * 11 + i) % 500));
}

const request = (ids) => ({ token_ids: { ids }, params: { temperature: 0, max_tokens: MAX_TOKENS } });

async function run(client, prompt) {
  const r = await client.generate(request(prompt));
  return { ids: r.ids, text: r.text, cached: r.msgs.at(-1)?.usage?.cached_tokens ?? 0 };
}

test('G3 blocks survive a SIGKILLed worker: replayed turns are cached and identical', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tandem-g3-restart-'));
  const router = await startRouter({ args: ['--max-local-prefill-tokens', '100000'] });
  let worker = await startWorker('decode', router, workerArgs(dir), 'decode-first');
  let client;
  try {
    await waitForHealthy(router, { prefill: 0, decode: 1 });
    client = inferenceClient(router);
    // the first run: every turn's prompt is the previous turn's prompt,
    // its answer and a new user message.
    const turns = [];
    for (let t = 0; t < TURNS; ++t) {
      for (let c = 0; c < CONVERSATIONS; ++c) {
        const prev = turns.find((x) => x.conv === c && x.turn === t - 1);
        const prompt = [...(prev ? [...prev.prompt, ...prev.first.ids] : [1]), ...userTokens(c, t, 40)];
        turns.push({ conv: c, turn: t, prompt, first: await run(client, prompt) });
      }
    }
    const before = await scrape(worker.metricsUrl);
    const stored = sum(before, 'tandem:kv_tier_offloads_total', { tier: 'disk' });
    assert.ok(stored > 0, `no block reached the disk tier (stores ${stored})`);

    // SIGKILL: nothing is flushed or closed; a new worker on the same path.
    worker.kill('SIGKILL');
    await worker.exited;
    // at the same address, as a supervisor or a pod with a fixed address
    // restarts it: the router's first attempt may meet the dead process's
    // connection and retry; the usage still reports what the retry found
    // cached.
    worker = await startWorker('decode', router, workerArgs(dir), 'decode-restarted', [], worker.address);
    await waitFor(async () => sum(await scrape(worker.metricsUrl), 'tandem:kv_tier_used_blocks', { tier: 'disk' }) > 0,
      30000, 'the restarted worker listing its recovered disk blocks');
    await waitFor(async () => {
      const m = await scrape(`${router.url}/metrics`);
      return sum(m, 'tandem:router_workers', { role: 'decode', state: 'healthy' }) === 1 &&
        sum(m, 'tandem:router_workers', { role: 'decode' }) === 1;
    }, 30000, 'the restarted worker alone on the router');

    // the worker republished what it found on disk (BlockStored{disk}):
    // the router's index lists it before any request.
    await waitFor(async () => sum(await scrape(`${router.url}/metrics`), 'tandem:router_kv_index_blocks') > 0,
      30000, 'the recovered blocks in the router\'s index');
    const predicted = () => scrape(`${router.url}/metrics`)
      .then((m) => sum(m, 'tandem:router_route_predicted_cached_tokens_total'));
    const predictedBefore = await predicted();

    // the earlier turns again, oldest first: from disk, and identical.
    for (const x of turns.filter((y) => y.turn < TURNS - 1)) {
      const again = await run(client, x.prompt);
      const what = `conversation ${x.conv} turn ${x.turn}`;
      assert.deepEqual(again.ids, x.first.ids, what);
      assert.equal(again.text, x.first.text, what);
      assert.ok(again.cached > 0, `${what}: no cached tokens after the restart`);
    }
    assert.ok(await predicted() > predictedBefore, 'the router predicted no cached tokens for the replayed turns');
    const after = await scrape(worker.metricsUrl);
    assert.ok(sum(after, 'tandem:kv_tier_onboards_total', { tier: 'disk' }) > 0, 'nothing onboarded from disk');
  } finally {
    client?.close();
    worker.kill('SIGKILL');
    router.kill('SIGKILL');
    await Promise.all([worker.exited, router.exited]);
    rmSync(dir, { recursive: true, force: true });
  }
});
