// Faults during load (issue 13 part 4): router + 2 prefill + 2 decode
// workers on loopback under a closed-loop greedy load; one fault at a time —
// SIGKILL and SIGSTOP of each process kind, a slow decode worker (SIGSTOP /
// SIGCONT duty cycle), corrupted KV records on the disk tier, a full disk,
// a router restart. Every stream is compared token for token with an undisturbed run
// of the same request. Per fault: requests, lost (the client got an error),
// changed (tokens differ), recovery (from the fault until a request started
// after it completes), heal (until the router counts the full cluster healthy
// again). Run through bench/faults.sh.
//
//   node faults.mjs CLIENTS FAULT_S OUT.json [only-this-fault]
import { execFileSync } from 'node:child_process';
import { writeFileSync, readdirSync, openSync, writeSync, fstatSync, closeSync, mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  startRouter, startWorker, waitForHealthy, inferenceClient, oracle, scrape, sum, sleep,
} from './cluster.mjs';

const [clients, faultS, out, only] = [Number(process.argv[2] ?? 16), Number(process.argv[3] ?? 10),
  process.argv[4] ?? 'faults.json', process.argv[5]];
const MAX_TOKENS = 160;

const diskDir = mkdtempSync(path.join(os.tmpdir(), 'tandem-faults-'));
// every prompt goes to a prefill worker; prefill workers keep a small G1
// that spills to a disk tier, so corrupted records are read back under load.
const routerArgs = ['--max-local-prefill-tokens', '0'];
const args = (role, i) => (role === 'decode' ? [] : ['--kv-budget', '2M', '--kv-disk-path',
  path.join(diskDir, `p${i}`), '--kv-disk-bytes', '64M', '--kv-disk-min-hits', '1']);

let router = await startRouter({ args: routerArgs });
const workers = { prefill: [], decode: [] };
const start = async (role, i) => startWorker(role, router, args(role, i), `${role}-${i}`);
workers.prefill = await Promise.all([0, 1].map((i) => start('prefill', i)));
workers.decode = await Promise.all([0, 1].map((i) => start('decode', i)));
await waitForHealthy(router, { prefill: 2, decode: 2 });
let client = inferenceClient(router);

// the requests of the load (VARIANTS distinct prompts of ~100 tokens, more
// than the prefill workers' G1 holds) and their undisturbed outputs.
const VARIANTS = 8 * clients;
const cases = oracle.cases;
const requests = [...Array(VARIANTS)].map((_, v) => ({
  token_ids: { ids: [1, ...[...Array(12)].flatMap((_, k) => cases[(v * 7 + k * (1 + (v % 5))) % cases.length].prompt_ids.slice(1))] },
  params: { temperature: 0, max_tokens: MAX_TOKENS, ignore_eos: true },
}));
const reference = [];
for (const r of requests) reference.push((await client.generate(r)).ids.join(','));

// closed loop: each client sends its request again and again until stopped.
function runLoad() {
  const stats = { requests: 0, failed_attempts: 0, lost: 0, changed: 0, errors: {}, completions: [] };
  let stopping = false;
  const loops = [...Array(clients)].map(async (_, c) => {
    for (let k = 0; !stopping; k++) {
      const i = (c + k * clients) % VARIANTS;
      const r = requests[i];
      const startedAt = Date.now();
      stats.requests++;
      for (let attempt = 0; ; attempt++) {
        try {
          const res = await client.generate(r);
          if (res.ids.join(',') !== reference[i]) stats.changed++;
          stats.completions.push({ startedAt, endedAt: Date.now() });
          break;
        } catch (e) {
          stats.failed_attempts++;
          stats.errors[e.message] = (stats.errors[e.message] ?? 0) + 1;
          // UNAVAILABLE: retried as the openai clients do (2 retries, 0.5 s
          // then 1 s, less up to 25% jitter).
          if (e.code === 14 && attempt < 2) { await sleep(500 * 2 ** attempt * (1 - 0.25 * Math.random())); continue; }
          stats.lost++;
          await sleep(200);
          break;
        }
      }
    }
  });
  return { stats, stop: async () => { stopping = true; await Promise.all(loops); } };
}

const healthy = () => waitForHealthy(router, { prefill: workers.prefill.length, decode: workers.decode.length }, 120000);

// each fault: inject() at t0 (returns when the fault is in place), then
// undo() after FAULT_S (restart / continue); the load runs throughout.
const faults = {
  'sigkill-decode': {
    inject: () => workers.decode[0].kill('SIGKILL'),
    undo: async () => { await workers.decode[0].exited; workers.decode[0] = await start('decode', 0); },
  },
  'sigkill-prefill': {
    inject: () => workers.prefill[0].kill('SIGKILL'),
    undo: async () => { await workers.prefill[0].exited; workers.prefill[0] = await start('prefill', 0); },
  },
  'sigstop-decode': {
    inject: () => workers.decode[0].kill('SIGSTOP'),
    undo: () => workers.decode[0].kill('SIGCONT'),
  },
  'sigstop-prefill': {
    inject: () => workers.prefill[0].kill('SIGSTOP'),
    undo: () => workers.prefill[0].kill('SIGCONT'),
  },
  'slow-decode': {  // runs 1 ms in 4 (SIGSTOP / SIGCONT duty cycle)
    inject: () => {
      const w = workers.decode[0];
      let stopped = false;
      faults['slow-decode'].timer = setInterval(() => { stopped = !stopped; w.kill(stopped ? 'SIGSTOP' : 'SIGCONT'); }, 3);
    },
    undo: () => { clearInterval(faults['slow-decode'].timer); workers.decode[0].kill('SIGCONT'); },
  },
  'corrupt-kv-disk': {  // every 500 ms, garbage over the payloads of the disk tiers' records
    inject: () => {
      faults['corrupt-kv-disk'].timer = setInterval(() => {
        for (const d of readdirSync(diskDir)) {
          const file = path.join(diskDir, d, 'kv-g3.blocks');
          let fd;
          try { fd = openSync(file, 'r+'); } catch { continue; }
          const size = fstatSync(fd).size;
          const junk = Buffer.alloc(512, 0xa5);
          for (let k = 0; k < 64; k++) writeSync(fd, junk, 0, junk.length, 4096 + Math.floor(Math.random() * Math.max(1, size - 8192)));
          closeSync(fd);
        }
      }, 500);
    },
    undo: () => clearInterval(faults['corrupt-kv-disk'].timer),
  },
  // a full disk: P0 restarted with its disk tier on a 1 MiB tmpfs (root
  // only). The file is preallocated, so a full disk shows at start: the tier
  // disables itself and P0 serves without it.
  'disk-full': {
    inject: async () => {
      const dir = path.join(diskDir, 'full');
      mkdirSync(dir, { recursive: true });
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dir]);
      workers.prefill[0].kill('SIGKILL');
      await workers.prefill[0].exited;
      workers.prefill[0] = await startWorker('prefill', router, ['--kv-budget', '2M', '--kv-disk-path', dir,
        '--kv-disk-bytes', '64M'], 'prefill-0-full-disk');
    },
    undo: async () => {
      workers.prefill[0].kill('SIGKILL');
      await workers.prefill[0].exited;
      execFileSync('umount', [path.join(diskDir, 'full')]);
      workers.prefill[0] = await start('prefill', 0);
    },
  },
  'router-restart': {
    inject: async () => {
      client.close();
      router.kill('SIGKILL');
      await router.exited;
      const ports = { httpPort: router.httpPort, grpcPort: router.grpcPort, internalPort: router.internalPort };
      router = await startRouter({ ...ports, args: routerArgs });
      client = inferenceClient(router);
    },
    undo: () => {},
  },
};

const metric = async (name, procs) => {
  let total = 0;
  for (const p of procs) total += sum(await scrape(p.metricsUrl), name);
  return total;
};

const results = {};
for (const [name, fault] of Object.entries(faults)) {
  if (only && name !== only) continue;
  const before = {};
  for (const m of ['tandem:kv_tier_load_failures_total', 'tandem:kv_tier_onboards_total', 'tandem:kv_tier_offloads_total']) before[m] = await metric(m, workers.prefill);
  const load = runLoad();
  await sleep(2000);
  const t0 = Date.now();
  await fault.inject();
  await sleep(faultS * 1000);
  const t1 = Date.now();
  await fault.undo();
  await healthy();
  const healS = (Date.now() - t1) / 1000;
  await sleep(2000);
  await load.stop();
  const lat = (c) => (c.endedAt - c.startedAt) / 1000;
  const before0 = load.stats.completions.filter((c) => c.endedAt < t0).map(lat).sort((a, b) => a - b);
  const across = load.stats.completions.filter((c) => c.startedAt < t0 && c.endedAt > t0).map(lat);
  const firstAfter = load.stats.completions.filter((c) => c.startedAt >= t0).map((c) => c.endedAt).sort((a, b) => a - b)[0];
  results[name] = {
    requests: load.stats.requests, failed_attempts: load.stats.failed_attempts, lost: load.stats.lost, changed: load.stats.changed,
    recovery_s: firstAfter ? (firstAfter - t0) / 1000 : null, heal_s: healS,
    // how long the requests in flight at the fault took, against the median before it
    median_request_s: before0[Math.floor(before0.length / 2)] ?? null,
    slowest_across_fault_s: across.length ? Math.max(...across) : null,
    errors: load.stats.errors,
  };
  if (name === 'corrupt-kv-disk') {
    const delta = async (m) => await metric(m, workers.prefill) - before[m];
    results[name].disk_load_failures = await delta('tandem:kv_tier_load_failures_total');
    results[name].tier_onboards = await delta('tandem:kv_tier_onboards_total');
    results[name].tier_offloads = await delta('tandem:kv_tier_offloads_total');
  }
  process.stderr.write(`faults: ${name}: ${JSON.stringify(results[name])}\n`);
}

writeFileSync(out, JSON.stringify({ clients, fault_s: faultS, max_tokens: MAX_TOKENS, results }, null, 1));
client.close();
for (const p of [router, ...workers.prefill, ...workers.decode]) p.kill('SIGKILL');
await Promise.all([router, ...workers.prefill, ...workers.decode].map((p) => p.exited));
rmSync(diskDir, { recursive: true, force: true });
const bad = Object.values(results).some((r) => r.changed > 0);
process.exit(bad ? 1 : 0);
