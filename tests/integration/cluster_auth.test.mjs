// The router's ports as a stranger meets them (real processes): its public
// gRPC port serves no tandem.v1.Registry, its internal port refuses calls
// without the cluster secret, and a worker without the secret cannot join.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';
import { sourceDir, model, spawnTandem, startCluster, scrape, sum } from './cluster.mjs';

const workerProto = grpc.loadPackageDefinition(protoLoader.loadSync('tandem/v1/worker.proto', {
  includeDirs: [path.join(sourceDir, 'proto')], keepCase: true, longs: Number, enums: String, defaults: true,
})).tandem.v1;

// Registry.Register at `address` with `info`; resolves with the gRPC status code.
function register(address, info, metadata = new grpc.Metadata()) {
  const client = new workerProto.Registry(address, grpc.credentials.createInsecure());
  return new Promise((resolve) => {
    client.Register(info, metadata, (err) => { client.close(); resolve(err ? err.code : grpc.status.OK); });
  });
}

test('a stranger can neither register on the public port nor on the internal one', async () => {
  const cluster = await startCluster({ prefill: 0, decode: 1 });
  try {
    const { router } = cluster;
    // a fake decode worker reporting no load, as an attacker would.
    const info = {
      worker_id: 'fake', address: '127.0.0.1:9', role: 'WORKER_ROLE_DECODE', model_path: model,
      model_name: 'stories260K', max_model_len: 512, vocab_size: 512, block_size: 16, num_blocks: 1000,
    };
    assert.equal(await register(router.grpcAddress, info), grpc.status.UNIMPLEMENTED);
    assert.equal(await register(router.internalAddress, info), grpc.status.UNAUTHENTICATED);
    const wrong = new grpc.Metadata();
    wrong.set('x-tandem-cluster-secret', 'f'.repeat(64));
    assert.equal(await register(router.internalAddress, info, wrong), grpc.status.UNAUTHENTICATED);
    const m = await scrape(router.metricsUrl);
    assert.equal(sum(m, 'tandem:router_workers', { role: 'decode' }), 1, 'only the real decode worker');

    // a worker started without the secret is refused, and says so.
    const stranger = await spawnTandem('stranger', ['worker', '--role', 'decode', '--model', model,
      '--listen', '127.0.0.1:0', '--router', router.internalAddress, '--threads', '1'],
    /cannot register with the router at \S+ \(this is an internal port/, 30000, { env: { TANDEM_CLUSTER_SECRET: '' } });
    stranger.kill('SIGKILL');
    await stranger.exited;
  } finally {
    await cluster.stop();
  }
});
