// The router SIGKILLed under load and started again on the same ports: the
// workers (still running) register again, none is lost, and new requests
// succeed with the oracle's outputs. The new router rebuilds its KV index
// from the workers' snapshots, and routes by it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  startCluster, startRouter, waitFor, waitForHealthy, inferenceClient, oracle, oracleRequest, scrape, sum, sleep,
} from './cluster.mjs';

test('a router restarted mid-load finds every worker again and serves new requests', async () => {
  const routerArgs = ['--max-local-prefill-tokens', '3'];
  const cluster = await startCluster({ prefill: 1, decode: 2, routerArgs });
  let client = inferenceClient(cluster.router);
  let loading = true;
  const outcome = { ok: 0, failed: 0, error: null };
  // waits for `n` successful requests (at most 30 s); a wrong output fails.
  const untilOk = async (n) => {
    const end = Date.now() + 30000;
    while (outcome.ok < n) {
      if (outcome.error) throw outcome.error;
      assert.ok(Date.now() < end, `only ${outcome.ok} of ${n} requests succeeded`);
      await sleep(20);
    }
  };
  // 6 clients sending oracle requests back to back; failures while the
  // router is down are expected, wrong outputs never.
  const load = Promise.all([...Array(6)].map(async (_, k) => {
    for (let i = k; loading; i++) {
      const c = oracle.cases[i % oracle.cases.length];
      try {
        const r = await client.generate(oracleRequest(c));
        assert.deepEqual(r.ids, c.completion_ids, c.prompt);
        outcome.ok++;
      } catch (e) {
        if (e.code === 'ERR_ASSERTION') { outcome.error = e; throw e; }
        outcome.failed++;
        await sleep(50);
      }
    }
  }));
  try {
    await untilOk(12);
    const { httpPort, grpcPort, internalPort } = cluster.router;
    cluster.router.kill('SIGKILL');
    assert.equal((await cluster.router.exited).signal, 'SIGKILL');
    cluster.router = await startRouter({ httpPort, grpcPort, internalPort, args: routerArgs });
    await waitForHealthy(cluster.router, { prefill: 1, decode: 2 });
    for (const w of [...cluster.prefill, ...cluster.decode]) {
      assert.equal(w.proc.exitCode, null, `${w.name} is still running`);
    }
    client.close();
    client = inferenceClient(cluster.router);
    const okBefore = outcome.ok;
    await untilOk(okBefore + 16);
    loading = false;
    await load;
    // long prompts still go to P through the new router.
    const router = await scrape(cluster.router.metricsUrl);
    assert.ok(sum(router, 'tandem:router_prefills_total', { kind: 'remote' }) > 0);
    console.log(`requests: ${outcome.ok} ok, ${outcome.failed} failed while the router was down`);
  } finally {
    loading = false;
    client.close();
    await load.catch(() => {});
    await cluster.stop();
  }
});

// a greedy /v1/completions of token ids on the router; resolves with the body.
async function complete(router, prompt, maxTokens) {
  const models = await (await fetch(`${router.url}/v1/models`)).json();
  const res = await fetch(`${router.url}/v1/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: models.data[0].id, prompt, max_tokens: maxTokens, temperature: 0 }),
  });
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  return body;
}

test('a restarted router rebuilds its KV index from the workers\' snapshots and routes by it', async () => {
  // one decode worker, so the cached prompt can only land where its blocks are.
  const cluster = await startCluster({ prefill: 1, decode: 1 });
  const [d] = cluster.decode;
  try {
    // 100 tokens (6 full blocks of 16), above the remote-prefill threshold: P prefills it.
    const prompt = [...oracle.cases[0].prompt_ids, ...oracle.cases[0].completion_ids,
      ...oracle.cases[1].completion_ids].slice(0, 100);
    assert.equal(prompt.length, 100);
    const first = await complete(cluster.router, prompt, 4);
    let router = await scrape(cluster.router.metricsUrl);
    assert.equal(sum(router, 'tandem:router_prefills_total', { kind: 'remote' }), 1);

    const { httpPort, grpcPort, internalPort } = cluster.router;
    cluster.router.kill('SIGKILL');
    await cluster.router.exited;
    cluster.router = await startRouter({ httpPort, grpcPort, internalPort });
    await waitForHealthy(cluster.router, { prefill: 1, decode: 1 });
    // every worker's snapshot applied; D's blocks in the index.
    await waitFor(async () => {
      router = await scrape(cluster.router.metricsUrl);
      return sum(router, 'tandem:router_kv_snapshots_total') >= 2 &&
        sum(router, 'tandem:router_kv_index_blocks', { worker: d.address }) >= 6;
    }, 10000, 'the new router\'s KV index holding D\'s blocks');
    assert.equal(sum(router, 'tandem:router_kv_resyncs_total'), 0);

    // the same prompt: the index says D holds 96 of its tokens, so only 4
    // are uncached and D prefills them itself, reusing the rest.
    const second = await complete(cluster.router, prompt, 4);
    assert.ok(second.usage.prompt_tokens_details.cached_tokens >= 96, JSON.stringify(second.usage));
    assert.equal(second.choices[0].text, first.choices[0].text);
    router = await scrape(cluster.router.metricsUrl);
    assert.equal(sum(router, 'tandem:router_prefills_total', { kind: 'local' }), 1);
    assert.equal(sum(router, 'tandem:router_prefills_total', { kind: 'remote' }), 0);
  } finally {
    await cluster.stop();
  }
});
