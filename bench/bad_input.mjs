// Bad input in bulk (issue 13 part 4): the fuzz corpora of the public
// parsers replayed against a running `tandem serve` — raw HTTP requests
// (http_request) over TCP, OpenAI bodies (openai_request) to every
// generation endpoint. The server must never die, and every reply must be a
// well-formed HTTP response: 2xx, or an error status whose body is an OpenAI
// error object (a client that sent garbage before a request line may get a
// plain 400 and a closed connection, which is what HTTP/1.1 allows).
// Run through bench/bad_input.sh.
//
//   node bad_input.mjs OUT.json DIR...   (DIR: corpus directories; the
//   name of a DIR's last component says its kind)
import net from 'node:net';
import { readFileSync, readdirSync, writeFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { startServer } from './harness.mjs';

const [out, ...dirs] = process.argv.slice(2);
const server = await startServer(['--request-timeout', '2']);
const result = { http_request: { inputs: 0, answered: 0, closed_without_answer: 0, malformed_replies: 0 },
  openai_request: { requests: 0, ok: 0, errors: 0, malformed_replies: 0, status: {} }, server_alive: true, bad: [] };

function files(dir) {
  return readdirSync(dir).map((f) => path.join(dir, f)).filter((f) => statSync(f).isFile());
}

// sends `bytes`, then reads until the server closes or 3 s pass.
function rawExchange(bytes) {
  return new Promise((resolve) => {
    const socket = net.connect(server.httpPort, server.host);
    let reply = Buffer.alloc(0);
    const done = () => { socket.destroy(); resolve(reply); };
    socket.setTimeout(3000, done);
    socket.on('data', (d) => { reply = Buffer.concat([reply, d]); });
    socket.on('error', done);
    socket.on('close', done);
    socket.on('connect', () => { socket.write(bytes); socket.end(); });
  });
}

// every response in `reply` (keep-alive may hold several): a status line,
// headers, and for an error status a JSON body with error.message.
function wellFormed(reply) {
  const text = reply.toString('latin1');
  const m = /^HTTP\/1\.1 (\d{3}) [^\r\n]*\r\n/.exec(text);
  if (!m) return false;
  const status = Number(m[1]);
  if (status < 400) return true;
  const bodyAt = text.indexOf('\r\n\r\n');
  if (bodyAt < 0) return false;
  const body = text.slice(bodyAt + 4);
  if (body === '') return true;
  const jsonText = /transfer-encoding: chunked/i.test(text.slice(0, bodyAt))
    ? body.split('\r\n').filter((_, k) => k % 2 === 1).join('') : body;
  try {
    const j = JSON.parse(jsonText.slice(0, jsonText.lastIndexOf('}') + 1));
    return typeof j?.error?.message === 'string';
  } catch { return false; }
}

async function alive() {
  try { return (await fetch(`${server.url}/health`)).status === 200; } catch { return false; }
}

for (const dir of dirs) {
  const kind = path.basename(dir);
  for (const file of files(dir)) {
    const bytes = readFileSync(file);
    if (kind === 'http_request') {
      const r = result.http_request;
      r.inputs++;
      const reply = await rawExchange(bytes);
      if (reply.length === 0) r.closed_without_answer++;
      else if (wellFormed(reply)) r.answered++;
      else { r.malformed_replies++; result.bad.push({ file, reply: reply.toString('latin1').slice(0, 300) }); }
    } else if (kind === 'openai_request') {
      for (const route of ['/v1/completions', '/v1/chat/completions', '/v1/responses', '/tokenize']) {
        const r = result.openai_request;
        r.requests++;
        const res = await fetch(server.url + route, { method: 'POST', headers: { 'content-type': 'application/json' }, body: bytes });
        const text = await res.text();
        r.status[res.status] = (r.status[res.status] ?? 0) + 1;
        if (res.status < 400) { r.ok++; continue; }
        r.errors++;
        let okBody = false;
        try { okBody = typeof JSON.parse(text)?.error?.message === 'string'; } catch { /* not JSON */ }
        if (!okBody || res.status >= 500) { r.malformed_replies++; result.bad.push({ file, route, status: res.status, text: text.slice(0, 300) }); }
      }
    }
    if (!(await alive())) { result.server_alive = false; result.bad.push({ file, died: true }); break; }
  }
}
result.server_alive = result.server_alive && await alive() && server.proc.exitCode === null;
writeFileSync(out, JSON.stringify(result, null, 1));
process.stderr.write(`bad_input: ${JSON.stringify({ ...result, bad: result.bad.slice(0, 5) })}\n`);
await server.stop();
process.exit(result.server_alive && result.bad.length === 0 ? 0 : 1);
