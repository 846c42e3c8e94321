// Starts the real `tandem serve` binary on free ports and stops it; shared by
// the end-to-end tests. TANDEM_BINARY names the binary (the test runner sets
// it), TANDEM_SOURCE_DIR the repository (for the vendored model and oracle).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

export const binary = process.env.TANDEM_BINARY;
export const sourceDir = process.env.TANDEM_SOURCE_DIR;
if (!binary || !sourceDir) throw new Error('set TANDEM_BINARY and TANDEM_SOURCE_DIR');

export const oracle = JSON.parse(
  readFileSync(path.join(sourceDir, 'models/stories260K/greedy_oracle.json'), 'utf8'));

// starts `tandem serve` with `args`; resolves once it prints its addresses.
export function startServer(args = [], env = {}) {
  const proc = spawn(binary, ['serve', '--http-port', '0', '--grpc-port', '0', '--threads', '1', ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`tandem serve did not start:\n${log}`)), 30000);
    proc.stderr.on('data', (chunk) => {
      log += chunk;
      // serve's own ready line: the router it starts prints one of the same
      // shape ("[router] tandem router: ...") and, before it serves, a
      // "listening on http://... and grpc ..." line.
      const m = /^tandem serve: model .*on http:\/\/([^:]+):(\d+) .*and grpc [^ ]+:(\d+)/m.exec(log);
      if (m && !proc.started) {
        proc.started = true;
        clearTimeout(timer);
        const server = {
          proc,
          host: m[1],
          httpPort: Number(m[2]),
          grpcPort: Number(m[3]),
          url: `http://${m[1]}:${m[2]}`,
          log: () => log,
          exited: new Promise((r) => proc.on('exit', (code, signal) => r({ code, signal }))),
          async stop() {
            if (proc.exitCode !== null) return;
            proc.kill('SIGTERM');
            await server.exited;
          },
        };
        resolve(server);
      }
    });
    proc.on('exit', (code) => {
      if (!proc.started) {
        clearTimeout(timer);
        reject(new Error(`tandem serve exited with ${code}:\n${log}`));
      }
    });
  });
}

// GET/POST with the raw fetch API: for status codes and error bodies.
export async function request(server, method, route, body, headers = {}) {
  const res = await fetch(server.url + route, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, headers: res.headers, text, json };
}

// a metric's value in the Prometheus text of GET /metrics (labels as written).
export async function metric(server, name) {
  const res = await fetch(server.url + '/metrics');
  const text = await res.text();
  const line = text.split('\n').find((l) => l.startsWith(name + ' ') || l.startsWith(name + '{'));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

export async function waitFor(predicate, timeoutMs = 10000) {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await predicate()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}
