// Large bodies must not stall small requests (issue 36): the latency of a
// small completion (~4 ms alone) while CLIENTS clients keep sending
// MB-sized prompts that cannot fit the context, against a real `tandem
// serve`. Each repeat measures the small request for SECONDS seconds, one
// request at a time, with the big senders running in worker threads (so
// their JSON and socket work does not delay this thread's clock); the
// figures of every repeat and their medians go to OUT.
// Run through bench/big_body_latency.sh.
//
//   node big_body_latency.mjs OUT.json [REPEATS=5] [SECONDS=10] [CLIENTS=4] [MB=3.9]
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { writeFileSync } from 'node:fs';

const MODEL = 'stories260K';

// a worker: POSTs the big body in a loop until told to stop.
async function bigSender({ url, mb }) {
  const unit = 'Once upon a time there was a little dog. ';
  const prompt = unit.repeat(Math.ceil((mb * 1e6) / unit.length)).slice(0, Math.round(mb * 1e6));
  const body = JSON.stringify({ model: MODEL, prompt, max_tokens: 1 });
  let stop = false;
  parentPort.on('message', (m) => { if (m === 'stop') stop = true; });
  const status = {};
  let sent = 0;
  while (!stop) {
    const t0 = performance.now();
    let code = 'error';
    try {
      const res = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      await res.arrayBuffer();
      code = res.status;
    } catch { /* counted as error */ }
    status[code] = (status[code] ?? 0) + 1;
    sent++;
    parentPort.postMessage({ kind: 'sent', ms: performance.now() - t0 });
  }
  parentPort.postMessage({ kind: 'done', sent, status });
}

if (!isMainThread) {
  await bigSender(workerData);
} else {
  const { startServer } = await import('./harness.mjs');
  const [out, repeats = '5', seconds = '10', clients = '4', mb = '3.9'] = process.argv.slice(2);
  const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
  const small = JSON.stringify({ model: MODEL, prompt: 'Once upon a time', max_tokens: 32, temperature: 0, ignore_eos: true });

  const server = await startServer();
  async function smallRequest() {
    const t0 = performance.now();
    const res = await fetch(`${server.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: small });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`small request: ${res.status}`);
    return performance.now() - t0;
  }
  // small requests one after another for `s` seconds: their latencies, sorted.
  async function measure(s) {
    const lat = [];
    const end = performance.now() + s * 1000;
    while (performance.now() < end) lat.push(await smallRequest());
    return lat.sort((a, b) => a - b);
  }
  const summary = (lat) => ({ n: lat.length, p50_ms: quantile(lat, 0.5), p99_ms: quantile(lat, 0.99), max_ms: lat[lat.length - 1] });

  for (let i = 0; i < 20; i++) await smallRequest();  // warm up
  const runs = [];
  for (let r = 0; r < Number(repeats); r++) {
    const idle = summary(await measure(Math.min(3, Number(seconds))));
    const workers = [];
    let bigSent = 0;
    const bigMs = [];
    for (let c = 0; c < Number(clients); c++) {
      const w = new Worker(new URL(import.meta.url), { workerData: { url: server.url, mb: Number(mb) } });
      w.on('message', (m) => { if (m.kind === 'sent') { bigSent++; bigMs.push(m.ms); } });
      workers.push(w);
    }
    // measure once every sender has a body in flight or answered.
    while (bigSent < Number(clients)) await new Promise((res) => setTimeout(res, 20));
    const loaded = summary(await measure(Number(seconds)));
    const finals = await Promise.all(workers.map((w) => new Promise((res) => {
      w.on('message', (m) => { if (m.kind === 'done') res(m); });
      w.postMessage('stop');
    })));
    await Promise.all(workers.map((w) => w.terminate()));
    const status = {};
    for (const f of finals) for (const [k, v] of Object.entries(f.status)) status[k] = (status[k] ?? 0) + v;
    const run = { idle, loaded, big: { sent: bigSent, status, median_ms: median(bigMs) } };
    process.stderr.write(`repeat ${r + 1}: ${JSON.stringify(run)}\n`);
    runs.push(run);
  }
  const alive = server.proc.exitCode === null;
  await server.stop();
  const result = {
    command: `big_body_latency ${repeats} repeats x ${seconds}s, ${clients} clients x ${mb} MB`,
    median_p99_ms: median(runs.map((r) => r.loaded.p99_ms)),
    median_p50_ms: median(runs.map((r) => r.loaded.p50_ms)),
    median_idle_p50_ms: median(runs.map((r) => r.idle.p50_ms)),
    server_alive: alive,
    runs,
  };
  writeFileSync(out, JSON.stringify(result, null, 1));
  process.stderr.write(`big_body_latency: p99 ${result.median_p99_ms.toFixed(1)} ms (median of ${runs.length}), p50 ${result.median_p50_ms.toFixed(1)} ms, idle p50 ${result.median_idle_p50_ms.toFixed(1)} ms\n`);
  process.exit(alive ? 0 : 1);
}
