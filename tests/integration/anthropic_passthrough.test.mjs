// Anthropic clients keep every field: POST /v1/messages to an anthropic-kind target forwards
// the client's bytes with only "model" replaced (plus its anthropic-version and
// anthropic-beta headers), plain and streamed; strict duplicate checks; the translation path
// for other kinds (output_config.format -> response_format, refusals naming the field,
// per-attempt choice on failover); message ids, usage in message_start, the model shown;
// /v1/models in Anthropic's shape; count_tokens forwarded or estimated.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startSim, startGateway, readStream } from '../lib/harness.mjs';

const CAPS = 'capabilities: [text, streaming, tools, json_schema, vision]';
let sim, gw;

function config(simUrl, simBase) {
  const ant = `kind: anthropic, base_url: "${simUrl}/anthropic/v1"`;
  return `listen: "127.0.0.1:{{PORT}}"
workers: 1
log: { level: warn }
providers:
  ant: { ${ant}, keys: ["sk-ant-main"], health: { probe: none } }
  oai: { kind: openai_compatible, base_url: "${simBase}", keys: ["sk-oai"], health: { probe: none } }
targets:
  a-native: { provider: ant, model: claude-native, ${CAPS} }
  a-stream: { provider: ant, model: claude-stream, ${CAPS} }
  a-fail: { provider: ant, model: claude-fail, ${CAPS} }
  o-after: { provider: oai, model: gpt-after, ${CAPS} }
  o-only: { provider: oai, model: gpt-only, ${CAPS} }
  a-count: { provider: ant, model: claude-count, ${CAPS} }
  a-early: { provider: ant, model: claude-early, ${CAPS} }
  o-early: { provider: oai, model: gpt-early, ${CAPS} }
  a-late: { provider: ant, model: claude-late, ${CAPS} }
  a-buf: { provider: ant, model: claude-buf, ${CAPS} }
  o-mixed: { provider: oai, model: gpt-mixed, ${CAPS} }
  a-mixed: { provider: ant, model: claude-mixed, ${CAPS} }
routes:
  native: { primary: [a-native] }
  stream: { primary: [a-stream] }
  failover:
    primary: [a-fail]
    fallback: [o-after]
    envelope: { max_same_target_attempts: 1, allow_cross_model_fallback: true }
  openai: { primary: [o-only] }
  count: { primary: [a-count] }
  early:
    primary: [a-early]
    fallback: [o-early]
    envelope: { max_same_target_attempts: 1, allow_cross_model_fallback: true }
  late: { primary: [a-late], envelope: { max_same_target_attempts: 1 } }
  buffered: { primary: [a-buf], envelope: { on_stream_failure: buffer } }
  mixed:
    primary: [o-mixed]
    fallback: [a-mixed]
    envelope: { max_same_target_attempts: 1, allow_cross_model_fallback: true }
`;
}

before(async () => {
  sim = await startSim();
  gw = await startGateway({ config: config(sim.url, sim.base) });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

async function post(path, body, headers = {}) {
  return fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

const RICH = {
  model: 'native',
  max_tokens: 64,
  top_k: 5,
  thinking: { type: 'enabled', budget_tokens: 1024 },
  output_config: { effort: 'low' },
  thread: { id: 'thr_1' },
  context_management: { edits: [{ type: 'clear_tool_uses_20250919' }] },
  system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
  messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi', cache_control: { type: 'ephemeral' } }] }],
};

test('native: the upstream receives every field, the system blocks and the beta header', async () => {
  const res = await post('/v1/messages', RICH, {
    'anthropic-beta': 'context-management-2025-06-27',
    'anthropic-version': '2023-06-01',
  });
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  const seen = (await sim.requests('claude-native')).at(-1);
  assert.equal(seen.path, '/anthropic/v1/messages');
  assert.equal(seen.headers['anthropic-beta'], 'context-management-2025-06-27');
  assert.equal(seen.headers['anthropic-version'], '2023-06-01');
  const expected = { ...RICH, model: 'claude-native' };
  assert.deepEqual(seen.body, expected);
  // The answer is the upstream's message as it came: one msg_ prefix, its model, its usage.
  assert.equal(body.type, 'message');
  assert.match(body.id, /^msg_sim_\d+$/);
  assert.equal(body.model, 'claude-native');
  assert.ok(body.usage.input_tokens > 0);
});

test('native: duplicate members, escaped ones too, are a 400 in the Anthropic shape', async () => {
  for (const raw of [
    '{"model":"native","model":"native","max_tokens":5,"messages":[{"role":"user","content":"x"}]}',
    '{"model":"native","m\\u006fdel":"openai","max_tokens":5,"messages":[{"role":"user","content":"x"}]}',
  ]) {
    const res = await post('/v1/messages', raw);
    const body = await res.json();
    assert.equal(res.status, 400);
    assert.equal(body.type, 'error');
    assert.equal(body.error.type, 'invalid_request_error');
    assert.match(body.error.message, /'model' must appear at most once/);
  }
});

test('native stream: the Anthropic events pass unchanged, message_start has the real input tokens', async () => {
  const res = await post('/v1/messages', { ...RICH, model: 'stream', stream: true });
  assert.equal(res.status, 200);
  const { text } = await readStream(res);
  const events = text.split('\n\n').filter(Boolean).map((f) => {
    const [ev, data] = f.split('\n');
    return { name: ev.slice(7), data: JSON.parse(data.slice(6)) };
  });
  const names = events.map((e) => e.name);
  assert.equal(names[0], 'message_start');
  assert.ok(names.includes('ping'), 'the upstream ping passes too');
  assert.equal(names.at(-1), 'message_stop');
  for (const e of events) assert.equal(e.data.type, e.name);
  const start = events[0].data.message;
  assert.match(start.id, /^msg_sim_\d+$/);
  assert.equal(start.model, 'claude-stream');
  assert.ok(start.usage.input_tokens > 0, JSON.stringify(start.usage));
  assert.ok(!text.includes('bascule_'), 'no carrier frame reaches the client');
  const seen = (await sim.requests('claude-stream')).at(-1);
  assert.equal(seen.body.top_k, 5);
  assert.equal(seen.body.stream, true);
});

function events(text) {
  return text.split('\n\n').filter(Boolean).map((f) => {
    const [ev, data] = f.split('\n');
    return { name: ev.slice(7), data: JSON.parse(data.slice(6)) };
  });
}

test('native stream: an error event before any content fails over, translated, invisibly', async () => {
  // message_start, content_block_start, ping, then `event: error`: nothing was sent yet.
  await sim.setModel('claude-early', {
    script: [{ action: 'error_200', after_events: 3, error_type: 'overloaded_error', message: 'Overloaded' }],
  });
  const res = await post('/v1/messages', {
    model: 'early', max_tokens: 20, stream: true, messages: [{ role: 'user', content: 'Hello' }],
  });
  const { text } = await readStream(res);
  const evs = events(text);
  assert.equal(res.headers.get('x-bascule-target'), 'o-early');
  assert.deepEqual(evs.filter((e) => e.name === 'message_start').length, 1);
  assert.equal(evs[0].data.message.model, 'gpt-early');
  assert.equal(evs.at(-1).name, 'message_stop');
  assert.ok(!evs.some((e) => e.name === 'error'));
  assert.equal((await sim.requests('gpt-early')).at(-1).path, '/v1/chat/completions');
});

test('native stream: an error event after content ends the stream with an Anthropic error event', async () => {
  await sim.setModel('claude-late', {
    script: [{ action: 'error_200', after_events: 4, error_type: 'overloaded_error', message: 'Overloaded' }],
  });
  const res = await post('/v1/messages', {
    model: 'late', max_tokens: 20, stream: true, messages: [{ role: 'user', content: 'Hello' }],
  });
  const evs = events((await readStream(res)).text);
  assert.deepEqual(evs.map((e) => e.name),
    ['message_start', 'content_block_start', 'ping', 'content_block_delta', 'error']);
  // The gateway's own event for an interrupted stream, in Anthropic's shape (as in translation).
  assert.equal(evs.at(-1).data.type, 'error');
  assert.equal(evs.at(-1).data.error.type, 'api_error');
  assert.match(evs.at(-1).data.request_id, /^req_/);
});

test('native buffered stream: the router checks the answer against output_config.format', async () => {
  const schema = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] };
  const res = await post('/v1/messages', {
    model: 'buffered', max_tokens: 50, stream: true, top_k: 1,
    output_config: { format: { type: 'json_schema', schema } },
    messages: [{ role: 'user', content: 'A number' }],
  });
  assert.equal(res.headers.get('x-bascule-buffered'), 'true');
  const evs = events((await readStream(res)).text);
  const text = evs.filter((e) => e.data.delta?.type === 'text_delta').map((e) => e.data.delta.text).join('');
  assert.equal(typeof JSON.parse(text).n, 'number');
  assert.equal(evs.at(-1).name, 'message_stop');
  // A scripted answer that breaks the schema is a contract failure, not a success.
  await sim.setModel('claude-buf', { script: [{ action: 'ok', content: 'not json' }] });
  const bad = await post('/v1/messages', {
    model: 'buffered', max_tokens: 50, stream: true,
    output_config: { format: { type: 'json_schema', schema } },
    messages: [{ role: 'user', content: 'A number' }],
  });
  const body = await bad.json();
  assert.equal(bad.status, 502, JSON.stringify(body));
  assert.equal(body.reason, 'contract_failure');
});

test('failover from an anthropic target to an OpenAI-dialect one translates that attempt', async () => {
  await sim.setModel('claude-fail', { script: [{ action: 'status', status: 529 }] });
  const res = await post('/v1/messages', {
    model: 'failover', max_tokens: 20, messages: [{ role: 'user', content: 'Hello' }],
  });
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  assert.equal(res.headers.get('x-bascule-target'), 'o-after');
  assert.equal(body.type, 'message');
  assert.equal(body.model, 'gpt-after', 'the upstream model is shown');
  const seen = (await sim.requests('gpt-after')).at(-1);
  assert.equal(seen.path, '/v1/chat/completions');
  assert.equal(seen.body.max_tokens, 20);
});

test('other kinds: output_config.format becomes response_format json_schema', async () => {
  const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false };
  const res = await post('/v1/messages', {
    model: 'openai', max_tokens: 50, stop_sequences: ['END'],
    output_config: { format: { type: 'json_schema', schema } },
    messages: [{ role: 'user', content: 'Where?' }],
  });
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  const seen = (await sim.requests('gpt-only')).at(-1);
  assert.equal(seen.body.response_format.type, 'json_schema');
  assert.deepEqual(seen.body.response_format.json_schema.schema, schema);
  assert.deepEqual(seen.body.stop, ['END']);
  assert.equal(typeof JSON.parse(body.content[0].text).city, 'string');
  assert.doesNotMatch(body.id, /^msg_msg_/);
  assert.match(body.id, /^msg_/);
});

test('other kinds: a field without translation is a 400 naming it, nothing sent upstream', async () => {
  const before = (await sim.requests('gpt-only')).length;
  for (const [extra, field] of [
    [{ top_k: 3 }, 'top_k'],
    [{ thinking: { type: 'enabled', budget_tokens: 1024 } }, 'thinking'],
    [{ context_management: {} }, 'context_management'],
    [{ output_config: { effort: 'low' } }, 'output_config.effort'],
    [{ thread: {} }, 'thread'],
  ]) {
    const res = await post('/v1/messages', {
      model: 'openai', max_tokens: 5, messages: [{ role: 'user', content: 'x' }], ...extra,
    });
    const body = await res.json();
    assert.equal(res.status, 400, field);
    assert.equal(body.error.type, 'invalid_request_error');
    assert.ok(body.error.message.startsWith(`${field}:`), body.error.message);
  }
  // Hints that change no answer go through: disabled thinking, cache_control.
  const ok = await post('/v1/messages', {
    model: 'openai', max_tokens: 5, thinking: { type: 'disabled' },
    system: [{ type: 'text', text: 'S', cache_control: { type: 'ephemeral' } }],
    messages: [{ role: 'user', content: 'x' }],
  });
  assert.equal(ok.status, 200);
  assert.equal((await sim.requests('gpt-only')).length, before + 1);
});

test('mixed route: a field only Anthropic honours skips the OpenAI-dialect target', async () => {
  const res = await post('/v1/messages', {
    model: 'mixed', max_tokens: 5, top_k: 2, messages: [{ role: 'user', content: 'x' }],
  });
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  assert.equal(res.headers.get('x-bascule-target'), 'a-mixed');
  assert.equal((await sim.requests('gpt-mixed')).length, 0);
  assert.equal((await sim.requests('claude-mixed')).at(-1).body.top_k, 2);
});

// An OpenAI upstream counts the prompt only in its last chunk: message_start says 0 rather
// than an estimate a client (LangChain reads it) would take for the real count, and
// message_delta carries the upstream's count (docs/configuration.md "Cost").
test('translated stream: message_start has no estimate, message_delta the real count, ids have one prefix', async () => {
  const res = await post('/v1/messages', {
    model: 'openai', max_tokens: 5, stream: true, messages: [{ role: 'user', content: 'Hello there' }],
  });
  const { text } = await readStream(res);
  const start = JSON.parse(text.split('\n\n')[0].split('\n')[1].slice(6)).message;
  assert.equal(start.usage.input_tokens, 0, JSON.stringify(start.usage));
  const delta = text.split('\n\n').find((e) => e.startsWith('event: message_delta'));
  assert.ok(JSON.parse(delta.split('\n')[1].slice(6)).usage.input_tokens > 0, delta);
  assert.doesNotMatch(start.id, /^msg_msg_/);
  assert.equal(start.model, 'gpt-only');
});

test('/v1/models answers in the Anthropic shape to an Anthropic client', async () => {
  const res = await fetch(`${gw.url}/v1/models`, { headers: { 'anthropic-version': '2023-06-01' } });
  const body = await res.json();
  assert.equal(body.has_more, false);
  assert.equal(body.first_id, 'native');
  assert.equal(body.last_id, 'mixed');
  assert.deepEqual(Object.keys(body.data[0]).sort(), ['created_at', 'display_name', 'id', 'type']);
  assert.equal(body.data[0].type, 'model');
  assert.match(body.data[0].created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  const one = await (await fetch(`${gw.url}/v1/models/count`, { headers: { 'anthropic-version': '2023-06-01' } })).json();
  assert.equal(one.type, 'model');
  assert.equal(one.id, 'count');
  const oai = await (await fetch(`${gw.url}/v1/models`)).json();
  assert.equal(oai.object, 'list');
});

test('count_tokens: forwarded to an anthropic target, estimated for other kinds', async () => {
  const req = { messages: [{ role: 'user', content: 'How many tokens is this?' }], system: 'Be brief.' };
  const res = await post('/v1/messages/count_tokens', { ...req, model: 'count' }, { 'anthropic-beta': 'b1' });
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  assert.deepEqual(Object.keys(body), ['input_tokens']);
  assert.ok(body.input_tokens > 0);
  const seen = (await sim.requests('claude-count')).at(-1);
  assert.equal(seen.path, '/anthropic/v1/messages/count_tokens');
  assert.equal(seen.headers['anthropic-beta'], 'b1');
  assert.deepEqual(seen.body, { ...req, model: 'claude-count' });
  assert.equal(res.headers.get('x-bascule-token-count'), null);

  const est = await post('/v1/messages/count_tokens', { ...req, model: 'openai' });
  const eb = await est.json();
  assert.equal(est.status, 200);
  assert.equal(est.headers.get('x-bascule-token-count'), 'estimate');
  assert.ok(eb.input_tokens > 0);
});
