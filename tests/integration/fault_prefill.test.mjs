// Faults on the prefill side: P is SIGKILLed during a batch of 50 requests
// (every one succeeds: D prefills locally what P did not), and P corrupts a
// block in transit (tandem_fault_worker's injected fault; D's checksum
// catches it; the output is still right).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  startCluster, inferenceClient, oracle, oracleRequest, scrape, sum, sumOver, waitFor, sleep,
} from './cluster.mjs';

const routerArgs = ['--max-local-prefill-tokens', '3'];

test('SIGKILL of P during a batch of 50 requests: 50/50 succeed with the undisturbed outputs', async () => {
  // P prefills a few prompts a step, so the batch takes it many steps.
  const cluster = await startCluster({
    prefill: 1, decode: 2, routerArgs, prefillArgs: ['--max-batched-tokens', '32', '--chunk-size', '32'],
  });
  const client = inferenceClient(cluster.router);
  try {
    const P = cluster.prefill[0];
    const cases = [...Array(50)].map((_, i) => oracle.cases[i % oracle.cases.length]);
    // a request every 5 ms; P is killed after the 15th: some were prefilled
    // on P, some were in flight on it, the rest find it gone.
    const pending = [];
    for (let i = 0; i < cases.length; i++) {
      pending.push(client.generate(oracleRequest(cases[i])));
      if (i === 14) P.kill('SIGKILL');
      await sleep(5);
    }
    const batch = Promise.allSettled(pending);
    const results = await batch;
    const failed = results.filter((r) => r.status === 'rejected');
    assert.equal(failed.length, 0, `failed: ${failed.map((r) => r.reason?.message).join('; ')}`);
    results.forEach((r, i) => assert.deepEqual(r.value.ids, cases[i].completion_ids, `request ${i}`));
    assert.equal((await P.exited).signal, 'SIGKILL');
    // the prefills P did not finish were done on D, which survived it.
    for (const d of cluster.decode) assert.ok(d.proc.exitCode === null && d.proc.signalCode === null, `${d.name} died with P:\n${d.log().slice(-2000)}`);
    const onD = await sumOver(cluster.decode, 'tandem:prefills_total', { kind: 'remote_failed' }) +
      await sumOver(cluster.decode, 'tandem:prefills_total', { kind: 'local' });
    assert.ok(onD > 0, 'the prompts P did not prefill were prefilled on D');
    let router = await scrape(cluster.router.metricsUrl);
    assert.equal(sum(router, 'tandem:router_migrations_total'), 0, 'no request had to migrate');
    // the router notices P is gone; new long prompts are prefilled on D.
    await waitFor(async () => sum(await scrape(cluster.router.metricsUrl), 'tandem:router_workers',
      { role: 'prefill', state: 'healthy' }) === 0, 20000, 'P unhealthy on the router');
    const r = await client.generate(oracleRequest(oracle.cases[1]));
    assert.deepEqual(r.ids, oracle.cases[1].completion_ids);
    router = await scrape(cluster.router.metricsUrl);
    console.log('router prefills:', ['local', 'remote', 'remote_failed']
      .map((k) => `${k}=${sum(router, 'tandem:router_prefills_total', { kind: k })}`).join(' '));
  } finally {
    client.close();
    await cluster.stop();
  }
});

test('a block corrupted in transit is detected by D and never used: outputs equal the oracle', async () => {
  const cluster = await startCluster({
    prefill: 1, decode: 2, routerArgs, prefillFaults: ['--corrupt-kv-block', '0'],
  });
  const client = inferenceClient(cluster.router);
  try {
    for (const c of oracle.cases) {
      const r = await client.generate(oracleRequest(c));
      assert.deepEqual(r.ids, c.completion_ids, c.prompt);
    }
    const failures = await sumOver(cluster.decode, 'tandem:kv_transfer_failures_total');
    assert.ok(failures > 0, 'D counted transfer failures');
    // D recomputed the prompt itself: counted remote_failed on D and router.
    const router = await scrape(cluster.router.metricsUrl);
    const routerFailed = sum(router, 'tandem:router_prefills_total', { kind: 'remote_failed' });
    assert.ok(routerFailed > 0, 'router counted remote_failed prefills');
    assert.equal(await sumOver(cluster.decode, 'tandem:prefills_total', { kind: 'remote_failed' }), routerFailed);
  } finally {
    client.close();
    await cluster.stop();
  }
});
