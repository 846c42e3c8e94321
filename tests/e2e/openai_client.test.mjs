// The official openai npm client against the real `tandem serve`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startServer, oracle, metric, waitFor } from './harness.mjs';

const MODEL = 'stories260K';
let server;
let client;

before(async () => {
  server = await startServer();
  client = new OpenAI({ baseURL: server.url + '/v1', apiKey: 'unused', maxRetries: 0 });
});
after(async () => { await server?.stop(); });

test('greedy completions equal the llama.cpp oracle for every prompt', async () => {
  for (const c of oracle.cases) {
    const r = await client.completions.create({
      model: MODEL, prompt: c.prompt, max_tokens: oracle.max_tokens, temperature: 0,
    });
    assert.equal(r.choices[0].text, c.completion_text, c.prompt);
    assert.equal(r.usage.prompt_tokens, c.prompt_ids.length);
    assert.equal(r.usage.completion_tokens, c.completion_ids.length);
    assert.equal(r.usage.total_tokens, c.prompt_ids.length + c.completion_ids.length);
    assert.equal(r.object, 'text_completion');
    assert.equal(r.model, MODEL);
    assert.match(r.id, /^cmpl-/);
  }
});

test('token-id prompts give the same greedy output', async () => {
  const c = oracle.cases[1];
  const r = await client.completions.create({
    model: MODEL, prompt: c.prompt_ids, max_tokens: oracle.max_tokens, temperature: 0,
  });
  assert.equal(r.choices[0].text, c.completion_text);
});

test('several prompts in one request come back as one choice each, in order', async () => {
  const cases = oracle.cases.slice(0, 3);
  const r = await client.completions.create({
    model: MODEL, prompt: cases.map((c) => c.prompt), max_tokens: 48, temperature: 0,
  });
  assert.equal(r.choices.length, 3);
  r.choices.sort((a, b) => a.index - b.index);
  cases.forEach((c, i) => assert.equal(r.choices[i].text, c.completion_text));
  assert.equal(r.usage.prompt_tokens, cases.reduce((n, c) => n + c.prompt_ids.length, 0));
});

test('streamed completion deltas add up to the whole text, with usage at the end', async () => {
  const c = oracle.cases[0];
  const stream = await client.completions.create({
    model: MODEL, prompt: c.prompt, max_tokens: 48, temperature: 0,
    stream: true, stream_options: { include_usage: true },
  });
  let text = '';
  let finish = null;
  let usage = null;
  let chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) {
      text += choice.text;
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  assert.equal(text, c.completion_text);
  assert.equal(finish, 'length');
  assert.ok(chunks > 10, `only ${chunks} chunks: not streamed`);
  assert.equal(usage.completion_tokens, 48);
  assert.equal(usage.prompt_tokens, c.prompt_ids.length);
});

test('chat completions, streamed and not, agree', async () => {
  const messages = [{ role: 'user', content: 'Once upon a time' }];
  const whole = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 30, temperature: 0 });
  assert.equal(whole.object, 'chat.completion');
  assert.equal(whole.choices[0].message.role, 'assistant');
  assert.ok(whole.choices[0].message.content.length > 0);
  assert.equal(whole.usage.completion_tokens, 30);
  const stream = await client.chat.completions.create({
    model: MODEL, messages, max_tokens: 30, temperature: 0, stream: true,
  });
  let text = '';
  let role = null;
  for await (const chunk of stream) {
    assert.equal(chunk.object, 'chat.completion.chunk');
    const delta = chunk.choices[0]?.delta ?? {};
    if (delta.role) role = delta.role;
    text += delta.content ?? '';
  }
  assert.equal(role, 'assistant');
  assert.equal(text, whole.choices[0].message.content);
});

test('chat with the plain template continues the text like a completion', async () => {
  const c = oracle.cases[2];
  const r = await client.chat.completions.create({
    model: MODEL, messages: [{ role: 'user', content: c.prompt }], max_tokens: 48, temperature: 0,
  });
  assert.equal(r.choices[0].message.content, c.completion_text);
  assert.equal(r.usage.prompt_tokens, c.prompt_ids.length);
});

test('n=2 gives two choices, and a seed makes them repeat', async () => {
  const ask = () => client.completions.create({
    model: MODEL, prompt: 'Once upon a time', max_tokens: 20, temperature: 1.0, n: 2, seed: 1234,
  });
  const a = await ask();
  const b = await ask();
  assert.equal(a.choices.length, 2);
  const texts = (r) => r.choices.sort((x, y) => x.index - y.index).map((ch) => ch.text);
  assert.deepEqual(texts(a), texts(b));
  assert.notEqual(texts(a)[0], texts(a)[1]);
  assert.equal(a.usage.completion_tokens, 40);
  assert.equal(a.usage.prompt_tokens, 5);
});

test('different seeds give different samples', async () => {
  const ask = (seed) => client.completions.create({
    model: MODEL, prompt: 'Once upon a time', max_tokens: 20, temperature: 1.0, seed,
  });
  const outs = new Set();
  for (const seed of [1, 2, 3, 4]) outs.add((await ask(seed)).choices[0].text);
  assert.ok(outs.size >= 3, [...outs].join(' | '));
});

test('a stop string ends the text before it, across token boundaries', async () => {
  const c = oracle.cases[0];  // ", there was a little girl named Lily. ..."
  const cut = c.completion_text.indexOf(' girl');
  assert.ok(cut > 0);
  for (const stream of [false, true]) {
    const args = { model: MODEL, prompt: c.prompt, max_tokens: 48, temperature: 0, stop: [' gir', 'zzz'] };
    let text = '';
    let finish;
    if (stream) {
      for await (const chunk of await client.completions.create({ ...args, stream: true })) {
        for (const ch of chunk.choices) { text += ch.text; finish = ch.finish_reason ?? finish; }
      }
    } else {
      const r = await client.completions.create(args);
      text = r.choices[0].text;
      finish = r.choices[0].finish_reason;
    }
    assert.equal(text, c.completion_text.slice(0, cut), `stream=${stream}`);
    assert.equal(finish, 'stop');
  }
});

test('completions logprobs: the greedy token is the most likely', async () => {
  const r = await client.completions.create({
    model: MODEL, prompt: 'Once upon a time', max_tokens: 8, temperature: 0, logprobs: 3,
  });
  const lp = r.choices[0].logprobs;
  assert.equal(lp.tokens.length, 8);
  assert.equal(lp.token_logprobs.length, 8);
  assert.equal(lp.top_logprobs.length, 8);
  assert.equal(lp.tokens.join(''), r.choices[0].text);
  for (let i = 0; i < 8; i++) {
    const tops = Object.values(lp.top_logprobs[i]);
    assert.ok(tops.length >= 1 && tops.length <= 3);
    assert.ok(lp.token_logprobs[i] <= 0);
    assert.ok(Math.abs(Math.max(...tops) - lp.token_logprobs[i]) < 1e-4);
  }
});

test('chat logprobs with top_logprobs', async () => {
  const r = await client.chat.completions.create({
    model: MODEL, messages: [{ role: 'user', content: 'Lily' }], max_tokens: 5, temperature: 0,
    logprobs: true, top_logprobs: 2,
  });
  const content = r.choices[0].logprobs.content;
  assert.equal(content.length, 5);
  for (const entry of content) {
    assert.equal(entry.top_logprobs.length, 2);
    assert.ok(Array.isArray(entry.bytes));
    assert.equal(entry.top_logprobs[0].logprob, entry.logprob);
  }
});

test('a repeated prompt reports cached tokens', async () => {
  const prompt = oracle.cases.map((c) => c.prompt).join(' and ') + ' and then';
  const first = await client.completions.create({ model: MODEL, prompt, max_tokens: 4, temperature: 0 });
  const second = await client.completions.create({ model: MODEL, prompt, max_tokens: 4, temperature: 0 });
  assert.ok(first.usage.prompt_tokens > 32);
  assert.ok(second.usage.prompt_tokens_details.cached_tokens >= 32,
    JSON.stringify(second.usage));
  assert.equal(second.choices[0].text, first.choices[0].text);
});

test('ignore_eos generates exactly max_tokens', async () => {
  const r = await client.completions.create({
    model: MODEL, prompt: 'The end.', max_tokens: 200, temperature: 0, ignore_eos: true,
  });
  assert.equal(r.usage.completion_tokens, 200);
  assert.equal(r.choices[0].finish_reason, 'length');
});

test('GET /v1/models lists the served model', async () => {
  const models = [];
  for await (const m of client.models.list()) models.push(m);
  assert.equal(models.length, 1);
  assert.equal(models[0].id, MODEL);
  assert.equal(models[0].object, 'model');
});

test('a client that goes away cancels its request and frees its KV blocks', async () => {
  const controller = new AbortController();
  const stream = await client.completions.create({
    model: MODEL, prompt: 'Once upon a time', max_tokens: 400, temperature: 0,
    ignore_eos: true, stream: true,
  }, { signal: controller.signal });
  let seen = 0;
  try {
    for await (const chunk of stream) {
      if (++seen === 3) controller.abort();
    }
  } catch { /* aborted */ }
  assert.ok(await waitFor(async () => (await metric(server, 'tandem:num_requests_running')) === 0),
    'the request kept running');
  // the router's KV usage comes from its next poll of the worker: wait for it.
  assert.ok(await waitFor(async () => (await metric(server, 'tandem:kv_cache_usage_perc')) === 0),
    'the KV blocks were not freed');
});

test('errors come back as OpenAI errors the client understands', async () => {
  await assert.rejects(
    client.completions.create({ model: 'no-such-model', prompt: 'x', max_tokens: 1 }),
    (e) => e instanceof OpenAI.NotFoundError && e.status === 404);
  await assert.rejects(
    client.completions.create({ model: MODEL, prompt: 'x', max_tokens: -1 }),
    (e) => e instanceof OpenAI.BadRequestError && e.error?.param === 'max_tokens');
  await assert.rejects(
    client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }], temperature: -1 }),
    (e) => e instanceof OpenAI.BadRequestError && e.error?.param === 'temperature');
});

test('echo puts the prompt in front of the completion', async () => {
  const c = oracle.cases[0];
  const r = await client.completions.create({
    model: MODEL, prompt: c.prompt, max_tokens: 10, temperature: 0, echo: true, logprobs: 1,
  });
  const text = r.choices[0].text;
  assert.ok(text.startsWith(c.prompt + ', there was'), text);
  // the prompt's tokens lead the logprobs (OpenAI's legacy shape): the
  // first has no context (null), the completion's first starts after the prompt.
  const lp = r.choices[0].logprobs;
  const n = c.prompt_ids.length;
  assert.equal(lp.tokens.length, n + 10);
  assert.equal(lp.token_logprobs[0], null);
  assert.equal(lp.top_logprobs[0], null);
  assert.equal(lp.text_offset[0], 0);
  assert.equal(lp.text_offset[n], c.prompt.length);
  assert.equal(lp.tokens.slice(0, n).join(''), c.prompt);
});

test("lm-evaluation-harness's loglikelihood request scores each prompt and generates nothing", async () => {
  const prompts = oracle.cases.slice(0, 2).map((c) => c.prompt_ids);
  const r = await client.completions.create({
    model: MODEL, prompt: prompts, max_tokens: 0, temperature: 0, echo: true, logprobs: 1,
  });
  assert.equal(r.choices.length, 2);
  assert.equal(r.usage.completion_tokens, 0);
  r.choices.forEach((choice, i) => {
    assert.equal(choice.finish_reason, 'length');
    assert.equal(choice.text, oracle.cases[i].prompt);
    const lp = choice.logprobs.token_logprobs;
    assert.equal(lp.length, prompts[i].length);
    assert.equal(lp[0], null);
    for (const x of lp.slice(1)) assert.ok(Number.isFinite(x) && x <= 0, String(x));
  });
});
