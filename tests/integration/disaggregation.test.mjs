// Disaggregated serving through real processes: a router, one prefill
// worker P and two decode workers D on loopback. Long prompts are prefilled
// on P and their KV reaches D over gRPC and over shared memory; greedy
// outputs equal the llama.cpp oracle; short prompts stay on D. With
// --kv-cache-dtype f16 on both sides the blocks cross at half the bytes; a P
// whose blocks are F16 against D's F32 is refused and D prefills locally.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startCluster, startWorker, waitForHealthy, inferenceClient, oracle, oracleRequest, scrape, sum, sumOver,
} from './cluster.mjs';

// every oracle prompt (4 to 12 tokens) exceeds it; a 2-token prompt does not.
const MAX_LOCAL = '3';

let cluster;
let client;
before(async () => {
  cluster = await startCluster({
    prefill: 1, decode: 2, routerArgs: ['--max-local-prefill-tokens', MAX_LOCAL], prefillArgs: ['--kv-transport', 'grpc'],
  });
  client = inferenceClient(cluster.router);
});
after(async () => { client?.close(); await cluster?.stop(); });

async function counters() {
  const router = await scrape(cluster.router.metricsUrl);
  return {
    served: await sumOver(cluster.prefill, 'tandem:prefills_total', { kind: 'served' }),
    remote: await sumOver(cluster.decode, 'tandem:prefills_total', { kind: 'remote' }),
    grpcBytes: await sumOver(cluster.decode, 'tandem:kv_transfer_bytes_total', { direction: 'received', transport: 'grpc' }),
    shmBytes: await sumOver(cluster.decode, 'tandem:kv_transfer_bytes_total', { direction: 'received', transport: 'shm' }),
    sentBytes: await sumOver(cluster.prefill, 'tandem:kv_transfer_bytes_total', { direction: 'sent' }),
    routerRemote: sum(router, 'tandem:router_prefills_total', { kind: 'remote' }),
    routerLocal: sum(router, 'tandem:router_prefills_total', { kind: 'local' }),
  };
}

async function runOracle() {
  for (const c of oracle.cases) {
    const r = await client.generate(oracleRequest(c));
    assert.deepEqual(r.ids, c.completion_ids, c.prompt);
    assert.equal(r.text, c.completion_text, c.prompt);
    assert.equal(r.finish, 'length');
  }
}

// the KV bytes D received over gRPC for the oracle's prompts with F32 blocks.
let f32GrpcBytes = 0;

test('long prompts are prefilled on P and their KV reaches D over gRPC; outputs equal the oracle', async () => {
  const before = await counters();
  await runOracle();
  const now = await counters();
  f32GrpcBytes = now.grpcBytes - before.grpcBytes;
  const n = oracle.cases.length;
  assert.equal(now.served - before.served, n, 'P served one Prefill per request');
  assert.equal(now.remote - before.remote, n, 'D prefilled remotely');
  assert.equal(now.routerRemote - before.routerRemote, n);
  assert.ok(now.grpcBytes > before.grpcBytes, 'D received KV bytes over grpc');
  assert.equal(now.shmBytes, before.shmBytes, 'nothing over shm');
  assert.equal(now.grpcBytes - before.grpcBytes, now.sentBytes - before.sentBytes, 'bytes received = bytes sent');
});

test('with --kv-transport shm the KV reaches D over shared memory; outputs equal the oracle', async () => {
  // restart P with the other transport; the router forgets the old one.
  await cluster.prefill[0].stop('SIGTERM');
  cluster.prefill[0] = await startWorker('prefill', cluster.router, ['--kv-transport', 'shm'], 'prefill-shm');
  await waitForHealthy(cluster.router, { prefill: 1, decode: 2 });
  const before = await counters();
  await runOracle();
  const now = await counters();
  assert.equal(now.served - before.served, oracle.cases.length);
  assert.ok(now.shmBytes > before.shmBytes, 'D received KV bytes over shm');
  assert.equal(now.grpcBytes, before.grpcBytes, 'nothing over grpc');
});

test('short prompts stay on D: the router counts them local and P serves none', async () => {
  const before = await counters();
  const c = oracle.cases[0];
  // BOS + one token: below --max-local-prefill-tokens.
  const short = c.prompt_ids.slice(0, 2);
  for (let i = 0; i < 4; i++) {
    const r = await client.generate({ token_ids: { ids: short }, params: { temperature: 0, max_tokens: 8 } });
    assert.equal(r.ids.length, 8);
  }
  const now = await counters();
  assert.equal(now.routerLocal - before.routerLocal, 4);
  assert.equal(now.served, before.served, 'P served nothing');
  assert.equal(now.routerRemote, before.routerRemote);
});

test('a P with F16 blocks against D with F32 ones: D refuses them, prefills locally; outputs equal the oracle', async () => {
  await cluster.prefill[0].stop('SIGTERM');
  cluster.prefill[0] = await startWorker('prefill', cluster.router, ['--kv-transport', 'grpc', '--kv-cache-dtype', 'f16'], 'prefill-f16');
  await waitForHealthy(cluster.router, { prefill: 1, decode: 2 });
  const before = await counters();
  const failedBefore = await sumOver(cluster.decode, 'tandem:prefills_total', { kind: 'remote_failed' });
  await runOracle();
  const now = await counters();
  const failed = await sumOver(cluster.decode, 'tandem:prefills_total', { kind: 'remote_failed' }) - failedBefore;
  assert.equal(failed, oracle.cases.length, 'every remote prefill failed on the block size');
  assert.equal(now.remote, before.remote, 'no KV crossed');
});

test('with --kv-cache-dtype f16 on P and D the blocks cross at half the bytes; outputs equal the oracle', async () => {
  assert.ok(f32GrpcBytes > 0, 'the F32 run came first');
  await Promise.all(cluster.decode.map((d) => d.stop('SIGTERM')));
  cluster.decode = await Promise.all([0, 1].map((i) =>
    startWorker('decode', cluster.router, ['--kv-cache-dtype', 'f16'], `decode-f16-${i}`)));
  await waitForHealthy(cluster.router, { prefill: 1, decode: 2 });
  const before = await counters();
  await runOracle();
  const now = await counters();
  assert.equal(now.remote - before.remote, oracle.cases.length, 'D prefilled remotely');
  assert.equal(2 * (now.grpcBytes - before.grpcBytes), f32GrpcBytes, 'F16 blocks are half the bytes');
});
