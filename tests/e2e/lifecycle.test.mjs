// Process-level behaviour of `tandem serve`: API keys, draining on SIGTERM.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startServer, request } from './harness.mjs';

const MODEL = 'stories260K';

test('API keys: a missing or wrong key is a 401, a right one works', async () => {
  const server = await startServer(['--api-key', 'k-one'], { TANDEM_API_KEYS: 'k-two,k-three' });
  try {
    const r = await request(server, 'GET', '/v1/models');
    assert.equal(r.status, 401);
    assert.equal(r.json.error.type, 'authentication_error');
    const wrong = new OpenAI({ baseURL: server.url + '/v1', apiKey: 'k-on', maxRetries: 0 });
    await assert.rejects(wrong.models.list(), (e) => e instanceof OpenAI.AuthenticationError);
    for (const key of ['k-one', 'k-three']) {
      const right = new OpenAI({ baseURL: server.url + '/v1', apiKey: key, maxRetries: 0 });
      const c = await right.completions.create({ model: MODEL, prompt: 'Hi', max_tokens: 2 });
      assert.equal(c.choices.length, 1);
    }
    // health and metrics stay open for probes and scrapers.
    assert.equal((await request(server, 'GET', '/health')).status, 200);
  } finally {
    await server.stop();
  }
});

test('SIGTERM lets a running stream finish, refuses new work, and exits 0', async () => {
  const server = await startServer();
  const client = new OpenAI({ baseURL: server.url + '/v1', apiKey: 'x', maxRetries: 0 });
  const stream = await client.completions.create({
    model: MODEL, prompt: 'Once upon a time', max_tokens: 300, temperature: 0, ignore_eos: true, stream: true,
  });
  let tokens = 0;
  let finish = null;
  let signalled = false;
  for await (const chunk of stream) {
    for (const ch of chunk.choices) { if (ch.text) tokens++; finish = ch.finish_reason ?? finish; }
    if (!signalled && tokens >= 2) {
      signalled = true;
      server.proc.kill('SIGTERM');
    }
  }
  assert.equal(finish, 'length');
  const { code } = await server.exited;
  assert.equal(code, 0, server.log());
});

test('beyond --max-pending-requests a request gets 429 with Retry-After', async () => {
  const server = await startServer(['--max-pending-requests', '1']);
  try {
    const client = new OpenAI({ baseURL: server.url + '/v1', apiKey: 'x', maxRetries: 0 });
    const stream = await client.completions.create({
      model: MODEL, prompt: 'Once upon a time', max_tokens: 400, temperature: 0, ignore_eos: true, stream: true,
    });
    const it = stream[Symbol.asyncIterator]();
    await it.next();  // the first request is running
    const r = await request(server, 'POST', '/v1/completions', { model: MODEL, prompt: 'Hi', max_tokens: 2 });
    assert.equal(r.status, 429, r.text);
    assert.equal(r.headers.get('retry-after'), '1');
    assert.equal(r.json.error.type, 'rate_limit_error');
    stream.controller.abort();
    // once it is gone, requests are taken again.
    let ok = false;
    for (let i = 0; i < 100 && !ok; i++) {
      ok = (await request(server, 'POST', '/v1/completions', { model: MODEL, prompt: 'Hi', max_tokens: 2 })).status === 200;
      if (!ok) await new Promise((res) => setTimeout(res, 50));
    }
    assert.ok(ok);
  } finally {
    await server.stop();
  }
});
