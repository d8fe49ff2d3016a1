// SPDX-License-Identifier: MIT
// profiles.test.mjs -- `profile:` on openai_compatible providers: a named error dialect
// reaches rules that no host picks (vLLM, Ollama), and only openai_compatible may name one.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { startSim, startGateway, bins } from '../lib/harness.mjs';

const run = promisify(execFile);
let sim, gw;

// Each provider is the same sim; only the error dialect differs.
before(async () => {
  sim = await startSim();
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
providers:
  vllm-box: { kind: openai_compatible, profile: vllm, base_url: "${sim.base}", keys: ["sk-prof"], health: { probe: none } }
  plain-box: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-prof"], health: { probe: none } }
  ollama-box: { kind: openai_compatible, profile: ollama, base_url: "${sim.base}", keys: ["sk-prof"], health: { probe: none } }
  big: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-prof"], health: { probe: none } }
targets:
  small@vllm: { provider: vllm-box, model: pv-small, context_window: 4096 }
  small@plain: { provider: plain-box, model: pp-small, context_window: 4096 }
  llama@ollama: { provider: ollama-box, model: po-llama }
  other@ollama: { provider: big, model: po-other }
  large@big: { provider: big, model: pv-large, context_window: 128000 }
routes:
  vllm: { primary: [small@vllm], fallback: [large@big], envelope: { allow_cross_model_fallback: true } }
  plain: { primary: [small@plain], fallback: [large@big], envelope: { allow_cross_model_fallback: true } }
  ollama: { primary: [llama@ollama], equivalent: [other@ollama] }
`,
  });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

const VLLM_TOO_LONG = "This model's maximum context length is short: your prompt is longer than the maximum model length";

async function chat(model) {
  const res = await fetch(`${gw.base}/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  });
  return { res, body: await res.json() };
}

test('profile: vllm reads vLLM\'s prompt-length refusal as context overflow and falls back', async () => {
  await sim.setModel('pv-small', { script: [{ action: 'status', status: 400, message: 'prompt is longer than the maximum model length (5000 > 4096)', error_type: 'BadRequestError', times: 1 }] });
  const { res, body } = await chat('vllm');
  assert.equal(res.status, 200, JSON.stringify(body));
  assert.equal(res.headers.get('x-bascule-target'), 'large@big');
});

test('without a profile the same answer is the client\'s error: no fallback', async () => {
  await sim.setModel('pp-small', { script: [{ action: 'status', status: 400, message: 'prompt is longer than the maximum model length (5000 > 4096)', error_type: 'BadRequestError', times: 1 }] });
  const { res } = await chat('plain');
  assert.equal(res.status, 400);
  assert.notEqual(res.headers.get('x-bascule-target'), 'large@big');
});

test('profile: ollama reads "try pulling it first" as a missing model: failover', async () => {
  await sim.setModel('po-llama', { script: [{ action: 'status', status: 400, message: "model 'po-llama' not found, try pulling it first", times: 1 }] });
  const { res, body } = await chat('ollama');
  assert.equal(res.status, 200, JSON.stringify(body));
  assert.equal(res.headers.get('x-bascule-target'), 'other@ollama');
});

test('profile on another kind, or an unknown profile, is a config error with its place', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'bsc-prof-'));
  const check = async (provider, want) => {
    const file = path.join(dir, 'g.yaml');
    writeFileSync(file, `providers:
  a: ${provider}
targets:
  t: { provider: a, model: m }
routes:
  r: { primary: [t] }
`);
    await assert.rejects(run(bins.bascule, ['--check-config', file], { timeout: 30_000 }), (e) => {
      assert.equal(e.code, 1);
      assert.match(e.stdout + e.stderr, want);
      return true;
    });
  };
  try {
    await check('{ kind: openai, base_url: "http://127.0.0.1:9/v1", keys: ["k"], profile: vllm }',
      /g\.yaml:2:\d+: error: 'profile' in provider 'a' is only used by kind openai_compatible/);
    await check('{ kind: openai_compatible, base_url: "http://127.0.0.1:9/v1", profile: llamacpp }',
      /g\.yaml:2:\d+: error: .*'llamacpp'.*vllm, ollama/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
