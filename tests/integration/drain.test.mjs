// Scale-down drains: a decode worker sent SIGTERM (what the planner's local
// connector does; the pod's preStop POSTs /drain to the same effect) while
// streams run on it tells the router it drains. The router routes nothing
// new to it and leaves its streams to finish there (no migration); the
// worker leaves routing and exits once idle. Past its --drain-timeout the
// streams still there migrate to the other worker (the one migration path
// of a dead worker) and end with the tokens of an undisturbed run.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startCluster, inferenceClient, oracle, scrape, sum, waitFor } from './cluster.mjs';

const STREAMS = 16;
const MAX_TOKENS = 400;  // the context is 512: long enough to be running at the SIGTERM

const requests = [...Array(STREAMS)].map((_, i) => ({
  token_ids: { ids: oracle.cases[i % oracle.cases.length].prompt_ids },
  params: { temperature: 0, max_tokens: MAX_TOKENS, ignore_eos: true },
}));

let cluster;
let client;
const clusters = [];
after(async () => { client?.close(); await Promise.all(clusters.map((c) => c.stop())); });

async function start(decodeArgs) {
  client?.close();
  cluster = await startCluster({ prefill: 0, decode: 2, decodeArgs });
  clusters.push(cluster);
  client = inferenceClient(cluster.router);
}

async function migrations() {
  return sum(await scrape(cluster.router.metricsUrl), 'tandem:router_migrations_total');
}

async function decodeWorkers(state) {
  return sum(await scrape(cluster.router.metricsUrl), 'tandem:router_workers', { role: 'decode', state });
}

// runs `requests` once undisturbed, then again with SIGTERM to the first
// decode worker once every stream has started (then `onSignal()`); checks
// every stream got the undisturbed tokens.
async function drainWhileStreaming(onSignal = () => {}) {
  const undisturbed = await Promise.all(requests.map((r) => client.generate(r)));
  undisturbed.forEach((r) => assert.equal(r.ids.length, MAX_TOKENS));
  const victim = cluster.decode[0];
  const tokens = new Array(STREAMS).fill(0);
  let signalledAt = null;
  const results = await Promise.allSettled(requests.map((r, i) => client.generate(r, (m) => {
    tokens[i] += m.token_ids.length;
    if (signalledAt === null && tokens.every((n) => n >= 3)) {
      signalledAt = [...tokens];
      victim.kill('SIGTERM');
      onSignal();
    }
  })));
  assert.ok(signalledAt !== null, 'the decode worker was sent SIGTERM');
  const failed = results.map((r, i) => [r, i]).filter(([r]) => r.status === 'rejected');
  assert.equal(failed.length, 0, `failed streams: ${failed.map(([r, i]) => `${i}: ${r.reason?.message}`).join('; ')}`);
  results.forEach((r, i) => {
    assert.equal(r.value.finish, 'length', `stream ${i}`);
    assert.deepEqual(r.value.ids, undisturbed[i].ids, `stream ${i}: tokens differ from the undisturbed run`);
  });
  return { victim, signalledAt };
}

test('a drained D finishes its streams in place: no migration, new requests go elsewhere, it exits once idle', async () => {
  await start(['--drain-timeout', '60']);
  const before = await migrations();
  const left = cluster.decode[0].waitForLine(/tandem worker: leaving routing \(idle\)/, 90000);
  left.catch(() => {});  // checked below
  // while it drains: new requests go to the other worker and complete.
  let during = null;
  const { victim, signalledAt } = await drainWhileStreaming(() => {
    during = Promise.all(requests.slice(0, 4).map((r) => client.generate({ ...r, params: { ...r.params, max_tokens: 8 } })));
  });
  (await during).forEach((r, i) => assert.equal(r.ids.length, 8, `request ${i} sent during the drain`));
  assert.equal(await migrations() - before, 0, 'no stream migrated');
  await left;
  assert.equal((await victim.exited).code, 0, 'the drained worker exits 0');
  // it left the router's pool, which counted it as draining, not healthy.
  await waitFor(async () => await decodeWorkers('healthy') === 1 && await decodeWorkers('draining') === 0 &&
    await decodeWorkers('unhealthy') === 0, 20000, 'the drained worker gone from the router');
  console.log(`tokens per stream at the SIGTERM: ${signalledAt.join(',')}`);
});

test('past --drain-timeout the streams left migrate and finish elsewhere with the same tokens', async () => {
  // a deadline of 0: the first drain check finds the streams still running
  // (each had only a few of its 400 tokens at the SIGTERM) and the worker
  // cuts them at once, so the migration does not race their end.
  await start(['--drain-timeout', '0']);
  const before = await migrations();
  const deadline = cluster.decode[0].waitForLine(/tandem worker: leaving routing \(drain deadline passed/, 90000);
  deadline.catch(() => {});  // checked below
  const { victim, signalledAt } = await drainWhileStreaming();
  const moved = await migrations() - before;
  assert.ok(moved > 0, 'the streams left at the deadline migrated');
  await deadline;
  assert.equal((await victim.exited).code, 0, 'the drained worker exits 0');
  console.log(`tokens per stream at the SIGTERM: ${signalledAt.join(',')}; migrations: ${moved}`);
});
