// The planner's live test: `tandem serve --autoscale` (the local connector)
// under a load that ramps up then down. Decode workers are added under
// load and drained after it while requests are still flowing; no request
// fails; the planner reports SLO attainment on its /metrics and in its
// decision log. Small on purpose (the embedded model, one request per
// decode slot: --max-num-seqs 2, a 1 s interval) so it stays well under a
// minute on a loaded 2-core box.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnTandem, scrape, sum, waitFor, sleep } from './cluster.mjs';

const READY = /^tandem serve: model '([^']+)' .* on http:\/\/([^:]+):(\d+) /;
const PLANNER = /tandem planner: policy load, .* planner metrics (http:\/\/\S+\/metrics)/;

// `clients` loops of completions until `stop()`; every outcome counted.
function load(url, clients, outcome, maxTokens) {
  let running = true;
  const loops = [];
  for (let i = 0; i < clients; ++i) {
    loops.push((async () => {
      while (running) {
        try {
          const r = await fetch(`${url}/v1/completions`, {
            method: 'POST', headers: { 'Content-Type': 'application/json' },
            body: JSON.stringify({ model: 'stories260K', prompt: `Once upon a time ${i}`, max_tokens: maxTokens,
              ignore_eos: true, temperature: 0 }),
          });
          const body = await r.json();
          if (r.status === 200 && body.choices?.[0]?.text?.length > 0 && body.usage?.completion_tokens === maxTokens) {
            outcome.ok += 1;
          } else {
            outcome.failed.push(`${r.status} ${JSON.stringify(body).slice(0, 200)}`);
          }
        } catch (e) {
          outcome.failed.push(String(e));
        }
      }
    })());
  }
  return { stop: async () => { running = false; await Promise.all(loops); } };
}

test('serve --autoscale adds decode workers under load and drains them after, losing no request', async () => {
  const serve = await spawnTandem('serve', ['serve', '--autoscale', '--http-port', '0', '--grpc-port', '0',
    '--prefill-workers', '0', '--decode-workers', '1', '--min-prefill', '0', '--max-prefill', '0',
    '--min-decode', '1', '--max-decode', '3', '--max-total', '3', '--threads', '3', '--max-num-seqs', '2',
    '--planner-interval', '1s', '--planner-metrics-port', '0', '--drain-timeout', '20'], READY, 60000);
  const url = `http://${serve.match[2]}:${serve.match[3]}`;
  const plannerMetrics = PLANNER.exec(serve.log())?.[1];
  assert.ok(plannerMetrics, `no planner line in:\n${serve.log().slice(-2000)}`);
  const healthyDecode = async () => sum(await scrape(`${url}/metrics`), 'tandem:router_workers',
    { role: 'decode', state: 'healthy' });
  const planner = async (name, labels = {}) => sum(await scrape(plannerMetrics), name, labels);
  const outcome = { ok: 0, failed: [] };
  try {
    await waitFor(async () => await healthyDecode() === 1, 30000, 'the first decode worker');

    // ramp up: 12 clients on one worker that runs 2 sequences at a time.
    const high = load(url, 12, outcome, 96);
    await waitFor(async () => await healthyDecode() >= 2, 40000, 'a second decode worker under load');
    const added = await planner('tandem:planner_scale_events_total', { role: 'decode', direction: 'up' });
    assert.ok(added >= 1, `scale-ups: ${added}`);
    await high.stop();

    // ramp down: 4 clients of longer requests keep both workers busy (2
    // sequences each, none waiting) while the newest one is drained.
    const low = load(url, 4, outcome, 256);
    await waitFor(async () => await healthyDecode() === 1 &&
      await planner('tandem:planner_desired_replicas', { role: 'decode' }) === 1, 40000, 'the scale-down to 1');
    await waitFor(() => /local: decode-\d+ drained and stopped/.test(serve.log()), 40000, 'a drained worker');
    await sleep(500);
    await low.stop();

    assert.deepEqual(outcome.failed, [], `${outcome.failed.length} failed of ${outcome.ok + outcome.failed.length}`);
    assert.ok(outcome.ok > 0);
    const removed = await planner('tandem:planner_scale_events_total', { role: 'decode', direction: 'down' });
    assert.ok(removed >= 1, `scale-downs: ${removed}`);
    // SLO attainment is reported: on /metrics and in every decision's log line.
    const ttft = await planner('tandem:planner_ttft_slo_attainment');
    const itl = await planner('tandem:planner_itl_slo_attainment');
    assert.ok(ttft >= 0 && ttft <= 1 && itl >= 0 && itl <= 1, `attainment ttft ${ttft} itl ${itl}`);
    const decisions = serve.log().split('\n').filter((l) => l.startsWith('tandem planner: {'))
      .map((l) => JSON.parse(l.slice('tandem planner: '.length)));
    const scaled = decisions.filter((d) => d.decision === 'scale');
    assert.ok(scaled.length >= 2, JSON.stringify(decisions.slice(-3)));
    for (const d of scaled) assert.equal(typeof d.observed.ttft_slo_attainment, 'number');
    const migrations = sum(await scrape(`${url}/metrics`), 'tandem:router_migrations_total');
    const minTtft = Math.min(...decisions.filter((d) => d.observed).map((d) => d.observed.ttft_slo_attainment));
    console.log(`autoscale: ${outcome.ok} requests, 0 failed; decode scale-ups ${added}, scale-downs ${removed}; ` +
      `requests migrated off drained workers ${migrations}; ` +
      `lowest interval TTFT attainment ${minTtft.toFixed(3)}, last ttft ${ttft.toFixed(3)} itl ${itl.toFixed(3)}`);
  } finally {
    const exit = await serve.stop('SIGINT');
    assert.equal(exit.code, 0, serve.log().slice(-2000));
  }
});
