// The newer OpenAI surface against the real `tandem serve`, driven by the
// official openai npm client 7.x: the Responses API (plain and streamed),
// chat with tools (accepted, tool_choice "none"), /tokenize and
// /detokenize, models.retrieve, usage in the last streamed chat chunk, and
// logit_bias forcing a token, structured output (json_schema through
// chat.completions.parse and Responses' text.format, validated with ajv)
// and tool calls forced by tool_choice. stories260K never writes a tool
// call on its own: the parsing of calls is also tested on each family's
// real templates in tests/router/openai/tool_call_parser_test.cc.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { startServer, request, sourceDir } from './harness.mjs';

const MODEL = 'stories260K';
let server;
let client;

before(async () => {
  server = await startServer();
  client = new OpenAI({ baseURL: server.url + '/v1', apiKey: 'unused', maxRetries: 0 });
});
after(async () => { await server?.stop(); });

const tools = [{
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'the weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
}];

async function chatText(prompt, maxTokens) {
  const r = await client.chat.completions.create({
    model: MODEL, messages: [{ role: 'user', content: prompt }], max_tokens: maxTokens, temperature: 0,
  });
  return r.choices[0].message.content;
}

test('responses.create answers with the text chat gives for the same input', async () => {
  const r = await client.responses.create({
    model: MODEL, input: 'Once upon a time', max_output_tokens: 30, temperature: 0, store: false,
  });
  assert.equal(r.object, 'response');
  assert.match(r.id, /^resp_/);
  assert.ok(['completed', 'incomplete'].includes(r.status), r.status);
  assert.equal(r.output[0].type, 'message');
  assert.equal(r.output[0].role, 'assistant');
  assert.equal(r.output_text, await chatText('Once upon a time', 30));
  assert.ok(r.output_text.length > 0);
  assert.equal(r.usage.input_tokens, 5);
  assert.ok(r.usage.output_tokens > 0 && r.usage.output_tokens <= 30);
  assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
  if (r.usage.output_tokens === 30) {
    assert.equal(r.status, 'incomplete');
    assert.equal(r.incomplete_details.reason, 'max_output_tokens');
  }
});

test('a message-list input with developer instructions is answered', async () => {
  const r = await client.responses.create({
    model: MODEL,
    instructions: 'Tell a story.',
    input: [
      { role: 'developer', content: 'Keep it short.' },
      { role: 'user', content: [{ type: 'input_text', text: 'Lily had a cat' }] },
    ],
    max_output_tokens: 16,
    temperature: 0,
  });
  assert.equal(r.instructions, 'Tell a story.');
  assert.ok(r.output_text.length > 0);
});

test('a streamed response comes as typed, numbered events adding up to the text', async () => {
  const stream = await client.responses.create({
    model: MODEL, input: 'Once upon a time', max_output_tokens: 30, temperature: 0, stream: true,
  });
  const types = [];
  let text = '';
  let last = null;
  let sequence = 0;
  for await (const event of stream) {
    assert.equal(event.sequence_number, sequence++);
    types.push(event.type);
    if (event.type === 'response.output_text.delta') text += event.delta;
    if (event.type === 'response.completed' || event.type === 'response.incomplete') last = event;
  }
  assert.deepEqual(types.slice(0, 4), [
    'response.created', 'response.in_progress', 'response.output_item.added',
    'response.content_part.added']);
  for (const t of ['response.output_text.done', 'response.content_part.done', 'response.output_item.done']) {
    assert.ok(types.includes(t), t);
  }
  assert.ok(types.filter((t) => t === 'response.output_text.delta').length > 5, 'not streamed');
  assert.ok(last, types.join(' '));
  assert.equal(text, await chatText('Once upon a time', 30));
  assert.equal(last.response.output[0].content[0].text, text);
  assert.equal(last.response.usage.input_tokens, 5);
});

test('responses are not stored: previous_response_id is refused', async () => {
  await assert.rejects(
    client.responses.create({ model: MODEL, input: 'x', previous_response_id: 'resp_123' }),
    (e) => e instanceof OpenAI.BadRequestError && e.error?.param === 'previous_response_id'
      && /does not store responses/.test(e.message));
  await assert.rejects(
    client.responses.create({ model: MODEL, input: 'x', text: { format: { type: 'xml' } } }),
    (e) => e instanceof OpenAI.BadRequestError && e.error?.param === 'text.format.type');
});

// the 22 schemas of tests/data/grammar/schemas.json, of increasing difficulty.
const schemas = JSON.parse(readFileSync(path.join(sourceDir, 'tests/data/grammar/schemas.json'), 'utf8'));
const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);

// a schema whose sentences have no length bound (extra properties of any
// name) can run to max_tokens on a random model: such an output is counted,
// not validated; every bounded schema must finish and validate.
const unbounded = (schema) => /"additionalProperties":(\{|true)/.test(JSON.stringify(schema));

test('chat.completions.parse with json_schema: 22 schemas x 3 seeds at temperature 1 all validate (ajv)', async () => {
  let cut = 0;
  for (const [i, schema] of schemas.entries()) {
    const validate = ajv.compile(schema);
    for (const seed of [1, 2, 3]) {
      const body = {
        model: MODEL, messages: [{ role: 'user', content: 'Once upon a time' }], temperature: 1, seed,
        max_tokens: 400, response_format: { type: 'json_schema', json_schema: { name: `s${i}`, schema, strict: true } },
      };
      if (unbounded(schema)) {
        const r = await client.chat.completions.create(body);
        if (r.choices[0].finish_reason === 'length') { cut++; continue; }
        assert.ok(validate(JSON.parse(r.choices[0].message.content)), `schema ${i} seed ${seed}: ${r.choices[0].message.content}`);
        continue;
      }
      const r = await client.chat.completions.parse(body)
        .catch((e) => { throw new Error(`schema ${i} seed ${seed}: ${e.message}`); });
      const choice = r.choices[0];
      assert.equal(choice.finish_reason, 'stop', `schema ${i} seed ${seed}: ${choice.message.content}`);
      assert.ok(validate(choice.message.parsed),
        `schema ${i} seed ${seed}: ${choice.message.content}: ${ajv.errorsText(validate.errors)}`);
    }
  }
  const bounded = schemas.filter((x) => !unbounded(x)).length;
  console.log(`structured output: ${bounded} bounded schemas x 3 seeds validated; ${cut} unbounded outputs cut at max_tokens`);
  assert.ok(bounded >= 20, `${bounded} bounded schemas`);
});

test('responses.create with text.format json_schema answers JSON valid under it; an unsupported keyword is a 400 naming it', async () => {
  const schema = { type: 'object', properties: { name: { type: 'string', maxLength: 12 }, age: { type: 'integer', minimum: 0, maximum: 120 } },
    required: ['name', 'age'], additionalProperties: false };
  const r = await client.responses.create({ model: MODEL, input: 'Once upon a time', temperature: 1,
    text: { format: { type: 'json_schema', name: 'person', schema, strict: true } } });
  assert.ok(ajv.validate(schema, JSON.parse(r.output_text)), r.output_text);
  await assert.rejects(
    client.responses.create({ model: MODEL, input: 'x',
      text: { format: { type: 'json_schema', name: 'p', schema: { type: 'string', pattern: 'a+' } } } }),
    (e) => e instanceof OpenAI.BadRequestError && e.error?.param === 'text.format.schema' && /pattern/.test(e.message));
});

test('tool_choice naming a function, or required, forces a parsed tool call', async () => {
  const twoTools = [...tools, { type: 'function', function: { name: 'get_time', parameters: {
    type: 'object', properties: { zone: { type: 'string', enum: ['UTC', 'CET'] } }, required: ['zone'] } } }];
  for (const [tool_choice, names] of [[{ type: 'function', function: { name: 'get_weather' } }, ['get_weather']],
    ['required', ['get_weather', 'get_time']]]) {
    for (const seed of [1, 2]) {
      const r = await client.chat.completions.create({
        model: MODEL, messages: [{ role: 'user', content: 'What is the weather in Paris?' }], temperature: 1, seed,
        max_tokens: 200, tools: twoTools, tool_choice,
      });
      const choice = r.choices[0];
      assert.equal(choice.finish_reason, 'tool_calls', JSON.stringify(choice));
      const call = choice.message.tool_calls[0];
      assert.match(call.id, /^call_/);
      assert.ok(names.includes(call.function.name), call.function.name);
      const args = JSON.parse(call.function.arguments);
      const params = twoTools.find((t) => t.function.name === call.function.name).function.parameters;
      assert.ok(ajv.validate(params, args), call.function.arguments);
    }
  }
});

test('chat with tools is answered; tool_choice none and auto both work', async () => {
  for (const tool_choice of ['auto', 'none', undefined]) {
    const r = await client.chat.completions.create({
      model: MODEL, messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 20,
      temperature: 0, tools, tool_choice,
    });
    assert.ok(['stop', 'length', 'tool_calls'].includes(r.choices[0].finish_reason));
    if (tool_choice === 'none') {
      assert.equal(r.choices[0].message.tool_calls ?? undefined, undefined);
      assert.ok(r.choices[0].message.content.length > 0);
    }
  }
  await assert.rejects(
    client.chat.completions.create({
      model: MODEL, messages: [{ role: 'user', content: 'x' }], tools,
      tool_choice: { type: 'function', function: { name: 'nope' } },
    }),
    (e) => e instanceof OpenAI.BadRequestError && e.error?.param === 'tool_choice');
});

test('tokenize and detokenize round-trip, prompt and chat', async () => {
  const prompt = 'Once upon a time, there was a cat.';
  const t = await request(server, 'POST', '/tokenize', { model: MODEL, prompt, add_special_tokens: false });
  assert.equal(t.status, 200, t.text);
  assert.equal(t.json.count, t.json.tokens.length);
  assert.ok(t.json.max_model_len > 0);
  const d = await request(server, 'POST', '/detokenize', { model: MODEL, tokens: t.json.tokens });
  assert.equal(d.status, 200, d.text);
  assert.equal(d.json.prompt, prompt);
  // a chat's tokens are what a chat request is charged for
  const chat = await request(server, 'POST', '/tokenize', {
    model: MODEL, messages: [{ role: 'user', content: 'Once upon a time' }] });
  const r = await client.chat.completions.create({
    model: MODEL, messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 1 });
  assert.equal(chat.json.count, r.usage.prompt_tokens);
});

test('models.retrieve names the served model and 404s for another', async () => {
  const m = await client.models.retrieve(MODEL);
  assert.equal(m.id, MODEL);
  assert.equal(m.object, 'model');
  await assert.rejects(client.models.retrieve('gpt-4o'), (e) => e instanceof OpenAI.NotFoundError);
});

test('streamed chat puts usage in a last chunk when asked', async () => {
  const stream = await client.chat.completions.create({
    model: MODEL, messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 12,
    temperature: 0, stream: true, stream_options: { include_usage: true },
  });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  const last = chunks.at(-1);
  assert.deepEqual(last.choices, []);
  assert.equal(last.usage.completion_tokens, 12);
  assert.equal(last.usage.prompt_tokens, 5);
  for (const c of chunks.slice(0, -1)) assert.equal(c.usage, null);
});

test('logit_bias +100 on one token makes greedy output that token, -100 bans it', async () => {
  const t = await request(server, 'POST', '/tokenize', {
    model: MODEL, prompt: 'Lily', add_special_tokens: false, return_token_strs: true });
  assert.equal(t.json.tokens.length, 1, JSON.stringify(t.json));
  const [lily] = t.json.tokens;
  const [text] = t.json.token_strs;  // " Lily": SentencePiece's word start
  const forced = await client.completions.create({
    model: MODEL, prompt: 'Once upon a time', max_tokens: 4, temperature: 0, logit_bias: { [lily]: 100 },
  });
  assert.equal(forced.choices[0].text, text.repeat(4));
  const plain = await client.completions.create({
    model: MODEL, prompt: 'Once upon a time', max_tokens: 1, temperature: 0,
  });
  // the greedy token's id: the last of the prompt with it appended.
  const prompt = await request(server, 'POST', '/tokenize', { model: MODEL, prompt: 'Once upon a time' });
  const longer = await request(server, 'POST', '/tokenize', {
    model: MODEL, prompt: 'Once upon a time' + plain.choices[0].text });
  assert.equal(longer.json.count, prompt.json.count + 1);
  const banned = await client.completions.create({
    model: MODEL, prompt: 'Once upon a time', max_tokens: 1, temperature: 0,
    logit_bias: { [longer.json.tokens.at(-1)]: -100 },
  });
  assert.notEqual(banned.choices[0].text, plain.choices[0].text);
  await assert.rejects(
    client.completions.create({ model: MODEL, prompt: 'x', max_tokens: 1, logit_bias: { 999999: 5 } }),
    (e) => e instanceof OpenAI.BadRequestError && /outside the vocabulary/.test(e.message));
});
