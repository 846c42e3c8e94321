// A decode worker SIGKILLed while 20 streams run: the router migrates its
// requests (prompt + tokens so far) to the other D and every client stream
// ends with exactly the tokens of an undisturbed run.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startCluster, inferenceClient, oracle, scrape, sum } from './cluster.mjs';

const STREAMS = 20;
const MAX_TOKENS = 400;  // the context is 512; long enough to be killed mid-way

let cluster;
let client;
before(async () => {
  cluster = await startCluster({ prefill: 1, decode: 2 });
  client = inferenceClient(cluster.router);
});
after(async () => { client?.close(); await cluster?.stop(); });

const requests = [...Array(STREAMS)].map((_, i) => ({
  token_ids: { ids: oracle.cases[i % oracle.cases.length].prompt_ids },
  params: { temperature: 0, max_tokens: MAX_TOKENS, ignore_eos: true },
}));

test('SIGKILL of one D while 20 streams run: 20/20 complete with the undisturbed tokens', async () => {
  const undisturbed = await Promise.all(requests.map((r) => client.generate(r)));
  undisturbed.forEach((r) => assert.equal(r.ids.length, MAX_TOKENS));

  const migrationsBefore = sum(await scrape(cluster.router.metricsUrl), 'tandem:router_migrations_total');
  const tokens = new Array(STREAMS).fill(0);
  let killedAt = null;
  const victim = cluster.decode[0];
  const results = await Promise.allSettled(requests.map((r, i) => client.generate(r, (m) => {
    tokens[i] += m.token_ids.length;
    // every stream has started and none is near its end: kill one D.
    if (killedAt === null && tokens.every((n) => n >= 3)) {
      killedAt = [...tokens];
      victim.kill('SIGKILL');
    }
  })));
  assert.ok(killedAt !== null, 'a decode worker was killed');
  assert.ok(killedAt.some((n) => n < MAX_TOKENS), 'streams were still running at the kill');
  const failed = results.map((r, i) => [r, i]).filter(([r]) => r.status === 'rejected');
  assert.equal(failed.length, 0, `failed streams: ${failed.map(([r, i]) => `${i}: ${r.reason?.message}`).join('; ')}`);
  results.forEach((r, i) => {
    assert.equal(r.value.finish, 'length', `stream ${i}`);
    assert.deepEqual(r.value.ids, undisturbed[i].ids, `stream ${i}: tokens differ from the undisturbed run`);
  });
  assert.equal((await victim.exited).signal, 'SIGKILL');
  const migrations = sum(await scrape(cluster.router.metricsUrl), 'tandem:router_migrations_total') - migrationsBefore;
  assert.ok(migrations > 0, 'the router migrated requests');
  console.log(`tokens per stream at the kill: ${killedAt.join(',')}; migrations: ${migrations}`);
});
