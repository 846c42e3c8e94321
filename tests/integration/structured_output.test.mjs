// Structured output through real processes: a router, a prefill worker P
// and two decode workers D. Every prompt is prefilled on P, which samples
// the first token under the grammar; D decodes the rest under its own
// matcher. The embedded model is random for JSON, sampled at temperature 1:
// every output must still parse and satisfy its schema (22 schemas of
// tests/data/grammar/schemas.json, several seeds each). A D SIGKILLed
// mid-stream: the router migrates its requests (prompt + delivered tokens,
// replayed through the grammar on the new D) and the outputs stay valid.
// Bad schemas and grammars are 400s naming the problem.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startCluster, sourceDir, scrape, sum } from './cluster.mjs';

const schemas = JSON.parse(fs.readFileSync(path.join(sourceDir, 'tests/data/grammar/schemas.json'), 'utf8'));

let cluster;
before(async () => {
  cluster = await startCluster({ prefill: 1, decode: 2, routerArgs: ['--max-local-prefill-tokens', '3'] });
});
after(async () => { await cluster?.stop(); });

// what is wrong with `v` under `s` ('' when valid): the keywords the
// schemas use, checked independently of tandem's compiler.
function violation(s, v, root = s) {
  if (s === true) return '';
  if (s.$ref) return violation(s.$ref.slice(2).split('/').reduce((n, k) => n[k], root), v, root);
  if ('const' in s && JSON.stringify(s.const) !== JSON.stringify(v)) return 'const';
  if (s.enum && !s.enum.some((e) => JSON.stringify(e) === JSON.stringify(v))) return 'enum';
  for (const k of ['anyOf', 'oneOf']) if (s[k] && !s[k].some((x) => violation(x, v, root) === '')) return k;
  const type = (x) => (x === null ? 'null' : Array.isArray(x) ? 'array' : typeof x === 'object' ? 'object'
    : typeof x === 'string' ? 'string' : typeof x === 'boolean' ? 'boolean' : 'number');
  if (s.type) {
    const ok = [].concat(s.type).some((t) => t === type(v) || (t === 'integer' && Number.isInteger(v)));
    if (!ok) return `type ${s.type} for ${JSON.stringify(v)}`;
  }
  if (type(v) === 'object') {
    for (const r of s.required ?? []) if (!(r in v)) return `missing ${r}`;
    for (const [k, x] of Object.entries(v)) {
      if (s.properties?.[k]) { const e = violation(s.properties[k], x, root); if (e) return `${k}: ${e}`; }
      else if (s.additionalProperties !== undefined) { const e = violation(s.additionalProperties, x, root); if (e) return `${k}: ${e}`; }
      else if (s.properties) return `unexpected ${k}`;
    }
  }
  if (type(v) === 'array') {
    if (s.minItems !== undefined && v.length < s.minItems) return 'minItems';
    if (s.maxItems !== undefined && v.length > s.maxItems) return 'maxItems';
    (s.prefixItems ?? []).forEach((p, i) => { if (violation(p, v[i], root)) throw new Error(`prefixItems ${i}`); });
    if (s.items) for (const x of v.slice((s.prefixItems ?? []).length)) { const e = violation(s.items, x, root); if (e) return e; }
  }
  if (type(v) === 'string') {
    const n = [...v].length;
    if (s.minLength !== undefined && n < s.minLength) return 'minLength';
    if (s.maxLength !== undefined && n > s.maxLength) return 'maxLength';
  }
  if (type(v) === 'number') {
    if (s.minimum !== undefined && v < s.minimum) return 'minimum';
    if (s.maximum !== undefined && v > s.maximum) return 'maximum';
  }
  return '';
}

async function post(route, body) {
  const res = await fetch(`${cluster.router.url}${route}`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

function checkOutput(text, schema, what) {
  let value;
  assert.doesNotThrow(() => { value = JSON.parse(text); }, `${what}: not JSON: ${text}`);
  assert.equal(violation(schema, value), '', `${what}: ${text}`);
}

test('22 schemas x 3 seeds at temperature 1, prefilled on P: every output satisfies its schema', async () => {
  const prefillsBefore = sum(await scrape(cluster.router.metricsUrl), 'tandem:router_prefills_total', { kind: 'remote' });
  let n = 0;
  for (const [i, schema] of schemas.entries()) {
    const runs = [0, 1, 2].map(async (seed) => {
      const chat = seed === 2;
      const body = {
        model: 'stories260K', max_tokens: 400, temperature: 1, seed: seed * 1000 + i,
        response_format: { type: 'json_schema', json_schema: { name: `s${i}`, schema, strict: true } },
        ...(chat ? { messages: [{ role: 'user', content: 'Once upon a time' }] } : { prompt: 'Once upon a time' }),
      };
      const r = await post(chat ? '/v1/chat/completions' : '/v1/completions', body);
      assert.equal(r.status, 200, JSON.stringify(r.json));
      const choice = r.json.choices[0];
      assert.equal(choice.finish_reason, 'stop', `schema ${i}: ${JSON.stringify(choice)}`);
      checkOutput(chat ? choice.message.content : choice.text, schema, `schema ${i} seed ${seed}`);
      n++;
    });
    await Promise.all(runs);
  }
  assert.equal(n, schemas.length * 3);
  const prefills = sum(await scrape(cluster.router.metricsUrl), 'tandem:router_prefills_total', { kind: 'remote' }) - prefillsBefore;
  assert.ok(prefills >= schemas.length, `prompts were prefilled on P (${prefills})`);
});

test('n = 4 choices each follow the grammar; json_object and the grammar extension work', async () => {
  let r = await post('/v1/completions', {
    model: 'stories260K', prompt: 'Once', max_tokens: 400, temperature: 1, n: 4, seed: 5,
    response_format: { type: 'json_schema', json_schema: { name: 'user', schema: schemas[14] } },
  });
  assert.equal(r.status, 200, JSON.stringify(r.json));
  assert.equal(r.json.choices.length, 4);
  for (const c of r.json.choices) checkOutput(c.text, schemas[14], `choice ${c.index}`);
  // any object: strings are unbounded, so the storyteller model may run to
  // max_tokens inside one; what it finished is an object.
  r = await post('/v1/completions', {
    model: 'stories260K', prompt: 'Once', max_tokens: 200, temperature: 1, n: 4, seed: 9,
    response_format: { type: 'json_object' },
  });
  assert.equal(r.status, 200, JSON.stringify(r.json));
  for (const c of r.json.choices) {
    assert.ok(c.text.startsWith('{'), c.text);
    if (c.finish_reason === 'stop') {
      const v = JSON.parse(c.text);
      assert.ok(v !== null && typeof v === 'object' && !Array.isArray(v), c.text);
    }
  }
  r = await post('/v1/chat/completions', {
    model: 'stories260K', messages: [{ role: 'user', content: 'Lily' }], temperature: 1, max_tokens: 20,
    grammar: 'root ::= ("yes" | "no") " " [0-9]{2}',
  });
  assert.equal(r.status, 200, JSON.stringify(r.json));
  assert.match(r.json.choices[0].message.content, /^(yes|no) [0-9]{2}$/);
});

test('a D SIGKILLed mid-stream: migrated requests replay their tokens and stay valid', async () => {
  const schema = schemas[21];
  const STREAMS = 8;
  const migrationsBefore = sum(await scrape(cluster.router.metricsUrl), 'tandem:router_migrations_total');
  const victim = cluster.decode[0];
  const counts = new Array(STREAMS).fill(0);
  let killed = false;
  const streams = [...Array(STREAMS)].map(async (_, i) => {
    const res = await fetch(`${cluster.router.url}/v1/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'stories260K', prompt: 'Once upon a time', max_tokens: 400, temperature: 1, seed: 77 + i, stream: true,
        response_format: { type: 'json_schema', json_schema: { name: 'order', schema } },
      }),
    });
    assert.equal(res.status, 200);
    let text = '';
    let finish = null;
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of res.body) {
      buffer += decoder.decode(chunk, { stream: true });
      let at;
      while ((at = buffer.indexOf('\n\n')) >= 0) {
        const event = buffer.slice(0, at);
        buffer = buffer.slice(at + 2);
        const data = event.replace(/^data: /, '');
        if (data === '[DONE]') continue;
        const msg = JSON.parse(data);
        if (msg.error) throw new Error(JSON.stringify(msg.error));
        text += msg.choices[0]?.text ?? '';
        finish = msg.choices[0]?.finish_reason ?? finish;
        counts[i] += 1;
        if (!killed && counts.every((c) => c >= 3)) { killed = true; victim.kill('SIGKILL'); }
      }
    }
    return { text, finish };
  });
  const results = await Promise.all(streams);
  assert.ok(killed, 'a decode worker was killed');
  results.forEach((r, i) => {
    assert.equal(r.finish, 'stop', `stream ${i}: ${r.text}`);
    checkOutput(r.text, schema, `stream ${i}`);
  });
  const migrations = sum(await scrape(cluster.router.metricsUrl), 'tandem:router_migrations_total') - migrationsBefore;
  console.log(`migrations: ${migrations}`);
});

test('bad schemas and grammars are 400s naming the problem; the server keeps serving', async () => {
  const cases = [
    [{ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'string', pattern: '^a+$' } } } },
      'response_format.json_schema.schema', /keyword 'pattern' at # is not supported/],
    [{ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'strin' } } } },
      'response_format.json_schema.schema', /unknown type 'strin'/],
    [{ response_format: { type: 'json_schema', json_schema: { name: 'x' } } },
      'response_format.json_schema.schema', /is required/],
    [{ response_format: { type: 'yaml' } }, 'response_format.type', /must be 'text', 'json_object' or 'json_schema'/],
    [{ grammar: 'root ::= "a" | (' }, 'grammar', /grammar syntax error at line 1, column 17/],
    [{ grammar: 'root ::= foo' }, 'grammar', /rule 'foo' \(used at line 1, column 10\) is not defined/],
  ];
  for (const [extra, param, message] of cases) {
    const r = await post('/v1/completions', { model: 'stories260K', prompt: 'x', max_tokens: 4, ...extra });
    assert.equal(r.status, 400, JSON.stringify(r.json));
    assert.equal(r.json.error.param, param);
    assert.match(r.json.error.message, message);
  }
  const ok = await post('/v1/completions', { model: 'stories260K', prompt: 'x', max_tokens: 4 });
  assert.equal(ok.status, 200);
});
