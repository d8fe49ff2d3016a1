// Structured outputs and buffered streams (WORKFLOW_2): an answer that breaks the
// request's contract (response schema, tool parameters) is never delivered as success;
// an approved fallback is tried, and a buffered stream is released only when whole.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startSim, startGateway } from '../lib/harness.mjs';

let sim, gw, client;
const CAPS = 'capabilities: [text, streaming, tools, json_schema, json_object]';

before(async () => {
  sim = await startSim();
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 2
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-st"], health: { probe: none } }
targets:
  js-p: { provider: sim, model: js-p, ${CAPS} }
  js-f: { provider: sim, model: js-f, ${CAPS} }
  lone: { provider: sim, model: js-lone, ${CAPS} }
  tl-p: { provider: sim, model: tl-p, ${CAPS} }
  tl-f: { provider: sim, model: tl-f, ${CAPS} }
  bf-p: { provider: sim, model: bf-p, ${CAPS} }
  bf-f: { provider: sim, model: bf-f, ${CAPS} }
routes:
  schema:
    primary: [js-p]
    fallback: [js-f]
    envelope: { allow_cross_model_fallback: true }
  alone:
    primary: [lone]
  tooled:
    primary: [tl-p]
    fallback: [tl-f]
    envelope: { allow_cross_model_fallback: true }
  buffered:
    primary: [bf-p]
    fallback: [bf-f]
    envelope: { allow_cross_model_fallback: true, on_stream_failure: buffer, max_same_target_attempts: 1 }
`,
  });
  client = new OpenAI({ baseURL: gw.base, apiKey: 'x', maxRetries: 0 });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

const calls = (model) => sim.calls(model);

const response_format = {
  type: 'json_schema',
  json_schema: {
    name: 'answer', strict: true,
    schema: { type: 'object', properties: { answer: { type: 'integer' } }, required: ['answer'], additionalProperties: false },
  },
};

test('a schema-invalid answer falls back to a target whose answer is valid', async () => {
  await sim.setModel('js-p', { content: '{"answer": "forty-two"}' });
  await sim.setModel('js-f', { content: '{"answer": 42}' });
  const { data, response } = await client.chat.completions
    .create({ model: 'schema', response_format, messages: [{ role: 'user', content: 'q' }] })
    .withResponse();
  assert.deepEqual(JSON.parse(data.choices[0].message.content), { answer: 42 });
  assert.equal(response.headers.get('x-bascule-target'), 'js-f');
  assert.equal(response.headers.get('x-bascule-workflow'), 'cross_model_fallback');
  assert.equal(response.headers.get('x-bascule-recovery-reason'), 'contract_failure');
  assert.equal(await calls('js-p'), 1);
  assert.equal(await calls('js-f'), 1);
});

test('no valid candidate left: a typed contract failure, never the invalid answer', async () => {
  await sim.setModel('js-lone', { content: 'not json at all' });
  const res = await fetch(`${gw.base}/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'alone', response_format, messages: [{ role: 'user', content: 'q' }] }) });
  assert.equal(res.status, 502);
  const body = await res.json();
  assert.equal(body.reason, 'contract_failure');
  assert.equal(body.error.code, 'contract_failure');
  assert.match(body.error.message, /response schema/);
  assert.ok(!JSON.stringify(body).includes('not json at all'));
  assert.equal(res.headers.get('x-should-retry'), 'false');
});

test('tool-call arguments invalid against the parameters fall back', async () => {
  const tools = [{ type: 'function', function: { name: 'get_weather',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
  await sim.setModel('tl-p', { tool_arguments: '{"city": 5}' });
  await sim.setModel('tl-f', { tool_arguments: '{"city": "Oslo"}' });
  const { data, response } = await client.chat.completions
    .create({ model: 'tooled', tools, messages: [{ role: 'user', content: 'weather?' }] }).withResponse();
  assert.equal(JSON.parse(data.choices[0].message.tool_calls[0].function.arguments).city, 'Oslo');
  assert.equal(response.headers.get('x-bascule-target'), 'tl-f');
  assert.equal(await calls('tl-p'), 1);
});

test('buffered mode hides a mid-stream failure and delivers the fallback stream whole', async () => {
  await sim.setModel('bf-p', { script: [{ action: 'cut', after_events: 4 }] });
  const res = await fetch(`${gw.base}/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'buffered', stream: true, messages: [{ role: 'user', content: 'q' }] }) });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-bascule-buffered'), 'true');
  assert.equal(res.headers.get('x-bascule-target'), 'bf-f');
  const text = await res.text();
  assert.ok(!text.includes('"error"'), 'no error event reaches the client');
  assert.match(text, /data: \[DONE\]/);
  assert.equal(await calls('bf-p'), 1);
  assert.equal(await calls('bf-f'), 1);
});

test('a buffered stream with a schema is checked before release', async () => {
  await sim.setModel('bf-p', { content: '{"answer": "no"}' });
  await sim.setModel('bf-f', { content: '{"answer": 7}' });
  const stream = await client.chat.completions.create({
    model: 'buffered', stream: true, response_format, messages: [{ role: 'user', content: 'q' }] });
  let text = '';
  for await (const chunk of stream) text += chunk.choices?.[0]?.delta?.content ?? '';
  assert.deepEqual(JSON.parse(text), { answer: 7 });
});
