// OpenAI clients to OpenAI-kind targets keep every member of their request: the fast path
// replaces the model value and nothing else, so members the gateway does not know
// (service_tier, prediction, store, metadata, reasoning_effort, parallel_tool_calls, and
// whatever OpenAI adds next) reach the upstream as the client wrote them. The sim's
// /_sim/requests shows what the upstream received.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startSim, startGateway } from '../lib/harness.mjs';

let sim, gw;

before(async () => {
  sim = await startSim();
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: warn }
providers:
  oai: { kind: openai, base_url: "${sim.base}", keys: ["sk-pass"], health: { probe: none } }
  compat: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-pass2"], health: { probe: none } }
targets:
  p-oai: { provider: oai, model: pass-oai, capabilities: [text, streaming, tools] }
  p-compat: { provider: compat, model: pass-compat, capabilities: [text, streaming, tools] }
routes:
  pass: { primary: [p-oai] }
  passc: { primary: [p-compat] }
`,
  });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

// Members the gateway has no field for, with nested objects, arrays and odd numbers.
const UNKNOWN = {
  service_tier: 'flex',
  prediction: { type: 'content', content: [{ type: 'text', text: 'predicted ✓' }] },
  store: true,
  metadata: { team: 'search', 'trace-id': 'abc-123' },
  reasoning_effort: 'low',
  parallel_tool_calls: false,
  x_future_field: { nested: { deeper: [1, 2.5, { k: null }], flag: true }, list: ['a', 'b'] },
};
const tools = [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: {} } } }];

async function sent(model, extra) {
  const req = { model, messages: [{ role: 'user', content: 'hello' }], tools, ...UNKNOWN, ...extra };
  const res = await fetch(`${gw.base}/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(req) });
  assert.equal(res.status, 200, await res.clone().text());
  await res.arrayBuffer();
  return req;
}

test('every member the gateway does not know reaches an openai target unchanged', async () => {
  const req = await sent('pass', {});
  const seen = await sim.lastRequest('pass-oai');
  assert.deepEqual(seen.body, { ...req, model: 'pass-oai' });
});

test('... and an openai_compatible one, streamed too', async () => {
  const req = await sent('passc', { stream: true, stream_options: { include_usage: true } });
  const seen = await sim.lastRequest('pass-compat');
  assert.deepEqual(seen.body, { ...req, model: 'pass-compat' });
});

test('the official SDK sends them through the gateway as well', async () => {
  const client = new OpenAI({ baseURL: gw.base, apiKey: 'unused', maxRetries: 0 });
  const done = await client.chat.completions.create({
    model: 'pass', messages: [{ role: 'user', content: 'hi' }], ...UNKNOWN });
  assert.equal(done.object, 'chat.completion');
  const seen = await sim.lastRequest('pass-oai');
  for (const [k, v] of Object.entries(UNKNOWN)) assert.deepEqual(seen.body[k], v, k);
});
