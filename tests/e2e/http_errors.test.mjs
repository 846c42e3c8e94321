// Malformed and hostile requests against the real `tandem serve`: each gets
// the right status and an OpenAI error body, and the server keeps serving.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startServer, request } from './harness.mjs';

const MODEL = 'stories260K';
let server;

before(async () => { server = await startServer(['--request-timeout', '1', '--max-model-len', '256']); });
after(async () => { await server?.stop(); });

function assertOpenAiError(r, status, param) {
  assert.equal(r.status, status, r.text);
  assert.equal(typeof r.json?.error?.message, 'string', r.text);
  assert.ok(r.json.error.message.length > 0);
  assert.equal(typeof r.json.error.type, 'string');
  assert.ok('param' in r.json.error && 'code' in r.json.error);
  if (param !== undefined) assert.equal(r.json.error.param, param, r.text);
}

async function stillServes() {
  const r = await request(server, 'POST', '/v1/completions', { model: MODEL, prompt: 'Hi', max_tokens: 2 });
  assert.equal(r.status, 200, r.text);
}

test('invalid JSON is a 400', async () => {
  assertOpenAiError(await request(server, 'POST', '/v1/completions', '{"model": "stories260K", "prompt": '), 400);
  assertOpenAiError(await request(server, 'POST', '/v1/chat/completions', 'not json'), 400);
  await stillServes();
});

test('wrong types are 400s naming the field', async () => {
  assertOpenAiError(await request(server, 'POST', '/v1/completions', { model: MODEL, prompt: 'x', max_tokens: 'ten' }), 400, 'max_tokens');
  assertOpenAiError(await request(server, 'POST', '/v1/completions', { model: MODEL, prompt: 'x', temperature: '1' }), 400, 'temperature');
  assertOpenAiError(await request(server, 'POST', '/v1/completions', { model: MODEL, prompt: 42 }), 400, 'prompt');
  assertOpenAiError(await request(server, 'POST', '/v1/chat/completions', { model: MODEL, messages: 'hi' }), 400, 'messages');
  assertOpenAiError(await request(server, 'POST', '/v1/completions', { model: MODEL, prompt: 'x', stream: 'yes' }), 400, 'stream');
  await stillServes();
});

test('out-of-range values are 400s', async () => {
  assertOpenAiError(await request(server, 'POST', '/v1/completions', { model: MODEL, prompt: 'x', max_tokens: -5 }), 400, 'max_tokens');
  assertOpenAiError(await request(server, 'POST', '/v1/completions', { model: MODEL, prompt: 'x', temperature: -0.5 }), 400, 'temperature');
  assertOpenAiError(await request(server, 'POST', '/v1/completions', { model: MODEL, prompt: 'x', top_p: 1.5 }), 400, 'top_p');
  assertOpenAiError(await request(server, 'POST', '/v1/completions', { model: MODEL, prompt: 'x', n: 0 }), 400, 'n');
  assertOpenAiError(await request(server, 'POST', '/v1/completions', { model: MODEL, prompt: 'x', stop: Array(33).fill('a') }), 400, 'stop');
  assertOpenAiError(await request(server, 'POST', '/v1/completions', { model: MODEL, prompt: [1, 99999] }), 400);
  // refused by the engine after parsing: still a 400, not a 200 stream with an error event.
  assertOpenAiError(await request(server, 'POST', '/v1/completions', { model: MODEL, prompt: [1, 99999], stream: true }), 400);
  await stillServes();
});

test('unknown fields are ignored', async () => {
  const r = await request(server, 'POST', '/v1/completions', { model: MODEL, prompt: 'Hi', max_tokens: 2, frobnicate: { a: 1 } });
  assert.equal(r.status, 200, r.text);
});

test('an unknown model is a 404', async () => {
  assertOpenAiError(await request(server, 'POST', '/v1/completions', { model: 'gpt-9', prompt: 'x' }), 404, 'model');
});

test('an unknown route is a 404, a wrong method a 405', async () => {
  assertOpenAiError(await request(server, 'GET', '/v2/everything'), 404);
  assertOpenAiError(await request(server, 'GET', '/v1/completions'), 405);
});

test('a 10 MB body is a 413 and the server keeps serving', async () => {
  const big = JSON.stringify({ model: MODEL, prompt: 'x'.repeat(10 * 1024 * 1024) });
  let r;
  try {
    r = await request(server, 'POST', '/v1/completions', big);
  } catch (e) {
    // the server may answer and close before the client finished sending.
    r = null;
  }
  if (r !== null) assertOpenAiError(r, 413);
  await stillServes();
});

test('a prompt longer than the context is a 400 context_length_exceeded', async () => {
  const r = await request(server, 'POST', '/v1/completions', { model: MODEL, prompt: 'Once upon a time '.repeat(200), max_tokens: 4 });
  assertOpenAiError(r, 400, 'prompt');
  assert.equal(r.json.error.code, 'context_length_exceeded');
  const r2 = await request(server, 'POST', '/v1/completions', { model: MODEL, prompt: 'Hi', max_tokens: 10000 });
  assertOpenAiError(r2, 400, 'max_tokens');
  await stillServes();
});

test('a slowloris client gets a 408 and is cut off while others are served', async () => {
  const sock = net.connect(server.httpPort, server.host);
  await new Promise((r) => sock.on('connect', r));
  let received = '';
  sock.on('data', (d) => { received += d; });
  const closed = new Promise((r) => sock.on('close', r));
  sock.write('POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n');
  const dribble = setInterval(() => { if (!sock.destroyed) sock.write('X'); }, 200);
  await stillServes();
  await closed;
  clearInterval(dribble);
  assert.match(received, /^HTTP\/1\.1 408/);
  await stillServes();
});

test('health, liveness and metrics', async () => {
  assert.equal((await request(server, 'GET', '/health')).status, 200);
  assert.equal((await request(server, 'GET', '/live')).status, 200);
  const m = await request(server, 'GET', '/metrics');
  assert.equal(m.status, 200);
  for (const name of ['tandem:requests_total', 'tandem:time_to_first_token_seconds_bucket',
    'tandem:inter_token_latency_seconds_bucket', 'tandem:e2e_request_latency_seconds_bucket',
    'tandem:prompt_tokens_total', 'tandem:generation_tokens_total', 'tandem:requests_in_flight',
    'tandem:num_requests_waiting', 'tandem:kv_cache_usage_perc', 'tandem:prefix_cache_hit_tokens_total']) {
    assert.ok(m.text.includes(name), name);
  }
  assert.match(m.text, /tandem:requests_total\{endpoint="completions",status="400"\} [1-9]/);
});
