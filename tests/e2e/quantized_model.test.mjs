// A quantized GGUF end to end: `tandem model synth --dtype q4_k_m` writes
// llama.cpp's Q4_K_M mix (q4_k and q6_k matrices) with the vendored
// stories260K tokenizer, and `tandem serve --model` on it completes requests
// on the cpu backend's quantized matmuls, greedy and deterministic.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { binary, sourceDir, startServer } from './harness.mjs';

test('tandem serve completes requests on a synthetic Q4_K_M model', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tandem-q4km-'));
  const model = path.join(dir, 'synth-q4_k_m.gguf');
  try {
    const synth = spawnSync(binary, ['model', 'synth', '--format', 'gguf', '--dtype', 'q4_k_m',
      '--shape', 'dim=256,layers=2,heads=4,kv_heads=2,ffn=512,vocab=512', '--seed', '3',
      '--vocab-from', path.join(sourceDir, 'models/stories260K/gguf/stories260K.gguf'),
      '--out', model], { encoding: 'utf8' });
    assert.equal(synth.status, 0, synth.stderr);
    const inspect = spawnSync(binary, ['model', 'inspect', model], { encoding: 'utf8' });
    assert.equal(inspect.status, 0, inspect.stderr);
    assert.match(inspect.stdout, /q4_k/);
    assert.match(inspect.stdout, /q6_k/);

    const server = await startServer(['--model', model, '--served-model-name', 'q4km']);
    try {
      const client = new OpenAI({ baseURL: server.url + '/v1', apiKey: 'x', maxRetries: 0 });
      const ask = () => client.completions.create({
        model: 'q4km', prompt: 'Once upon a time', max_tokens: 12, temperature: 0, ignore_eos: true,
      });
      const first = await ask();
      assert.equal(first.choices.length, 1);
      assert.equal(first.usage.completion_tokens, 12);
      assert.ok(first.choices[0].text.length > 0);
      const again = await ask();
      assert.equal(again.choices[0].text, first.choices[0].text);
    } finally {
      await server.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
