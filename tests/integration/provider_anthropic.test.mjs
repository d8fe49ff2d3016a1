// The anthropic provider kind end to end: the official openai SDK talks to bascule, whose
// targets are bascule-sim speaking the Anthropic Messages API (under /anthropic/v1). Plain,
// streamed, tools with a full round trip, response_format json_schema (the forced-tool
// emulation), usage, and the failure paths: 529 failover, 429 with retry-after, mid-stream
// error events before and after the first byte, a bad key, context overflow, a cut stream,
// a cross-provider fallback from an OpenAI-dialect model, and both health probe kinds.
// Every scenario has its own route and upstream model, so scripts and breakers never leak.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startSim, startGateway, waitFor } from '../lib/harness.mjs';
import { drain, weatherTool } from '../lib/sdk_stream.mjs';

const ADMIN = 'anthropic-admin-key-0123456789';
const TEXT = 'Hello héllo wörld! This is bascule-sim ✓ streaming 🚀 tokens';
const CAPS = 'capabilities: [text, streaming, tools, json_schema]';
let sim, gw, client;

function config(simUrl, simBase) {
  const ant = `kind: anthropic, base_url: "${simUrl}/anthropic/v1"`;
  return `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: warn }
admin: { key: "${ADMIN}" }
retry:
  backoff: { base_ms: 50, max_ms: 400, jitter: 0.2 }
  budget: { ratio: 10, min_per_s: 1000, window_ms: 10000 }
providers:
  ant: { ${ant}, keys: ["sk-ant-main"], health: { probe: none } }
  antkeys: { ${ant}, keys: ["sk-sim-bad-1", "sk-ant-good"], health: { probe: none } }
  antprobe: { ${ant}, keys: ["sk-ant-probe"], health: { interval_ms: 150, probe: models } }
  antprobec: { ${ant}, keys: ["sk-ant-probec"], health: { interval_ms: 150, probe: completion } }
  oai: { kind: openai_compatible, base_url: "${simBase}", keys: ["sk-oai"], health: { probe: none } }
targets:
  a-plain: { provider: ant, model: claude-plain, ${CAPS} }
  a-capped: { provider: ant, model: claude-capped, ${CAPS}, max_output_tokens: 3 }
  a-over-p: { provider: ant, model: claude-over-p, ${CAPS} }
  a-over-e: { provider: ant, model: claude-over-e, ${CAPS} }
  a-rl: { provider: ant, model: claude-rl, ${CAPS} }
  a-late-p: { provider: ant, model: claude-late-p, ${CAPS} }
  a-late-e: { provider: ant, model: claude-late-e, ${CAPS} }
  a-early-p: { provider: ant, model: claude-early-p, ${CAPS} }
  a-early-e: { provider: ant, model: claude-early-e, ${CAPS} }
  a-cut: { provider: ant, model: claude-cut, ${CAPS} }
  a-ctx: { provider: ant, model: claude-ctx, ${CAPS} }
  a-keys: { provider: antkeys, model: claude-keys, ${CAPS} }
  a-probe: { provider: antprobe, model: claude-probe, ${CAPS} }
  a-probec: { provider: antprobec, model: claude-probec, ${CAPS} }
  o-xfb: { provider: oai, model: gpt-xfb, ${CAPS} }
  a-xfb: { provider: ant, model: claude-xfb, ${CAPS} }
routes:
  plain: { primary: [a-plain] }
  capped: { primary: [a-capped] }
  over:
    primary: [a-over-p]
    equivalent: [a-over-e]
    envelope: { max_same_target_attempts: 1 }
  rl:
    primary: [a-rl]
    envelope: { max_same_target_attempts: 2, deadline_ms: 10000 }
  late:
    primary: [a-late-p]
    equivalent: [a-late-e]
    envelope: { max_same_target_attempts: 1 }
  early:
    primary: [a-early-p]
    equivalent: [a-early-e]
    envelope: { max_same_target_attempts: 1 }
  cut: { primary: [a-cut], envelope: { max_same_target_attempts: 1 } }
  ctx: { primary: [a-ctx] }
  keys: { primary: [a-keys] }
  probe: { primary: [a-probe] }
  probec: { primary: [a-probec] }
  xfb:
    primary: [o-xfb]
    fallback: [a-xfb]
    envelope: { max_same_target_attempts: 1, allow_cross_model_fallback: true }
`;
}

before(async () => {
  sim = await startSim();
  gw = await startGateway({ config: config(sim.url, sim.base) });
  client = new OpenAI({ baseURL: gw.base, apiKey: 'client-key', maxRetries: 0 });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

const calls = (model) => sim.calls(model);

const lastRequest = (model) => sim.lastRequest(model);

test('plain: the Messages request is well-formed and the answer is OpenAI-shaped', async () => {
  const res = await client.chat.completions.create({
    model: 'plain',
    messages: [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hi there' },
    ],
    temperature: 1.4,
    stop: ['###'],
    user: 'user-7',
  });
  assert.equal(res.object, 'chat.completion');
  assert.equal(res.choices[0].message.role, 'assistant');
  assert.equal(res.choices[0].message.content, TEXT);
  assert.equal(res.choices[0].finish_reason, 'stop');
  assert.match(res.id, /^msg_sim_\d+$/);
  assert.ok(res.usage.prompt_tokens > 0);
  assert.equal(res.usage.completion_tokens, 12);
  assert.equal(res.usage.total_tokens, res.usage.prompt_tokens + 12);
  assert.equal(res.usage.prompt_tokens_details.cached_tokens, 0);

  const seen = await lastRequest('claude-plain');
  assert.equal(seen.path, '/anthropic/v1/messages');
  assert.equal(seen.outcome, 'ok');
  assert.equal(seen.headers['x-api-key'], 'sk-ant-main');
  assert.equal(seen.headers['anthropic-version'], '2023-06-01');
  assert.equal(seen.headers.authorization, undefined);
  assert.equal(seen.body.model, 'claude-plain');
  assert.equal(seen.body.system, 'Be brief.');
  assert.deepEqual(seen.body.messages, [{ role: 'user', content: [{ type: 'text', text: 'Hi there' }] }]);
  assert.equal(seen.body.max_tokens, 4096);
  assert.equal(seen.body.temperature, 1);
  assert.deepEqual(seen.body.stop_sequences, ['###']);
  assert.deepEqual(seen.body.metadata, { user_id: 'user-7' });
  assert.equal(seen.body.stream, undefined);
});

test('streaming: text deltas, one role, finish stop, and the usage chunk when asked', async () => {
  const stream = await client.chat.completions.create({
    model: 'plain',
    messages: [{ role: 'user', content: 'Stream please' }],
    stream: true,
    stream_options: { include_usage: true },
  });
  const out = await drain(stream);
  assert.equal(out.text, TEXT);
  assert.equal(out.finish, 'stop');
  assert.equal(out.roles, 1);
  assert.ok(out.usage, 'a usage chunk');
  assert.equal(out.usage.completion_tokens, 12);
  assert.ok(out.usage.prompt_tokens > 0);
  const seen = await lastRequest('claude-plain');
  assert.equal(seen.body.stream, true);
  assert.equal(seen.body.stream_options, undefined, 'no OpenAI-only field leaks upstream');

  // Without include_usage there is no usage chunk.
  const quiet = await drain(await client.chat.completions.create({
    model: 'plain', messages: [{ role: 'user', content: 'Again' }], stream: true }));
  assert.equal(quiet.text, TEXT);
  assert.equal(quiet.usage, null);
});

test('max_tokens from the target caps the answer: finish length', async () => {
  const res = await client.chat.completions.create({
    model: 'capped', messages: [{ role: 'user', content: 'Long answer please' }] });
  assert.equal(res.choices[0].message.content, 'Hello héllo wörld');
  assert.equal(res.choices[0].finish_reason, 'length');
  assert.equal((await lastRequest('claude-capped')).body.max_tokens, 3);
  const res2 = await client.chat.completions.create({
    model: 'capped', messages: [{ role: 'user', content: 'x' }], max_completion_tokens: 2 });
  assert.equal(res2.choices[0].message.content, 'Hello héllo');
  assert.equal((await lastRequest('claude-capped')).body.max_tokens, 2);
});

test('tools: a full round trip, non-streamed then streamed', async () => {
  const messages = [{ role: 'user', content: 'Weather in Oslo?' }];
  const first = await client.chat.completions.create({
    model: 'plain', messages, tools: [weatherTool], tool_choice: 'auto', parallel_tool_calls: false });
  const msg = first.choices[0].message;
  assert.equal(first.choices[0].finish_reason, 'tool_calls');
  assert.equal(msg.content, 'Let me call get_weather.');
  assert.equal(msg.tool_calls.length, 1);
  const call = msg.tool_calls[0];
  assert.equal(call.type, 'function');
  assert.equal(call.function.name, 'get_weather');
  assert.match(call.id, /^toolu_sim_\d+$/);
  assert.deepEqual(JSON.parse(call.function.arguments), { city: 'Oslo' });
  let seen = await lastRequest('claude-plain');
  assert.deepEqual(seen.body.tools, [{
    name: 'get_weather', description: 'Current weather for a city',
    input_schema: weatherTool.function.parameters }]);
  assert.deepEqual(seen.body.tool_choice, { type: 'auto', disable_parallel_tool_use: true });

  // The next turn: the assistant's call and the tool's result go back.
  messages.push(msg, { role: 'tool', tool_call_id: call.id, content: '{"temp_c":4}' });
  const second = await client.chat.completions.create({ model: 'plain', messages, tools: [weatherTool] });
  assert.equal(second.choices[0].finish_reason, 'stop');
  assert.equal(second.choices[0].message.content, TEXT);
  seen = await lastRequest('claude-plain');
  assert.deepEqual(seen.body.messages[1], {
    role: 'assistant',
    content: [
      { type: 'text', text: 'Let me call get_weather.' },
      { type: 'tool_use', id: call.id, name: 'get_weather', input: { city: 'Oslo' } },
    ],
  });
  assert.deepEqual(seen.body.messages[2], {
    role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '{"temp_c":4}' }] });

  // Streamed: index 0 although the Anthropic block index is 1; id and name once.
  const out = await drain(await client.chat.completions.create({
    model: 'plain', messages: [{ role: 'user', content: 'Wetter in Zürich?' }],
    tools: [weatherTool], stream: true }));
  assert.equal(out.finish, 'tool_calls');
  assert.equal(out.text, 'Let me call get_weather.');
  assert.equal(out.toolCalls.length, 1);
  assert.equal(out.toolCalls[0].name, 'get_weather');
  assert.match(out.toolCalls[0].id, /^toolu_sim_\d+$/);
  assert.deepEqual(JSON.parse(out.toolCalls[0].arguments), { city: 'Oslo' });
});

test('response_format json_schema is answered through one forced tool', async () => {
  const schema = { type: 'object', properties: { echo: { type: 'string' } }, required: ['echo'] };
  const res = await client.chat.completions.create({
    model: 'plain',
    messages: [{ role: 'user', content: 'Give JSON' }],
    response_format: { type: 'json_schema', json_schema: { name: 'echo', schema } },
  });
  assert.equal(res.choices[0].finish_reason, 'stop');
  assert.equal(res.choices[0].message.tool_calls, undefined);
  assert.deepEqual(JSON.parse(res.choices[0].message.content), { echo: 'sample' });
  const seen = await lastRequest('claude-plain');
  assert.deepEqual(seen.body.tool_choice, { type: 'tool', name: 'json_response' });
  assert.deepEqual(seen.body.tools[0].input_schema, schema);
  assert.equal(seen.body.response_format, undefined);

  const out = await drain(await client.chat.completions.create({
    model: 'plain', messages: [{ role: 'user', content: 'Stream JSON' }], stream: true,
    response_format: { type: 'json_schema', json_schema: { name: 'echo', schema } } }));
  assert.equal(out.finish, 'stop');
  assert.equal(out.toolCalls.length, 0);
  assert.deepEqual(JSON.parse(out.text), { echo: 'sample' });
});

test('a request Anthropic cannot express is refused before any upstream call', async () => {
  const before = await calls('claude-plain');
  await assert.rejects(
    client.chat.completions.create({ model: 'plain', messages: [{ role: 'user', content: 'x' }], n: 2 }),
    (err) => err.status >= 400 && err.status < 600);
  assert.equal(await calls('claude-plain'), before);
});

test('529 overloaded on the primary fails over to the equivalent target', async () => {
  await sim.setModel('claude-over-p', { script: [{ action: 'status', status: 529 }] });
  const res = await client.chat.completions.create(
    { model: 'over', messages: [{ role: 'user', content: 'x' }] }).withResponse();
  assert.equal(res.data.choices[0].message.content, TEXT);
  assert.equal(res.response.headers.get('x-bascule-target'), 'a-over-e');
  assert.equal(await calls('claude-over-p'), 1);
  assert.equal(await calls('claude-over-e'), 1);
  const failed = await lastRequest('claude-over-p');
  assert.equal(failed.outcome, 'status');
});

test('429 rate_limit_error with retry-after: the same target again after the wait', async () => {
  await sim.setModel('claude-rl', {
    script: [{
      action: 'status', status: 429,
      headers: {
        'retry-after': '1',
        'anthropic-ratelimit-requests-limit': '50',
        'anthropic-ratelimit-requests-remaining': '0',
        'anthropic-ratelimit-requests-reset': '2030-01-01T00:00:00Z',
      },
    }],
  });
  const t0 = Date.now();
  const res = await client.chat.completions.create({ model: 'rl', messages: [{ role: 'user', content: 'x' }] });
  assert.equal(res.choices[0].message.content, TEXT);
  assert.ok(Date.now() - t0 >= 900, `waited ${Date.now() - t0} ms for retry-after: 1`);
  assert.equal(await calls('claude-rl'), 2);
});

test('a mid-stream error event after the first byte ends the client stream with an error', async () => {
  // message_start, content_block_start, ping, one text delta: then `event: error`.
  await sim.setModel('claude-late-p', {
    script: [{ action: 'error_200', after_events: 4, error_type: 'overloaded_error', message: 'Overloaded' }],
  });
  const stream = await client.chat.completions.create({
    model: 'late', messages: [{ role: 'user', content: 'x' }], stream: true });
  let text = '';
  await assert.rejects(async () => {
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  }, (err) => {
    assert.ok(err instanceof OpenAI.APIError, `an APIError, got ${err}`);
    return true;
  });
  assert.equal(text, 'Hello', 'what was relayed before the error stays');
  assert.equal(await calls('claude-late-e'), 0, 'no failover after the commit point');
});

test('a mid-stream error event before any content fails over invisibly', async () => {
  await sim.setModel('claude-early-p', {
    script: [{ action: 'error_200', after_events: 3, error_type: 'overloaded_error', message: 'Overloaded' }],
  });
  const out = await drain(await client.chat.completions.create({
    model: 'early', messages: [{ role: 'user', content: 'x' }], stream: true,
    stream_options: { include_usage: true } }));
  assert.equal(out.text, TEXT);
  assert.equal(out.finish, 'stop');
  assert.equal(out.roles, 1);
  assert.equal(await calls('claude-early-p'), 1);
  assert.equal(await calls('claude-early-e'), 1);
});

test('a stream cut without message_stop is a partial failure, not a clean end', async () => {
  await sim.setModel('claude-cut', { script: [{ action: 'cut', after_events: 6 }] });
  const stream = await client.chat.completions.create({
    model: 'cut', messages: [{ role: 'user', content: 'x' }], stream: true });
  let text = '';
  await assert.rejects(async () => {
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  });
  assert.ok(text.length > 0 && TEXT.startsWith(text), `a prefix was relayed: "${text}"`);
});

test('prompt too long is context_length_exceeded for the client, not retried', async () => {
  await sim.setModel('claude-ctx', {
    script: [{ action: 'status', status: 400, message: 'prompt is too long: 208656 tokens > 200000 maximum' }],
  });
  await assert.rejects(
    client.chat.completions.create({ model: 'ctx', messages: [{ role: 'user', content: 'x' }] }),
    (err) => {
      assert.equal(err.status, 400);
      assert.equal(err.code, 'context_length_exceeded');
      return true;
    });
  assert.equal(await calls('claude-ctx'), 1);
});

test('a refused key (401 authentication_error) rotates to the next key', async () => {
  const res = await client.chat.completions.create({ model: 'keys', messages: [{ role: 'user', content: 'x' }] });
  assert.equal(res.choices[0].message.content, TEXT);
  const log = await sim.requests('claude-keys');
  assert.deepEqual(log.map((e) => e.headers['x-api-key']), ['sk-sim-bad-1', 'sk-ant-good']);
  assert.equal(log[0].outcome, 'unauthorized');
});

test('cross-provider fallback: OpenAI-dialect primary 503, Anthropic fallback, tools round trip', async () => {
  await sim.setModel('gpt-xfb', { script: [{ action: 'status', status: 503, times: 2 }] });
  const messages = [{ role: 'user', content: 'Weather in Bergen?' }];
  const first = await client.chat.completions.create({ model: 'xfb', messages, tools: [weatherTool] })
    .withResponse();
  assert.equal(first.response.headers.get('x-bascule-target'), 'a-xfb');
  const msg = first.data.choices[0].message;
  assert.equal(first.data.object, 'chat.completion');
  assert.equal(first.data.choices[0].finish_reason, 'tool_calls');
  assert.equal(msg.tool_calls[0].type, 'function');
  assert.equal(msg.tool_calls[0].function.name, 'get_weather');
  assert.equal(typeof msg.tool_calls[0].function.arguments, 'string');
  assert.deepEqual(JSON.parse(msg.tool_calls[0].function.arguments), { city: 'Oslo' });

  messages.push(msg, { role: 'tool', tool_call_id: msg.tool_calls[0].id, content: 'rain, 9 C' });
  const second = await client.chat.completions.create({ model: 'xfb', messages, tools: [weatherTool] })
    .withResponse();
  assert.equal(second.response.headers.get('x-bascule-target'), 'a-xfb');
  assert.equal(second.data.choices[0].message.content, TEXT);
  const seen = await lastRequest('claude-xfb');
  const turn = seen.body.messages[seen.body.messages.length - 1];
  assert.equal(turn.role, 'user');
  assert.deepEqual(turn.content, [
    { type: 'tool_result', tool_use_id: msg.tool_calls[0].id, content: 'rain, 9 C' }]);
  assert.equal(await calls('gpt-xfb'), 2);
});

test('health probes: GET /models and a one-token message, with the Anthropic headers', async () => {
  await waitFor(async () => {
    const log = await sim.requests();
    return log.some((e) => e.path === '/anthropic/v1/models' && e.headers['x-api-key'] === 'sk-ant-probe');
  }, { timeoutMs: 5000, what: 'a models probe' });
  const probe = (await sim.requests()).find(
    (e) => e.path === '/anthropic/v1/models' && e.headers['x-api-key'] === 'sk-ant-probe');
  assert.equal(probe.method, 'GET');
  assert.equal(probe.headers['anthropic-version'], '2023-06-01');
  assert.equal(probe.outcome, 'models');

  await waitFor(async () => (await calls('claude-probec')) > 0, { timeoutMs: 5000, what: 'a completion probe' });
  const c = await lastRequest('claude-probec');
  assert.equal(c.path, '/anthropic/v1/messages');
  assert.equal(c.headers['x-api-key'], 'sk-ant-probec');
  assert.equal(c.body.max_tokens, 1);
  assert.equal(c.outcome, 'ok');

  const res = await fetch(`${gw.url}/admin/targets`, { headers: { authorization: `Bearer ${ADMIN}` } });
  const t = Object.fromEntries((await res.json()).targets.map((x) => [x.id, x]));
  await waitFor(async () => {
    const r = await fetch(`${gw.url}/admin/targets`, { headers: { authorization: `Bearer ${ADMIN}` } });
    const all = Object.fromEntries((await r.json()).targets.map((x) => [x.id, x]));
    return all['a-probe'].health === 'up' && all['a-probec'].health === 'up';
  }, { timeoutMs: 5000, what: 'probed targets up' });
  assert.ok(t['a-probe']);
});
