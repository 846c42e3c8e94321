// The planner's live tests: `tandem serve --autoscale` (the local
// connector) under a load that ramps up then down (policy load), and under
// a flash crowd (policy sla: five times the clients within 10 s). Decode
// workers are added under load and drained after it while requests are
// still flowing; no request fails; the planner reports SLO attainment on
// its /metrics and in its decision log; after the crowd, the TTFT is back
// within the SLO within a cold start and two intervals. Small on purpose
// (the embedded model, --max-num-seqs 2, a 1 s interval) so each stays well
// under a minute on a loaded 2-core box.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnTandem, scrape, sum, waitFor, sleep } from './cluster.mjs';

const READY = /^tandem serve: model '([^']+)' .* on http:\/\/([^:]+):(\d+) /;
const PLANNER = /tandem planner: policy (?:load|sla), .* planner metrics (http:\/\/\S+\/metrics)/;

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

// one streaming completion: its TTFT (to the first token's chunk) and
// whether it ended with all its tokens.
async function streamOnce(url, i, maxTokens) {
  const start = performance.now();
  let ttft = null;
  let tokens = 0;
  const res = await fetch(`${url}/v1/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: 'stories260K', prompt: `Once upon a time ${i}`, max_tokens: maxTokens,
      ignore_eos: true, temperature: 0, stream: true, stream_options: { include_usage: true } }),
  });
  if (res.status !== 200) return { start, ttft, ok: false, why: `${res.status} ${(await res.text()).slice(0, 200)}` };
  const decoder = new TextDecoder();
  let pending = '';
  for await (const chunk of res.body) {
    // whole events only: the last piece may be the start of the next.
    const events = (pending + decoder.decode(chunk, { stream: true })).split('\n\n');
    pending = events.pop();
    for (const event of events) {
      const data = event.replace(/^data: /, '');
      if (data === '[DONE]') continue;
      const msg = JSON.parse(data);
      if (msg.error) return { start, ttft, ok: false, why: JSON.stringify(msg.error) };
      if ((msg.choices?.[0]?.text ?? '').length > 0 && ttft === null) ttft = performance.now() - start;
      if (msg.usage) tokens = msg.usage.completion_tokens;
    }
  }
  return { start, ttft, ok: tokens === maxTokens, why: `${tokens} tokens of ${maxTokens}` };
}

test('serve --autoscale (sla) serves a flash crowd (x5 within 10 s) losing none, TTFT back within a cold start and two intervals', async () => {
  // the workers' profile, measured here as they run (--max-num-seqs 2; a
  // fraction of a second for the embedded model).
  const profilePath = path.join(mkdtempSync(path.join(os.tmpdir(), 'tandem-flash-')), 'profile.json');
  const profiler = await spawnTandem('profile', ['planner', 'profile', '--out', profilePath, '--max-num-seqs', '2',
    '--batches', '1,2', '--contexts', '32,128', '--prompt-lengths', '8,32,128', '--threads', '1'], /^wrote /, 60000);
  assert.equal((await profiler.exited).code, 0, profiler.log());
  assert.equal(JSON.parse(readFileSync(profilePath, 'utf8')).max_batch, 2);
  const INTERVAL_MS = 1000, TTFT_SLO_MS = 500, MAX_TOKENS = 400;
  const serve = await spawnTandem('serve-flash', ['serve', '--autoscale', '--http-port', '0', '--grpc-port', '0',
    '--prefill-workers', '0', '--decode-workers', '1', '--min-prefill', '0', '--max-prefill', '0',
    '--min-decode', '1', '--max-decode', '6', '--max-total', '6', '--threads', '6', '--max-num-seqs', '2',
    '--planner-policy', 'sla', '--planner-profile', profilePath, '--planner-ttft-slo-ms', String(TTFT_SLO_MS),
    '--planner-interval', `${INTERVAL_MS}ms`, '--planner-metrics-port', '0', '--drain-timeout', '20'], READY, 60000);
  const url = `http://${serve.match[2]}:${serve.match[3]}`;
  const plannerMetrics = PLANNER.exec(serve.log())?.[1];
  assert.ok(plannerMetrics, `no planner line in:\n${serve.log().slice(-2000)}`);
  const healthyDecode = async () => sum(await scrape(`${url}/metrics`), 'tandem:router_workers',
    { role: 'decode', state: 'healthy' });
  const desiredDecode = async () => sum(await scrape(plannerMetrics), 'tandem:planner_desired_replicas', { role: 'decode' });
  const results = [];
  let running = true;
  const clients = [];
  const addClient = (i) => clients.push((async () => {
    while (running) results.push(await streamOnce(url, i, MAX_TOKENS));
  })());
  // the cluster as the planner sees it, every 100 ms: when it asked for
  // more decode workers and when they were there (the cold start).
  const timeline = [];
  const watch = (async () => {
    while (running) {
      try { timeline.push({ t: performance.now(), desired: await desiredDecode(), healthy: await healthyDecode() }); } catch { /* a scrape between */ }
      await sleep(100);
    }
  })();
  try {
    await waitFor(async () => await healthyDecode() === 1, 30000, 'the first decode worker');
    // 2 clients (one worker's two slots), then 8 more at once: five times
    // the load, queued four deep on the one worker.
    addClient(0);
    addClient(1);
    await sleep(3000);
    const crowdStart = performance.now();
    for (let i = 2; i < 10; ++i) addClient(i);
    const crowdFull = performance.now();
    await waitFor(async () => await healthyDecode() >= 4, 40000, 'the decode workers for the crowd');
    await sleep(6000);
    running = false;
    await Promise.all([...clients, watch]);

    const failed = results.filter((r) => !r.ok);
    assert.deepEqual(failed.map((r) => r.why), [], `${failed.length} failed of ${results.length}`);
    // the cold start, as seen from here: from each rise of the planner's
    // desired count to the healthy count reaching it. The rise happened
    // after the sample before it, so that one starts the interval: on a fast
    // machine workers are healthy within one 100 ms sample of the rise.
    let coldStart = 0;
    let scaledUp = false;
    for (let k = 1; k < timeline.length; ++k) {
      if (timeline[k].desired <= timeline[k - 1].desired || timeline[k].t < crowdStart) continue;
      scaledUp = true;
      const there = timeline.slice(k).find((p) => p.healthy >= timeline[k].desired);
      if (there) coldStart = Math.max(coldStart, there.t - timeline[k - 1].t);
    }
    assert.ok(scaledUp, `the planner scaled decode up for the crowd: ${JSON.stringify(timeline)}`);
    // recovered: from then on, every second's requests meet the TTFT SLO (90%).
    const after = results.filter((r) => r.start >= crowdFull && r.ttft !== null);
    const bins = new Map();
    for (const r of after) {
      const b = Math.floor((r.start - crowdFull) / 1000);
      const bin = bins.get(b) ?? { n: 0, met: 0 };
      bin.n += 1;
      bin.met += r.ttft <= TTFT_SLO_MS ? 1 : 0;
      bins.set(b, bin);
    }
    const keys = [...bins.keys()].sort((a, b) => a - b);
    let recoveredAt = 0;
    for (const b of keys) if (bins.get(b).met < 0.9 * bins.get(b).n) recoveredAt = b + 1;
    assert.ok(recoveredAt < keys[keys.length - 1], `not recovered by the end: ${JSON.stringify([...bins])}`);
    const worstDuring = Math.max(...results.filter((r) => r.start >= crowdStart && r.ttft !== null).map((r) => r.ttft));
    const limit = coldStart + 2 * INTERVAL_MS;
    console.log(`flash crowd: ${results.length} requests, 0 failed; decode ${timeline[0]?.healthy} -> ` +
      `${Math.max(...timeline.map((p) => p.healthy))} workers; cold start ${coldStart.toFixed(0)} ms; worst TTFT ` +
      `${worstDuring.toFixed(0)} ms; TTFT within ${TTFT_SLO_MS} ms again ${recoveredAt * 1000} ms after the crowd was ` +
      `full (limit: cold start + 2 intervals = ${limit.toFixed(0)} ms)`);
    assert.ok(recoveredAt * 1000 <= limit, `recovered ${recoveredAt * 1000} ms after the crowd, limit ${limit} ms`);
  } finally {
    running = false;
    const exit = await serve.stop('SIGINT');
    assert.equal(exit.code, 0, serve.log().slice(-2000));
  }
});
