// Starts real `tandem router` and `tandem worker` processes on loopback
// (free ports) and talks to them: the shared harness of the integration
// tests. TANDEM_BINARY names the binary, TANDEM_SOURCE_DIR the repository
// (for the vendored model, oracle and protos); run.sh sets both. The
// processes share a cluster secret (in their environment, as `tandem serve`
// hands it to its children), so every internal call is authenticated. Every
// process's output goes to logs/<test file>/<name>.log beside the tests
// (and to this process's stderr with TANDEM_TEST_VERBOSE=1).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';

export const binary = process.env.TANDEM_BINARY;
// `tandem worker` with injected faults (tests/integration/fault_worker_main.cc).
export const faultWorkerBinary = process.env.TANDEM_FAULT_WORKER_BINARY;
export const sourceDir = process.env.TANDEM_SOURCE_DIR;
if (!binary || !sourceDir) throw new Error('set TANDEM_BINARY and TANDEM_SOURCE_DIR');

// TANDEM_TEST_MODEL and TANDEM_TEST_ORACLE run the same tests on another
// model and its oracle (e.g. a synthetic mixture of experts and its
// models/moe oracle: tests/integration/moe_cluster.sh).
export const model = process.env.TANDEM_TEST_MODEL ??
  path.join(sourceDir, 'models/stories260K/gguf/stories260K.gguf');
export const oracle = JSON.parse(readFileSync(process.env.TANDEM_TEST_ORACLE ??
  path.join(sourceDir, 'models/stories260K/greedy_oracle.json'), 'utf8'));
// the model's KV bytes per token (f32 cache), for tests that size the
// cache in blocks: stories260K's 5 layers x 4 KV heads x 8 dims x K,V x 4 B.
export const kvBytesPerToken = Number(process.env.TANDEM_TEST_KV_BYTES_PER_TOKEN ?? 1280);

const logDir = path.join(path.dirname(new URL(import.meta.url).pathname), 'logs',
  path.basename(process.argv[1] ?? 'test', '.test.mjs'));
mkdirSync(logDir, { recursive: true });

// every process started here, killed (SIGKILL) if still alive when node exits.
const live = new Set();
process.on('exit', () => { for (const p of live) { try { p.kill('SIGKILL'); } catch { /* gone */ } } });

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// the cluster secret of the processes started here (TANDEM_CLUSTER_SECRET).
export const clusterSecret = randomBytes(32).toString('hex');

export async function waitFor(predicate, timeoutMs = 20000, what = 'condition') {
  const end = Date.now() + timeoutMs;
  for (;;) {
    try { if (await predicate()) return; } catch { /* not yet */ }
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(50);
  }
}

let logSerial = 0;

// spawns `bin ARGS` (`tandem` by default, with `env` added to this
// process's environment); resolves once a line of its stderr matches
// `ready` (with the match), rejects if it exits first or takes over
// `timeoutMs`.
export function spawnTandem(name, args, ready, timeoutMs = 30000, { bin = binary, env = {} } = {}) {
  const proc = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  live.add(proc);
  const file = createWriteStream(path.join(logDir, `${String(++logSerial).padStart(2, '0')}-${name}.log`));
  file.write(`$ ${path.basename(bin)} ${args.join(' ')}\n`);
  let log = '';
  const exited = new Promise((resolve) => proc.on('close', (code, signal) => {
    live.delete(proc);
    file.end(`-- exited: code ${code} signal ${signal}\n`);
    resolve({ code, signal });
    for (const fail of [...exitListeners]) fail(`exited (code ${code}, signal ${signal})`);
  }));
  const handle = {
    name, proc, pid: proc.pid, exited,
    log: () => log,
    kill(signal = 'SIGKILL') { if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal); },
    async stop(signal = 'SIGTERM') { handle.kill(signal); return exited; },
    // resolves with the match of the first line (from now on) matching `re`.
    // (rejects when the process exits first).
    waitForLine(re, ms = 30000) {
      return new Promise((resolve, reject) => {
        const fail = (why) => { off(); reject(new Error(`${name}: no line matching ${re}: ${why}:\n${log.slice(-3000)}`)); };
        const timer = setTimeout(() => fail(`not in ${ms} ms`), ms);
        const listener = (line) => { const m = re.exec(line); if (m) { off(); resolve(m); } };
        const off = () => { clearTimeout(timer); lineListeners.delete(listener); exitListeners.delete(fail); };
        lineListeners.add(listener);
        exitListeners.add(fail);
      });
    },
  };
  const lineListeners = new Set();
  const exitListeners = new Set();
  let partial = '';
  const onData = (chunk) => {
    const text = chunk.toString();
    log += text;
    file.write(text);
    if (process.env.TANDEM_TEST_VERBOSE) process.stderr.write(text.replace(/^(?=.)/gm, `{${name}} `));
    partial += text;
    const lines = partial.split('\n');
    partial = lines.pop();
    for (const line of lines) for (const l of [...lineListeners]) l(line);
  };
  proc.stdout.on('data', onData);
  proc.stderr.on('data', onData);
  return handle.waitForLine(ready, timeoutMs).then((m) => { handle.match = m; return handle; });
}

const LISTENING = /tandem router: listening on http:\/\/(\S+):(\d+) and grpc (\S+):(\d+), internal (\S+):(\d+)/;
const clusterEnv = { TANDEM_CLUSTER_SECRET: clusterSecret };

// `tandem router` on free ports (or the given ones, to restart it where it
// was); resolves once it listens (it serves once a decode worker joins).
// Workers register on its internal port.
export async function startRouter({ httpPort = 0, grpcPort = 0, internalPort = 0, args = [] } = {}) {
  const r = await spawnTandem('router', ['router', '--host', '127.0.0.1', '--http-port', String(httpPort),
    '--grpc-port', String(grpcPort), '--internal-port', String(internalPort), '--model', model, ...args],
  LISTENING, 30000, { env: clusterEnv });
  r.httpPort = Number(r.match[2]);
  r.grpcPort = Number(r.match[4]);
  r.internalPort = Number(r.match[6]);
  r.url = `http://127.0.0.1:${r.httpPort}`;
  r.grpcAddress = `127.0.0.1:${r.grpcPort}`;
  r.internalAddress = `127.0.0.1:${r.internalPort}`;
  r.metricsUrl = `${r.url}/metrics`;
  return r;
}

const SERVING = /tandem worker: (\S+) (\S+) serving grpc (\S+), metrics (http:\/\/\S+\/metrics)/;

// `tandem worker --role ROLE` registering with `router`. `faults` (flags of
// tandem_fault_worker, e.g. ['--corrupt-kv-block', '0']) runs the worker
// with those faults injected instead.
// `listen`: its gRPC address (a free port by default; a restarted worker may
// take its predecessor's).
export async function startWorker(role, router, args = [], name = role, faults = [], listen = '127.0.0.1:0') {
  const workerArgs = ['worker', '--role', role, '--model', model, '--listen', listen,
    '--router', router.internalAddress, '--threads', '1', ...args];
  const w = faults.length > 0
    ? await spawnTandem(name, [...faults, ...workerArgs], SERVING, 30000, { bin: faultWorkerBinary, env: clusterEnv })
    : await spawnTandem(name, workerArgs, SERVING, 30000, { env: clusterEnv });
  w.role = role;
  w.id = w.match[2];
  w.address = w.match[3];
  w.metricsUrl = w.match[4];
  return w;
}

// router + P prefill + D decode workers; `routerArgs`, `prefillArgs`,
// `decodeArgs` are extra flags. Resolves once the router's /metrics counts
// every worker healthy and /health is 200.
// `prefillFaults`: tandem_fault_worker flags for the prefill workers.
export async function startCluster({ prefill = 1, decode = 2, routerArgs = [], prefillArgs = [], decodeArgs = [], prefillFaults = [] } = {}) {
  const router = await startRouter({ args: routerArgs });
  const cluster = { router, prefill: [], decode: [] };
  try {
    cluster.prefill = await Promise.all([...Array(prefill)].map((_, i) => startWorker('prefill', router, prefillArgs, `prefill-${i}`, prefillFaults)));
    cluster.decode = await Promise.all([...Array(decode)].map((_, i) => startWorker('decode', router, decodeArgs, `decode-${i}`)));
    await waitForHealthy(router, { prefill, decode });
  } catch (e) {
    await stopAll(cluster);
    throw e;
  }
  cluster.stop = () => stopAll(cluster);
  return cluster;
}

async function stopAll(cluster) {
  const procs = [cluster.router, ...cluster.prefill, ...cluster.decode].filter(Boolean);
  procs.forEach((p) => p.kill('SIGKILL'));
  await Promise.all(procs.map((p) => p.exited));
}

// waits until the router's /metrics shows `prefill` healthy prefill and
// `decode` healthy decode workers, and its /health is 200.
export async function waitForHealthy(router, { prefill, decode }, timeoutMs = 30000) {
  await waitFor(async () => {
    const m = await scrape(router.metricsUrl);
    const health = await fetch(`${router.url}/health`);
    return health.status === 200 &&
      sum(m, 'tandem:router_workers', { role: 'prefill', state: 'healthy' }) === prefill &&
      sum(m, 'tandem:router_workers', { role: 'decode', state: 'healthy' }) === decode;
  }, timeoutMs, `${prefill} prefill + ${decode} decode healthy workers on the router`);
}

// the Prometheus text at `url` as [{name, labels, value}].
export async function scrape(url) {
  const res = await fetch(url);
  if (res.status !== 200) throw new Error(`GET ${url}: ${res.status}`);
  const series = [];
  for (const line of (await res.text()).split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([^{\s]+)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels = {};
    for (const [, k, v] of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[k] = v;
    series.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return series;
}

// the sum of the series named `name` whose labels include `labels`.
export function sum(series, name, labels = {}) {
  return series.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((acc, s) => acc + s.value, 0);
}

// sum() over the /metrics of several processes (those still alive).
export async function sumOver(procs, name, labels = {}) {
  let total = 0;
  for (const p of procs) {
    if (p.proc.exitCode !== null || p.proc.signalCode !== null) continue;
    total += sum(await scrape(p.metricsUrl), name, labels);
  }
  return total;
}

const tandemProto = grpc.loadPackageDefinition(protoLoader.loadSync('tandem/v1/inference.proto', {
  includeDirs: [path.join(sourceDir, 'proto')], keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true,
})).tandem.v1;

// a tandem.v1.Inference client; generate() resolves with the token ids,
// the finish reason and the messages; onMessage sees each as it comes.
export function inferenceClient(router) {
  const client = new tandemProto.Inference(router.grpcAddress, grpc.credentials.createInsecure());
  return {
    close: () => client.close(),
    generate(req, onMessage = () => {}) {
      return new Promise((resolve, reject) => {
        const msgs = [];
        const call = client.generate(req);
        call.on('data', (m) => { msgs.push(m); onMessage(m, msgs); });
        call.on('error', reject);
        call.on('end', () => resolve({
          ids: msgs.flatMap((m) => m.token_ids),
          finish: msgs.at(-1)?.finish_reason,
          text: msgs.map((m) => m.text).join(''),
          msgs,
        }));
      });
    },
  };
}

// greedy request for an oracle case, as the oracle was made.
export const oracleRequest = (c, extra = {}) => ({
  token_ids: { ids: c.prompt_ids }, params: { temperature: 0, max_tokens: oracle.max_tokens, ...extra },
});

// pids of the live processes whose parent is `pid`.
export function childrenOf(pid) {
  const out = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === pid && fields[0] !== 'Z') out.push(Number(entry));
    } catch { /* gone */ }
  }
  return out;
}

export function cmdline(pid) {
  try { return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' '); } catch { return ''; }
}

export function alive(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch { return false; }
}
