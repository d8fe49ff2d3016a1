// Parameters a target cannot honour make it ineligible, like a capability it lacks: n > 1
// or logprobs never reach an Anthropic target. A mixed route serves them from the OpenAI
// target; a route left with no target that can is a 400 invalid_request_error naming the
// parameter (code unsupported_parameter), with no upstream call -- never a 502.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startSim, startGateway } from '../lib/harness.mjs';

let sim, gw;

before(async () => {
  sim = await startSim();
  const caps = 'capabilities: [text, streaming, tools, json_schema]';
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: warn }
retry: { budget: { ratio: 10, min_per_s: 1000, window_ms: 10000 } }
providers:
  ant: { kind: anthropic, base_url: "${sim.url}/anthropic/v1", keys: ["sk-ant-p"], health: { probe: none } }
  gem: { kind: gemini, base_url: "${sim.url}/v1beta", keys: ["sk-gem-p"], health: { probe: none } }
  oai: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-oai-p"], health: { probe: none } }
targets:
  a-only: { provider: ant, model: claude-only, ${caps} }
  a-fb: { provider: ant, model: claude-fb, ${caps} }
  a-first: { provider: ant, model: claude-first, ${caps} }
  o-mixed: { provider: oai, model: gpt-mixed, ${caps} }
  o-second: { provider: oai, model: gpt-second, ${caps} }
  o-down: { provider: oai, model: gpt-down, ${caps} }
  g-only: { provider: gem, model: gemini-3-only, ${caps} }
routes:
  anth: { primary: [a-only] }
  gem: { primary: [g-only] }
  mixed:
    primary: [o-mixed]
    fallback: [a-fb]
    envelope: { allow_cross_model_fallback: true }
  antfirst:
    primary: [a-first]
    equivalent: [o-second]
  downmixed:
    primary: [o-down]
    fallback: [a-fb]
    envelope: { max_same_target_attempts: 1, allow_cross_model_fallback: true }
`,
  });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

function chat(model, extra = {}) {
  return fetch(`${gw.base}/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], ...extra }) });
}

async function refused(res, param) {
  assert.equal(res.status, 400, await res.clone().text());
  const body = await res.json();
  assert.equal(body.error.type, 'invalid_request_error');
  assert.equal(body.error.code, 'unsupported_parameter');
  assert.equal(body.error.param, param);
  assert.match(body.error.message, new RegExp(`'${param}'`));
  assert.equal(res.headers.get('x-should-retry'), 'false');
  assert.equal(res.headers.get('retry-after'), null);
  return body;
}

test('n: 2 on an Anthropic-only route is a 400 naming n, with no upstream call', async () => {
  await refused(await chat('anth', { n: 2 }), 'n');
  assert.equal(await sim.calls('claude-only'), 0);
});

test('logprobs, top_logprobs and logit_bias on an Anthropic-only route name themselves', async () => {
  await refused(await chat('anth', { logprobs: true }), 'logprobs');
  await refused(await chat('anth', { top_logprobs: 2 }), 'top_logprobs');
  await refused(await chat('anth', { logit_bias: { 50256: -100 } }), 'logit_bias');
  await refused(await chat('anth', { modalities: ['text', 'audio'] }), 'modalities');
  assert.equal(await sim.calls('claude-only'), 0);
});

test('names and values are read decoded: "\\u006e" is n', async () => {
  const res = await fetch(`${gw.base}/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: '{"model":"anth","messages":[{"role":"user","content":"hi"}],"\\u006e":2}' });
  await refused(res, 'n');
});

test('what the target can honour still goes through: n: 1, logprobs: false', async () => {
  const res = await chat('anth', { n: 1, logprobs: false, logit_bias: {} });
  assert.equal(res.status, 200, await res.clone().text());
  await res.arrayBuffer();
  assert.equal(await sim.calls('claude-only'), 1);
});

test('gemini takes n up to 8 and refuses logprobs', async () => {
  // Eligible: the request goes out as candidateCount (the sim itself answers one only).
  await (await chat('gem', { n: 2 })).arrayBuffer();
  assert.equal((await sim.lastRequest('gemini-3-only')).body.generationConfig.candidateCount, 2);
  const calls = await sim.calls('gemini-3-only');
  await refused(await chat('gem', { n: 9 }), 'n');
  await refused(await chat('gem', { logprobs: true }), 'logprobs');
  assert.equal(await sim.calls('gemini-3-only'), calls);
});

test('a mixed route serves n: 2 from its OpenAI target', async () => {
  const client = new OpenAI({ baseURL: gw.base, apiKey: 'unused', maxRetries: 0 });
  const { data, response } = await client.chat.completions.create(
    { model: 'mixed', messages: [{ role: 'user', content: 'hi' }], n: 2 }).withResponse();
  assert.equal(response.headers.get('x-bascule-target'), 'o-mixed');
  assert.ok(data.choices.length >= 1);
  assert.equal((await sim.lastRequest('gpt-mixed')).body.n, 2);
  assert.equal(await sim.calls('claude-fb'), 0);
});

test('an Anthropic primary is passed over for its OpenAI equivalent', async () => {
  const res = await chat('antfirst', { logprobs: true, top_logprobs: 2 });
  assert.equal(res.status, 200, await res.clone().text());
  await res.arrayBuffer();
  assert.equal(res.headers.get('x-bascule-target'), 'o-second');
  assert.equal(await sim.calls('claude-first'), 0);
});

test('when the OpenAI target fails, the Anthropic fallback is not tried: a retryable 503', async () => {
  await sim.setModel('gpt-down', { script: [{ action: 'status', status: 500, times: 1 }] });
  const before = await sim.calls('claude-fb');
  const res = await chat('downmixed', { n: 2 });
  assert.equal(res.status, 503, await res.clone().text());
  const body = await res.json();
  assert.equal(body.reason, 'no_eligible_fallback');
  assert.equal(body.retryable, true, 'the server error may pass');
  assert.equal(await sim.calls('claude-fb'), before, 'never sent where n cannot be honoured');
});
