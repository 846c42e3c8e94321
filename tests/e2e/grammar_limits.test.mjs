// Hostile grammars and schemas against the real `tandem serve`: each is a
// 400 (HTTP) or INVALID_ARGUMENT (gRPC) naming the limit it exceeds, and the
// router process never changes. The ~20 KB grammar of 10,000 nested
// parentheses used to overflow the router's stack (SIGSEGV; the supervisor
// restarted it, every stream in flight died).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';
import path from 'node:path';
import { startServer, request, sourceDir } from './harness.mjs';

const MODEL = 'stories260K';
const tandem = grpc.loadPackageDefinition(protoLoader.loadSync('tandem/v1/inference.proto', {
  includeDirs: [path.join(sourceDir, 'proto')], keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true,
})).tandem.v1;

let server;
let grpcClient;
let routerPid;

// the serve process's child whose command line is the router's.
function routerOf(servePid) {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) !== servePid) continue;
      if (/ router /.test(readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' '))) return Number(entry);
    } catch { /* gone */ }
  }
  return undefined;
}

before(async () => {
  server = await startServer();
  grpcClient = new tandem.Inference(`${server.host}:${server.grpcPort}`, grpc.credentials.createInsecure());
  routerPid = routerOf(server.proc.pid);
  assert.ok(routerPid, 'the router process');
});
after(async () => { grpcClient?.close(); await server?.stop(); });

const nested = `root ::= ${'('.repeat(10000)}"a"${')'.repeat(10000)}`;
const refChain = (() => {
  const defs = {};
  for (let i = 0; i < 20000; i++) defs[`d${i}`] = { $ref: `#/$defs/d${i + 1}` };
  defs.d20000 = { type: 'integer' };
  return { $defs: defs, $ref: '#/$defs/d0' };
})();

// [what, grammar or schema, the limit named in the error]
const grammars = [
  ['10,000 nested groups', nested, /groups \( \.\.\. \) nest deeper than 256 levels/],
  ['a rule of 20,000 alternatives', `root ::= ${Array.from({ length: 20000 }, (_, i) => `"w${i}"`).join(' | ')}`,
    /at most 16384 are allowed/],
  ['repetitions expanding past 2^20 elements', 'root ::= ( "abcdefghij"{100000} ){100}', /more than 1048576 elements/],
];
const schemas = [
  ['a chain of 20,000 $refs', refChain, /nests deeper than 64 levels/],
  ['an array index past size_t', { $defs: [{ type: 'integer' }], $ref: '#/$defs/99999999999999999999999999' }, /points at nothing/],
  ['an enum of 5,000 values', { enum: Array.from({ length: 5000 }, (_, i) => `v${i}`) }, /at most 4096 are allowed/],
];

async function assertRouterAlive() {
  assert.equal(routerOf(server.proc.pid), routerPid, 'the router process changed');
  const r = await request(server, 'POST', '/v1/completions', { model: MODEL, prompt: 'Once', max_tokens: 4 });
  assert.equal(r.status, 200, r.text);
}

function generate(req) {
  return new Promise((resolve, reject) => {
    const call = grpcClient.generate(req);
    call.on('data', () => {});
    call.on('error', reject);
    call.on('end', resolve);
  });
}

test('hostile grammars are 400s naming their limit on completions and chat, and the router lives', async () => {
  for (const [what, grammar, limit] of grammars) {
    for (const [route, body] of [
      ['/v1/completions', { model: MODEL, prompt: 'Once', max_tokens: 4, grammar }],
      ['/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: 'Once' }], max_tokens: 4, grammar }],
    ]) {
      const r = await request(server, 'POST', route, body);
      assert.equal(r.status, 400, `${what} ${route}: ${r.text.slice(0, 300)}`);
      assert.equal(r.json.error.param, 'grammar');
      assert.match(r.json.error.message, limit, `${what} ${route}`);
    }
    await assertRouterAlive();
  }
});

test('hostile grammars over gRPC are INVALID_ARGUMENT naming their limit, and the router lives', async () => {
  for (const [what, grammar, limit] of grammars) {
    await assert.rejects(generate({ text: 'Once', params: { max_tokens: 4, grammar } }), (e) => {
      assert.equal(e.code, grpc.status.INVALID_ARGUMENT, `${what}: ${e.message}`);
      assert.match(e.details, limit, what);
      return true;
    });
    await assertRouterAlive();
  }
});

test('hostile JSON schemas are 400s / INVALID_ARGUMENT naming their limit, and the router lives', async () => {
  for (const [what, schema, limit] of schemas) {
    const response_format = { type: 'json_schema', json_schema: { name: 's', schema } };
    const r = await request(server, 'POST', '/v1/chat/completions',
      { model: MODEL, messages: [{ role: 'user', content: 'Once' }], max_tokens: 4, response_format });
    assert.equal(r.status, 400, `${what}: ${r.text.slice(0, 300)}`);
    assert.equal(r.json.error.param, 'response_format.json_schema.schema');
    assert.match(r.json.error.message, limit, what);
    // as a forced tool call's parameters
    const t = await request(server, 'POST', '/v1/chat/completions', {
      model: MODEL, messages: [{ role: 'user', content: 'Once' }], max_tokens: 4,
      tools: [{ type: 'function', function: { name: 'f', parameters: schema } }], tool_choice: 'required',
    });
    assert.equal(t.status, 400, `${what} as tool parameters: ${t.text.slice(0, 300)}`);
    assert.match(t.json.error.message, limit, `${what} as tool parameters`);
    await assert.rejects(generate({
      text: 'Once', params: { max_tokens: 4 },
      response_format: { type: 'RESPONSE_FORMAT_TYPE_JSON_SCHEMA', schema: JSON.stringify(schema) },
    }), (e) => {
      assert.equal(e.code, grpc.status.INVALID_ARGUMENT, `${what} gRPC: ${e.message}`);
      assert.match(e.details, limit, `${what} gRPC`);
      return true;
    });
    await assertRouterAlive();
  }
  // a schema nested past the body's 128 levels, over gRPC (HTTP refuses the body itself).
  const deep = '['.repeat(100000) + ']'.repeat(100000);
  await assert.rejects(generate({
    text: 'Once', params: { max_tokens: 4 },
    response_format: { type: 'RESPONSE_FORMAT_TYPE_JSON_SCHEMA', schema: `{"const":${deep}}` },
  }), (e) => e.code === grpc.status.INVALID_ARGUMENT && /nests deeper than 128 levels/.test(e.details));
  await assertRouterAlive();
});
