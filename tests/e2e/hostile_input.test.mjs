// One request must never take the router down (issue 36): hostile inputs
// of every kind a stranger can send, over HTTP and gRPC, against the real
// `tandem serve`. Each gets a 4xx (gRPC: INVALID_ARGUMENT) whose message
// names the limit it ran into, the router process is the same one
// throughout (its pid never changes: no crash, no restart by the
// supervisor), and it still answers a normal request afterwards.
// (Grammars and JSON schemas as such are tests/integration/structured_output's.)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { readFileSync, readdirSync } from 'node:fs';
import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';
import path from 'node:path';
import { startServer, request, sourceDir } from './harness.mjs';

const MODEL = 'stories260K';
const MB = 1e6;
let server;
let routerPid;
let inference;

// the live router child of `tandem serve` (its command line names the
// subcommand), found by the parent pid in /proc/PID/stat; undefined when
// there is none (it died and was not restarted yet).
function routerOf(servePid) {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(ppid) !== servePid || state === 'Z') continue;
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0')[1] === 'router') return Number(entry);
    } catch { /* gone */ }
  }
  return undefined;
}

before(async () => {
  server = await startServer();
  routerPid = routerOf(server.proc.pid);
  assert.ok(routerPid, 'tandem serve has no router child');
  const tandem = grpc.loadPackageDefinition(protoLoader.loadSync('tandem/v1/inference.proto', {
    includeDirs: [path.join(sourceDir, 'proto')], keepCase: true, longs: Number, defaults: true, oneofs: true,
  })).tandem.v1;
  inference = new tandem.Inference(`${server.host}:${server.grpcPort}`, grpc.credentials.createInsecure());
});
after(async () => { inference?.close(); await server?.stop(); });

// after every test: the same router process, serving.
async function sameRouterStillServes() {
  assert.equal(routerOf(server.proc.pid), routerPid, 'the router process changed: it crashed');
  const r = await request(server, 'POST', '/v1/completions', { model: MODEL, prompt: 'Once', max_tokens: 2 });
  assert.equal(r.status, 200, r.text);
}

// a 4xx whose OpenAI error message contains every one of `words`.
function assertRefused(r, status, ...words) {
  assert.equal(r.status, status, r.text.slice(0, 400));
  const message = r.json?.error?.message;
  assert.equal(typeof message, 'string', r.text.slice(0, 400));
  for (const w of words) assert.ok(message.includes(w), `"${w}" not in: ${message}`);
}

const post = (route, body) => request(server, 'POST', route, body);

test('MB-sized prompts are refused by their length, naming the context', async () => {
  const prompt = 'Once upon a time there was a dog. '.repeat(Math.ceil(3.9 * MB / 34)).slice(0, 3.9 * MB);
  assertRefused(await post('/v1/completions', { model: MODEL, prompt }), 400, 'maximum context length', 'bytes');
  assertRefused(await post('/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: prompt }] }),
    400, 'maximum context length', 'bytes');
  assertRefused(await post('/v1/responses', { model: MODEL, input: prompt }), 400, 'maximum context length');
  assertRefused(await post('/v1/completions', { model: MODEL, prompt: ['a', prompt] }), 400, 'maximum context length');
  // past the body limit: refused before it is read.
  assertRefused(await post('/v1/completions', { model: MODEL, prompt: prompt + prompt }), 413, '4194304 bytes');
  await sameRouterStillServes();
});

test('deeply nested JSON bodies are refused at 128 levels', async () => {
  const deep = (n) => '['.repeat(n) + ']'.repeat(n);
  for (const route of ['/v1/completions', '/v1/chat/completions', '/v1/responses', '/tokenize']) {
    assertRefused(await post(route, `{"model":"${MODEL}","prompt":${deep(200000)}}`), 400, 'deeper than 128 levels');
  }
  assertRefused(await post('/v1/chat/completions',
    `{"model":"${MODEL}","messages":[{"role":"user","content":"hi","x":${deep(5000)}}]}`), 400, 'deeper than 128 levels');
  await sameRouterStillServes();
});

test('huge and deep tool definitions are refused naming the limit', async () => {
  const messages = [{ role: 'user', content: 'hi' }];
  const tool = (name, parameters, description = '') => ({ type: 'function', function: { name, description, parameters } });
  const many = Array.from({ length: 129 }, (_, i) => tool(`f${i}`, { type: 'object' }));
  assertRefused(await post('/v1/chat/completions', { model: MODEL, messages, tools: many }), 400, 'at most 128 tools');
  // parameters nested past the body's depth limit.
  let nested = { type: 'object' };
  for (let i = 0; i < 150; i++) nested = { type: 'object', properties: { a: nested } };
  assertRefused(await post('/v1/chat/completions', { model: MODEL, messages, tools: [tool('f', nested)] }),
    400, 'deeper than 128 levels');
  // parameters within the body's depth but past what a forced call's schema may nest.
  let schema = { type: 'string' };
  for (let i = 0; i < 100; i++) schema = { type: 'array', items: schema };
  const forced = await post('/v1/chat/completions', {
    model: MODEL, messages, tools: [tool('f', { type: 'object', properties: { a: schema } })], tool_choice: 'required',
  });
  assert.equal(forced.status, 400, forced.text.slice(0, 400));
  assert.equal(forced.json.error.param, 'tools');
  assert.match(forced.json.error.message, /deep|nest/i);
  // 128 tools with 40 KB descriptions: past the body limit, refused unread.
  const wordy = Array.from({ length: 128 }, (_, i) => tool(`f${i}`, { type: 'object' }, 'x'.repeat(40000)));
  assertRefused(await post('/v1/chat/completions', { model: MODEL, messages, tools: wordy }), 413, '4194304 bytes');
  assertRefused(await post('/v1/responses', {
    model: MODEL, input: 'hi', tools: Array.from({ length: 129 }, (_, i) => ({ type: 'function', name: `f${i}` })),
  }), 400, 'at most 128 tools');
  await sameRouterStillServes();
});

test('huge message arrays and Responses input items are refused at 4096', async () => {
  const messages = Array.from({ length: 4097 }, () => ({ role: 'user', content: 'x' }));
  assertRefused(await post('/v1/chat/completions', { model: MODEL, messages }), 400, 'at most 4096 messages');
  const input = Array.from({ length: 5000 }, () => ({ role: 'user', content: 'x' }));
  assertRefused(await post('/v1/responses', { model: MODEL, input }), 400, 'at most 4096 items');
  // deep content inside an input item.
  let content = 'x';
  for (let i = 0; i < 200; i++) content = [{ type: 'input_text', text: 'x', more: content }];
  assertRefused(await post('/v1/responses', { model: MODEL, input: [{ role: 'user', content }] }), 400, 'deeper than 128 levels');
  assertRefused(await post('/v1/completions', { model: MODEL, prompt: Array(1025).fill('a') }), 400, 'at most 1024 prompts');
  await sameRouterStillServes();
});

test('invalid UTF-8 and broken HTTP are 4xx', async () => {
  const bad = Buffer.concat([Buffer.from(`{"model":"${MODEL}","prompt":"`), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}')]);
  const r = await fetch(`${server.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: bad });
  const text = await r.text();
  assertRefused({ status: r.status, text, json: JSON.parse(text) }, 400, 'invalid JSON');
  // a head past the header limit.
  const reply = await new Promise((resolve) => {
    const socket = net.connect(server.httpPort, server.host);
    let data = '';
    socket.on('data', (d) => { data += d; });
    socket.on('close', () => resolve(data));
    socket.on('error', () => resolve(data));
    socket.write(`GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(64 * 1024)}\r\n\r\n`);
  });
  assert.match(reply, /^HTTP\/1\.1 431 /);
  await sameRouterStillServes();
});

// raw bytes to a gRPC method: the status the call ends with.
function rawGrpc(method, bytes, streaming) {
  const client = new grpc.Client(`${server.host}:${server.grpcPort}`, grpc.credentials.createInsecure());
  const same = (b) => b;
  return new Promise((resolve) => {
    const done = (status) => { client.close(); resolve(status); };
    if (streaming) {
      const call = client.makeServerStreamRequest(method, same, same, bytes);
      call.on('data', () => {});
      call.on('error', (e) => done({ code: e.code, details: e.details }));
      call.on('status', (s) => { if (s.code === grpc.status.OK) done({ code: 0, details: '' }); });
    } else {
      client.makeUnaryRequest(method, same, same, bytes, (e) => done(e ? { code: e.code, details: e.details } : { code: 0 }));
    }
  });
}

function generateStatus(req) {
  return new Promise((resolve) => {
    const call = inference.generate(req);
    call.on('data', () => {});
    call.on('error', (e) => resolve({ code: e.code, details: e.details }));
    call.on('status', (s) => { if (s.code === grpc.status.OK) resolve({ code: 0, details: '' }); });
  });
}

test('gRPC: malformed bodies and oversized inputs are INVALID_ARGUMENT with a message', async () => {
  for (const bytes of [Buffer.from([0x00, 0x01]), Buffer.from([0x12, 0x05, 0x61]), Buffer.from([0x12, 0x02, 0xff, 0xfe]),
    Buffer.alloc(100000, 0xff)]) {
    const s = await rawGrpc('/tandem.v1.Inference/Generate', bytes, true);
    assert.equal(s.code, grpc.status.INVALID_ARGUMENT, JSON.stringify(s));
    assert.match(s.details, /does not parse as tandem\.v1\.GenerateRequest/);
  }
  const list = await rawGrpc('/tandem.v1.Inference/ListModels', Buffer.from([0x0a, 0x09]), false);
  assert.equal(list.code, grpc.status.INVALID_ARGUMENT, JSON.stringify(list));
  const prompt = 'a'.repeat(3.9 * MB);
  let s = await generateStatus({ text: prompt, params: {} });
  assert.equal(s.code, grpc.status.INVALID_ARGUMENT);
  assert.match(s.details, /maximum context length .* bytes/);
  s = await generateStatus({ text: 'x', params: {}, response_format: { type: 'RESPONSE_FORMAT_TYPE_JSON_SCHEMA', schema: '['.repeat(1e5) + ']'.repeat(1e5) } });
  assert.equal(s.code, grpc.status.INVALID_ARGUMENT);
  assert.match(s.details, /deeper than 128 levels/);
  s = await generateStatus({ token_ids: { ids: Array(100000).fill(5) }, params: {} });
  assert.equal(s.code, grpc.status.INVALID_ARGUMENT);
  assert.match(s.details, /maximum context length/);
  await sameRouterStillServes();
});
