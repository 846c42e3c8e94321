// Soak: CLIENTS concurrent streaming clients against router + P + D on
// loopback for DURATION seconds; a share of the requests (DISCONNECT) is cut
// by its client at a random moment of its stream. Reports errors beyond the
// injected disconnects, each process's RSS and open fds over time, and
// whether every KV block came back once the load stopped. Run through
// bench/soak.sh (it sets the environment the cluster harness needs).
//
//   node soak.mjs CLIENTS DURATION_S DISCONNECT OUT.json
import { writeFileSync, readFileSync, readdirSync } from 'node:fs';
import { startCluster, scrape, sum, waitFor, sleep } from './cluster.mjs';

const [clients, durationS, disconnect, out] = [Number(process.argv[2] ?? 1000),
  Number(process.argv[3] ?? 600), Number(process.argv[4] ?? 0.1), process.argv[5] ?? 'soak.json'];
const sampleEveryS = 10;

const cluster = await startCluster({
  prefill: 1, decode: 1,
  // admit every client: the soak measures leaks, not shedding.
  routerArgs: ['--max-pending-requests', String(clients * 2), '--max-admitted-seqs', String(clients * 2),
    '--max-prepare-queue', String(clients * 2)],
});
const procs = [cluster.router, ...cluster.prefill, ...cluster.decode];
const model = (await (await fetch(`${cluster.router.url}/v1/models`)).json()).data[0].id;

function procStats(p) {
  const status = readFileSync(`/proc/${p.pid}/status`, 'utf8');
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)[1]);
  return { rss_mib: rssKb / 1024, fds: readdirSync(`/proc/${p.pid}/fd`).length };
}

const counts = { started: 0, completed: 0, injected_disconnects: 0, errors: 0, tokens: 0 };
const errorSamples = [];
function fail(what) {
  counts.errors++;
  if (errorSamples.length < 20) errorSamples.push(what);
  return sleep(100);  // no hot loop on a failing server
}

// one streaming completion; cut by the client at a random chunk with
// probability `disconnect`.
async function oneRequest(i) {
  const cut = Math.random() < disconnect;
  const cutAfterChunks = 1 + Math.floor(Math.random() * 20);
  const ctrl = new AbortController();
  // a third of the prompts are long enough (> 64 tokens) to be prefilled on P.
  const prompt = `Once upon a time, soak client ${i} ` +
    (i % 3 === 0 ? 'there was a little girl who liked to play in the park with her dog. '.repeat(8) : '');
  counts.started++;
  let res;
  try {
    res = await fetch(`${cluster.router.url}/v1/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, signal: ctrl.signal,
      body: JSON.stringify({ model, prompt, max_tokens: 32,
        temperature: 0.8, stream: true }),
    });
  } catch (e) { await fail(`fetch: ${e.message}`); return; }
  if (res.status !== 200) { await fail(`HTTP ${res.status}: ${(await res.text()).slice(0, 200)}`); return; }
  const decoder = new TextDecoder();
  let text = '';
  let chunks = 0;
  try {
    for await (const part of res.body) {
      text += decoder.decode(part, { stream: true });
      chunks++;
      if (cut && chunks >= cutAfterChunks) break;
    }
    if (cut && chunks >= cutAfterChunks) {
      ctrl.abort();
      counts.injected_disconnects++;
      return;
    }
  } catch (e) {
    if (cut && chunks >= cutAfterChunks) { counts.injected_disconnects++; return; }
    await fail(`stream: ${e.message}`);
    return;
  }
  if (!text.includes('data: [DONE]')) { await fail(`stream ended without [DONE]: ${text.slice(-200)}`); return; }
  if (text.includes('"error"')) { await fail(`error in stream: ${text.slice(-300)}`); return; }
  counts.completed++;
  counts.tokens += (text.match(/"text"/g) ?? []).length;
}

const start = Date.now();
const deadline = start + durationS * 1000;
const samples = [];
async function sampleOnce() {
  const row = { t_s: (Date.now() - start) / 1000, ...counts, procs: {} };
  for (const p of procs) row.procs[p.name] = procStats(p);
  samples.push(row);
  process.stderr.write(`soak: t=${row.t_s.toFixed(0)}s completed ${counts.completed} ` +
    `disconnects ${counts.injected_disconnects} errors ${counts.errors} ` +
    Object.entries(row.procs).map(([n, s]) => `${n} ${s.rss_mib.toFixed(0)}MiB/${s.fds}fd`).join(' ') + '\n');
}
const sampler = setInterval(sampleOnce, sampleEveryS * 1000);
await sampleOnce();

await Promise.all([...Array(clients)].map(async (_, c) => {
  for (let k = 0; Date.now() < deadline; k++) await oneRequest(c * 1000000 + k);
}));
clearInterval(sampler);
await sampleOnce();

// every KV block back once idle: no sequence holds a block on any worker.
const kvUsage = async () => {
  let used = 0;
  for (const w of [...cluster.prefill, ...cluster.decode]) used += sum(await scrape(w.metricsUrl), 'tandem:kv_cache_usage_perc');
  return used;
};
let kvReturned = true;
try { await waitFor(async () => (await kvUsage()) === 0, 60000, 'KV usage 0'); } catch { kvReturned = false; }
await sleep(1000);
await sampleOnce();

// warm-up: the first fifth of the run (at least one sample in).
const warm = samples.find((s) => s.t_s >= durationS / 5) ?? samples[1];
const last = samples[samples.length - 1];
const growth = {};
for (const name of Object.keys(last.procs)) {
  growth[name] = { rss_mib_after_warmup: warm.procs[name].rss_mib, rss_mib_end: last.procs[name].rss_mib,
    fds_after_warmup: warm.procs[name].fds, fds_end: last.procs[name].fds };
}
const result = { clients, duration_s: durationS, disconnect, counts, kv_blocks_returned: kvReturned,
  kv_usage_end: await kvUsage(), growth, error_samples: errorSamples, samples };
writeFileSync(out, JSON.stringify(result, null, 1));
process.stderr.write(`soak: ${JSON.stringify({ counts, kv_blocks_returned: kvReturned, growth })}\n`);
await cluster.stop();
process.exit(counts.errors === 0 && kvReturned ? 0 : 1);
