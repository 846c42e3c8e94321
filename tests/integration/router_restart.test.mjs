// The router SIGKILLed under load and started again on the same ports: the
// workers (still running) register again, none is lost, and new requests
// succeed with the oracle's outputs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  startCluster, startRouter, waitForHealthy, inferenceClient, oracle, oracleRequest, scrape, sum, sleep,
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
    const { httpPort, grpcPort } = cluster.router;
    cluster.router.kill('SIGKILL');
    assert.equal((await cluster.router.exited).signal, 'SIGKILL');
    cluster.router = await startRouter({ httpPort, grpcPort, args: routerArgs });
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
