// @grpc/grpc-js (a gRPC implementation other than ours) against the real
// `tandem serve`: Generate, ListModels, health and reflection.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';
import { startServer, oracle, sourceDir } from './harness.mjs';

const here = path.dirname(new URL(import.meta.url).pathname);
const load = (file, includeDirs) => grpc.loadPackageDefinition(protoLoader.loadSync(file, {
  includeDirs, keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true,
}));
const tandem = load('tandem/v1/inference.proto', [path.join(sourceDir, 'proto')]).tandem.v1;
const health = load('health.proto', [path.join(here, 'protos')]).grpc.health.v1;
const reflection = load('reflection.proto', [path.join(here, 'protos')]).grpc.reflection.v1alpha;
const reflectionV1 = load('grpc/reflection/v1/reflection.proto', [path.join(sourceDir, 'proto')]).grpc.reflection.v1;

let server;
let client;
before(async () => {
  server = await startServer();
  client = new tandem.Inference(`${server.host}:${server.grpcPort}`, grpc.credentials.createInsecure());
});
after(async () => { client?.close(); await server?.stop(); });

function generate(req) {
  return new Promise((resolve, reject) => {
    const msgs = [];
    const call = client.generate(req);
    call.on('data', (m) => msgs.push(m));
    call.on('error', reject);
    call.on('end', () => resolve(msgs));
  });
}

test('Generate with text reproduces the greedy oracle, token by token', async () => {
  for (const c of oracle.cases.slice(0, 4)) {
    const msgs = await generate({ text: c.prompt, params: { temperature: 0, max_tokens: 48 } });
    const ids = msgs.flatMap((m) => m.token_ids);
    assert.deepEqual(ids, c.completion_ids, c.prompt);
    assert.equal(msgs.map((m) => m.text).join(''), c.completion_text);
    const last = msgs.at(-1);
    assert.equal(last.finish_reason, 'length');
    assert.equal(last.finish, 'FINISH_REASON_LENGTH');
    assert.equal(last.usage.prompt_tokens, c.prompt_ids.length);
    assert.equal(last.usage.completion_tokens, 48);
    assert.ok(msgs.length >= 48, 'one message per token');
  }
});

test('Generate with token ids, stop strings and logprobs', async () => {
  const c = oracle.cases[0];
  const msgs = await generate({
    token_ids: { ids: c.prompt_ids }, params: { temperature: 0, max_tokens: 48, stop: [' girl'], top_logprobs: 2 },
  });
  const text = msgs.map((m) => m.text).join('');
  assert.equal(text, c.completion_text.slice(0, c.completion_text.indexOf(' girl')));
  assert.equal(msgs.at(-1).finish_reason, 'stop');
  assert.equal(msgs.at(-1).finish, 'FINISH_REASON_STOP');
  assert.equal(msgs.at(-1).stop_reason, ' girl');
  for (const m of msgs) {
    if (m.token_ids.length === 0) continue;
    assert.equal(m.logprobs.length, 1);
    assert.equal(m.top_logprobs[0].top.length, 2);
    assert.equal(m.top_logprobs[0].top[0].token_id, m.token_ids[0]);
  }
});

test('Generate rejects bad requests with INVALID_ARGUMENT and NOT_FOUND', async () => {
  await assert.rejects(generate({ text: 'x', params: { temperature: -1 } }),
    (e) => e.code === grpc.status.INVALID_ARGUMENT);
  await assert.rejects(generate({ text: '', params: {} }),
    (e) => e.code === grpc.status.INVALID_ARGUMENT);
  await assert.rejects(generate({ model: 'nope', text: 'x', params: {} }),
    (e) => e.code === grpc.status.NOT_FOUND);
  await assert.rejects(generate({ token_ids: { ids: [1, 1 << 30] }, params: {} }),
    (e) => e.code === grpc.status.INVALID_ARGUMENT);
});

test('ListModels names the served model', async () => {
  const r = await new Promise((res, rej) => client.listModels({}, (e, v) => (e ? rej(e) : res(v))));
  assert.equal(r.models.length, 1);
  assert.equal(r.models[0].id, 'stories260K');
  assert.ok(r.models[0].max_context > 0);
});

test('grpc.health.v1.Health says SERVING for the server and for tandem.v1.Inference', async () => {
  const h = new health.Health(`${server.host}:${server.grpcPort}`, grpc.credentials.createInsecure());
  for (const service of ['', 'tandem.v1.Inference']) {
    const r = await new Promise((res, rej) => h.check({ service }, (e, v) => (e ? rej(e) : res(v))));
    assert.equal(r.status, 'SERVING', service);
  }
  h.close();
});

// grpcurl's first question: v1 (grpcurl 1.9 and later), then v1alpha.
for (const [version, pkg] of [['v1', reflectionV1], ['v1alpha', reflection]]) {
  test(`server reflection ${version} lists tandem.v1.Inference`, async () => {
    const r = new pkg.ServerReflection(`${server.host}:${server.grpcPort}`, grpc.credentials.createInsecure());
    const names = await new Promise((res, rej) => {
      const call = r.serverReflectionInfo();
      call.on('data', (m) => { res(m.list_services_response.service.map((s) => s.name)); call.end(); });
      call.on('error', rej);
      call.write({ list_services: '' });
    });
    for (const name of ['tandem.v1.Inference', 'grpc.health.v1.Health', 'grpc.reflection.v1.ServerReflection',
      'grpc.reflection.v1alpha.ServerReflection']) {
      assert.ok(names.includes(name), `${name} missing from ${names.join(',')}`);
    }
    r.close();
  });
}

test('a cancelled call stops its generation', async () => {
  const call = client.generate({ text: 'Once upon a time', params: { temperature: 0, max_tokens: 400, ignore_eos: true } });
  let n = 0;
  await new Promise((resolve) => {
    call.on('data', () => { if (++n === 3) call.cancel(); });
    call.on('error', (e) => { assert.equal(e.code, grpc.status.CANCELLED); resolve(); });
    call.on('end', resolve);
  });
  assert.ok(n < 400);
});
