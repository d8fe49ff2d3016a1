// context.overflow: trim -- a conversation longer than the chosen target's window loses its
// oldest turns, per attempt: system messages and the last keep_last stay, an assistant tool
// call and its results go or stay together, one system message says how many were omitted,
// and x-bascule-trimmed-messages says it to the client. A fallback with a smaller window
// trims further, one with a larger window gets the whole conversation (each attempt starts
// from the client's messages). Without trim (the default `fail`) a request too large for
// every target is a 400 before any upstream call. /v1/messages is trimmed too, on the
// translation path and instead of the Anthropic pass-through. The sim's /_sim/requests
// shows what each upstream received.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startSim, startGateway } from '../lib/harness.mjs';

const CAPS = 'capabilities: [text, streaming, tools]';
let sim, gw;

before(async () => {
  sim = await startSim();
  const ant = `kind: anthropic, base_url: "${sim.url}/anthropic/v1"`;
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 1
log: { level: warn }
providers:
  oai: { kind: openai, base_url: "${sim.base}", keys: ["sk-trim"], health: { probe: none } }
  ant: { ${ant}, keys: ["sk-ant-trim"], health: { probe: none } }
  compat: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-compat"], health: { probe: none } }
targets:
  t-mid: { provider: oai, model: trim-mid, context_window: 800, ${CAPS} }
  t-mid-fail: { provider: oai, model: trim-mid-fail, context_window: 800, ${CAPS} }
  t-small: { provider: oai, model: trim-small, context_window: 550, ${CAPS} }
  t-small-fail: { provider: oai, model: trim-small-fail, context_window: 550, ${CAPS} }
  t-big: { provider: oai, model: trim-big, context_window: 100000, ${CAPS} }
  t-strict: { provider: oai, model: trim-strict, context_window: 550, ${CAPS} }
  t-ant: { provider: ant, model: claude-trim, context_window: 800, ${CAPS} }
  t-compat: { provider: compat, model: trim-compat, context_window: 550, ${CAPS} }
routes:
  trim: { primary: [t-mid], context: { overflow: trim, keep_last: 2 } }
  smaller:
    primary: [t-mid-fail]
    fallback: [t-small]
    envelope: { max_same_target_attempts: 1, allow_cross_model_fallback: true }
    context: { overflow: trim, keep_last: 2 }
  larger:
    primary: [t-small-fail]
    fallback: [t-big]
    envelope: { max_same_target_attempts: 1, allow_cross_model_fallback: true }
    context: { overflow: trim, keep_last: 2 }
  strict: { primary: [t-strict] }
  too-long-tail: { primary: [t-strict], context: { overflow: trim, keep_last: 12 } }
  ant-trim: { primary: [t-ant], context: { overflow: trim, keep_last: 2 } }
  oai-from-ant: { primary: [t-small], context: { overflow: trim, keep_last: 2 } }
  resp-trim: { primary: [t-compat], context: { overflow: trim, keep_last: 2 } }
`,
  });
  await sim.setModel('trim-mid-fail', { script: [{ action: 'status', status: 503, times: 100000 }] });
  await sim.setModel('trim-small-fail', { script: [{ action: 'status', status: 503, times: 100000 }] });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

// About 330 bytes per message: 13 messages are ~1100 tokens by the gateway's estimate.
const fill = (tag) => `${tag} ${'lorem ipsum '.repeat(26)}`;
const tools = [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: {} } } }];

function conversation() {
  return [
    { role: 'system', content: 'You are terse.' },
    { role: 'user', content: fill('u1') },
    { role: 'assistant', content: fill('a1') },
    { role: 'user', content: fill('u2') },
    { role: 'assistant', content: null,
      tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: fill('r1') },
    { role: 'assistant', content: fill('a2') },
    { role: 'user', content: fill('u3') },
    { role: 'assistant', content: null,
      tool_calls: [{ id: 'call_2', type: 'function', function: { name: 'lookup', arguments: '{}' } }] },
    { role: 'tool', tool_call_id: 'call_2', content: fill('r2') },
    { role: 'assistant', content: fill('a3') },
    { role: 'user', content: fill('u4') },
    { role: 'assistant', content: fill('a4') },
    { role: 'user', content: fill('u5') },
  ];
}

async function chat(model, messages = conversation()) {
  const res = await fetch(`${gw.base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages, tools, max_tokens: 100 }),
  });
  const body = await res.json();
  return { res, body };
}

const MARKER = /^\[(\d+) earlier messages omitted\]$/;

// What the upstream received is the original minus a run of dropped messages, with one
// marker after the leading system message; tool calls keep their results. Returns N.
function checkTrimmed(sent, got, keepLast) {
  assert.equal(got[0].role, 'system');
  assert.equal(got[0].content, sent[0].content);
  assert.equal(got[1].role, 'system');
  const m = MARKER.exec(got[1].content);
  assert.ok(m, `marker expected, got ${JSON.stringify(got[1])}`);
  const n = Number(m[1]);
  assert.equal(got.length, sent.length - n + 1);
  assert.deepEqual(got.slice(2), sent.slice(1 + n), 'the kept messages are the newest, unchanged');
  assert.deepEqual(got.slice(-keepLast), sent.slice(-keepLast));
  assert.equal(got[2].role, 'user', 'the kept history starts at a user turn');
  for (let i = 2; i < got.length; i++) {
    if (got[i].role === 'tool') assert.ok(got[i - 1].tool_calls || got[i - 1].role === 'tool', 'a result keeps its call');
    if (got[i].tool_calls) assert.equal(got[i + 1].role, 'tool', 'a call keeps its result');
  }
  return n;
}

test('trim drops the oldest turns to fit the window, keeping system and the last turns', async () => {
  const sent = conversation();
  const { res, body } = await chat('trim', sent);
  assert.equal(res.status, 200, JSON.stringify(body));
  const got = (await sim.lastRequest('trim-mid')).body.messages;
  assert.ok(got.length < sent.length, `${got.length} < ${sent.length}`);
  const n = checkTrimmed(sent, got, 2);
  assert.equal(res.headers.get('x-bascule-trimmed-messages'), String(n));
  // The estimate (bytes / 4 + max_tokens) of what was sent fits the window of 800.
  const bytes = JSON.stringify((await sim.lastRequest('trim-mid')).body).length;
  assert.ok(bytes / 4 + 100 <= 800, `${bytes} bytes`);
});

test('a fallback with a smaller window trims further', async () => {
  const { res, body } = await chat('smaller');
  assert.equal(res.status, 200, JSON.stringify(body));
  assert.equal(res.headers.get('x-bascule-target'), 't-small');
  const first = checkTrimmed(conversation(), (await sim.lastRequest('trim-mid-fail')).body.messages, 2);
  const second = checkTrimmed(conversation(), (await sim.lastRequest('trim-small')).body.messages, 2);
  assert.ok(second > first, `${second} > ${first}`);
  assert.equal(res.headers.get('x-bascule-trimmed-messages'), String(second));
});

test('a fallback with a larger window gets the whole conversation', async () => {
  const sent = conversation();
  const { res, body } = await chat('larger', sent);
  assert.equal(res.status, 200, JSON.stringify(body));
  assert.equal(res.headers.get('x-bascule-target'), 't-big');
  checkTrimmed(sent, (await sim.lastRequest('trim-small-fail')).body.messages, 2);
  assert.deepEqual((await sim.lastRequest('trim-big')).body.messages, sent);
  assert.equal(res.headers.get('x-bascule-trimmed-messages'), null);
});

test('without trim, a conversation too long for every target is a 400 with no upstream call', async () => {
  const before = await sim.calls('trim-strict');
  const { res, body } = await chat('strict');
  assert.equal(res.status, 400, JSON.stringify(body));
  assert.equal(body.error.type, 'invalid_request_error');
  assert.match(body.error.message, /context window too small/);
  assert.equal(await sim.calls('trim-strict'), before);
});

test('trim whose minimum (system + keep_last) does not fit fails the same way', async () => {
  const before = await sim.calls('trim-strict');
  const { res, body } = await chat('too-long-tail');
  assert.equal(res.status, 400, JSON.stringify(body));
  assert.match(body.error.message, /context window too small/);
  assert.equal(await sim.calls('trim-strict'), before);
  assert.equal(res.headers.get('x-bascule-trimmed-messages'), null);
});

test('a conversation that fits is sent as the client wrote it', async () => {
  const sent = conversation().slice(0, 4).concat([{ role: 'user', content: 'short' }]);
  const { res } = await chat('trim', sent);
  assert.equal(res.status, 200);
  assert.deepEqual((await sim.lastRequest('trim-mid')).body.messages, sent);
  assert.equal(res.headers.get('x-bascule-trimmed-messages'), null);
});

// The same conversation in Anthropic's shape: system top-level, tool_use / tool_result.
function anthropicConversation() {
  const text = (t) => [{ type: 'text', text: t }];
  return {
    system: 'You are terse.',
    messages: [
      { role: 'user', content: fill('u1') },
      { role: 'assistant', content: fill('a1') },
      { role: 'user', content: fill('u2') },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'lookup', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: text(fill('r1')) }] },
      { role: 'assistant', content: fill('a2') },
      { role: 'user', content: fill('u3') },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_2', name: 'lookup', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_2', content: text(fill('r2')) }] },
      { role: 'assistant', content: fill('a3') },
      { role: 'user', content: fill('u4') },
      { role: 'assistant', content: fill('a4') },
      { role: 'user', content: fill('u5') },
    ],
  };
}

async function messages(model) {
  const conv = anthropicConversation();
  const res = await fetch(`${gw.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model, max_tokens: 100, tools: [{ name: 'lookup', input_schema: { type: 'object' } }], ...conv }),
  });
  return { res, body: await res.json(), conv };
}

test('/v1/messages to an anthropic target is trimmed (translated instead of passed through)', async () => {
  const { res, body, conv } = await messages('ant-trim');
  assert.equal(res.status, 200, JSON.stringify(body));
  assert.equal(body.type, 'message');
  const n = Number(res.headers.get('x-bascule-trimmed-messages'));
  assert.ok(n > 0);
  const seen = (await sim.lastRequest('claude-trim')).body;
  const sys = typeof seen.system === 'string' ? seen.system : seen.system.map((b) => b.text).join('\n');
  assert.match(sys, /You are terse\./);
  assert.match(sys, /\[\d+ earlier messages omitted\]/);
  assert.ok(seen.messages.length < conv.messages.length);
  assert.equal(seen.messages[0].role, 'user');
  const last = seen.messages.at(-1);
  const lastText = typeof last.content === 'string' ? last.content : last.content.map((b) => b.text).join('');
  assert.equal(lastText, fill('u5'));
  // Every tool_result answers a tool_use the upstream still sees.
  const uses = new Set(), results = [];
  for (const m of seen.messages)
    for (const b of Array.isArray(m.content) ? m.content : []) {
      if (b.type === 'tool_use') uses.add(b.id);
      if (b.type === 'tool_result') results.push(b.tool_use_id);
    }
  for (const id of results) assert.ok(uses.has(id), `tool_result ${id} without its tool_use`);
});

test('/v1/messages to an openai target is trimmed on the neutral form', async () => {
  const { res, body } = await messages('oai-from-ant');
  assert.equal(res.status, 200, JSON.stringify(body));
  const got = (await sim.lastRequest('trim-small')).body.messages;
  assert.equal(got[0].role, 'system');
  const m = MARKER.exec(got[1].content);
  assert.ok(m, JSON.stringify(got[1]));
  assert.equal(res.headers.get('x-bascule-trimmed-messages'), m[1]);
  assert.equal(got[2].role, 'user');
  assert.equal(got.at(-1).content, fill('u5'));
  for (let i = 2; i < got.length; i++)
    if (got[i].role === 'tool') assert.ok(got[i - 1].tool_calls || got[i - 1].role === 'tool');
});

test('a streamed request is trimmed the same way, the header on the stream head', async () => {
  const sent = conversation();
  const res = await fetch(`${gw.base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'trim', messages: sent, tools, max_tokens: 100, stream: true }),
  });
  assert.equal(res.status, 200);
  const text = await res.text();
  assert.match(text, /data: \[DONE\]/);
  const seen = (await sim.lastRequest('trim-mid')).body;
  assert.equal(seen.stream, true);
  assert.deepEqual(seen.stream_options, { include_usage: true });
  const n = checkTrimmed(sent, seen.messages, 2);
  assert.equal(res.headers.get('x-bascule-trimmed-messages'), String(n));
});

test('/v1/messages with a field only the pass-through keeps is not trimmed: 400, no call', async () => {
  const before = await sim.calls('claude-trim');
  const conv = anthropicConversation();
  const res = await fetch(`${gw.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: 'ant-trim', max_tokens: 100, top_k: 5, ...conv }),
  });
  const body = await res.json();
  assert.equal(res.status, 400, JSON.stringify(body));
  assert.match(body.error.message, /context window too small/);
  assert.equal(await sim.calls('claude-trim'), before);
});

test('/v1/responses (translated) is trimmed on the neutral form', async () => {
  const input = [
    { role: 'user', content: fill('u1') },
    { role: 'assistant', content: fill('a1') },
    { role: 'user', content: fill('u2') },
    { type: 'function_call', call_id: 'call_9', name: 'lookup', arguments: '{}' },
    { type: 'function_call_output', call_id: 'call_9', output: fill('r1') },
    { role: 'assistant', content: fill('a2') },
    { role: 'user', content: fill('u3') },
    { role: 'assistant', content: fill('a3') },
    { role: 'user', content: fill('u4') },
    { role: 'assistant', content: fill('a4') },
    { role: 'user', content: fill('u5') },
  ];
  const res = await fetch(`${gw.base}/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'resp-trim', instructions: 'You are terse.', input, max_output_tokens: 100,
      tools: [{ type: 'function', name: 'lookup', parameters: { type: 'object', properties: {} } }] }),
  });
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  const got = (await sim.lastRequest('trim-compat')).body.messages;
  assert.equal(got[0].role, 'system');
  const m = MARKER.exec(got[1].content);
  assert.ok(m, JSON.stringify(got[1]));
  assert.equal(res.headers.get('x-bascule-trimmed-messages'), m[1]);
  assert.ok(got.length < input.length + 1);
  assert.equal(got[2].role, 'user');
  assert.equal(got.at(-1).content, fill('u5'));
  for (let i = 2; i < got.length; i++) {
    if (got[i].role === 'tool') assert.ok(got[i - 1].tool_calls || got[i - 1].role === 'tool');
    if (got[i].tool_calls) assert.equal(got[i + 1].role, 'tool');
  }
});
