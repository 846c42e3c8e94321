// Disaggregated serving with the KV moving over UCX (--kv-transport ucx on
// P and D): a router, one prefill worker P and two decode workers D on
// loopback, UCX restricted to its TCP transport, then to its shared-memory
// ones (UCX_TLS, which every process started here inherits). Outputs equal
// the llama.cpp oracle; a block corrupted in transit is caught by D.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  startCluster, inferenceClient, oracle, oracleRequest, scrape, sum, sumOver,
} from './cluster.mjs';

const routerArgs = ['--max-local-prefill-tokens', '3'];
const ucx = ['--kv-transport', 'ucx'];

async function runOracle(client) {
  for (const c of oracle.cases) {
    const r = await client.generate(oracleRequest(c));
    assert.deepEqual(r.ids, c.completion_ids, c.prompt);
    assert.equal(r.text, c.completion_text, c.prompt);
  }
}

for (const tls of ['tcp', 'sm,self']) {
  test(`UCX_TLS=${tls}: long prompts are prefilled on P, their KV reaches D over ucx; outputs equal the oracle`, async () => {
    process.env.UCX_TLS = tls;
    const cluster = await startCluster({ prefill: 1, decode: 2, routerArgs, prefillArgs: ucx, decodeArgs: ucx });
    const client = inferenceClient(cluster.router);
    try {
      await runOracle(client);
      const n = oracle.cases.length;
      assert.equal(await sumOver(cluster.prefill, 'tandem:prefills_total', { kind: 'served' }), n);
      assert.equal(await sumOver(cluster.decode, 'tandem:prefills_total', { kind: 'remote' }), n);
      const received = await sumOver(cluster.decode, 'tandem:kv_transfer_bytes_total', { direction: 'received', transport: 'ucx' });
      const sent = await sumOver(cluster.prefill, 'tandem:kv_transfer_bytes_total', { direction: 'sent' });
      assert.ok(received > 0, 'D received KV bytes over ucx');
      assert.equal(received, sent, 'bytes received = bytes sent');
      assert.equal(await sumOver(cluster.decode, 'tandem:kv_transfer_failures_total'), 0);
    } finally {
      client.close();
      await cluster.stop();
      delete process.env.UCX_TLS;
    }
  });
}

test('UCX_TLS=tcp: a block corrupted in transit is detected by D and never used: outputs equal the oracle', async () => {
  process.env.UCX_TLS = 'tcp';
  const cluster = await startCluster({
    prefill: 1, decode: 2, routerArgs, prefillArgs: ucx, decodeArgs: ucx, prefillFaults: ['--corrupt-kv-block', '0'],
  });
  const client = inferenceClient(cluster.router);
  try {
    await runOracle(client);
    assert.ok(await sumOver(cluster.decode, 'tandem:kv_transfer_failures_total') > 0, 'D counted transfer failures');
    const router = await scrape(cluster.router.metricsUrl);
    assert.ok(sum(router, 'tandem:router_prefills_total', { kind: 'remote_failed' }) > 0);
  } finally {
    client.close();
    await cluster.stop();
    delete process.env.UCX_TLS;
  }
});
