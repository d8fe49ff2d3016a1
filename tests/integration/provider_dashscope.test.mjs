// The dashscope provider kind (Alibaba Cloud Model Studio, OpenAI-compatible mode) end to
// end: the official openai SDK -> bascule -> bascule-sim's DashScope dialect under
// /compatible-mode/v1. Plain, streaming (the :HTTP_STATUS/200 comment never reaches the
// client), tools with a full round trip, response_format, usage, max_completion_tokens,
// and DashScope's errors: a 200 whose body is an error (Throttling.RateQuota) classified
// rate_limited and failed over, DataInspectionFailed refused as content_policy without
// failover, and errors inside the stream. Exact upstream call counts come from /_sim/stats.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startSim, startGateway, waitFor } from '../lib/harness.mjs';

let sim, gw, client;

const TEXT = 'Hello héllo wörld! This is bascule-sim ✓ streaming 🚀 tokens';
const CAPS = '[text, streaming, tools, parallel_tool_calls, json_schema, json_object, embeddings]';

// Every scenario has its own route and upstream models, so breaker and key state never
// leak between tests. name -> [primary model, equivalent model or null]
const routes = {
  plain: ['ds-plain', null],
  tools: ['ds-tools', null],
  rate200: ['ds-rate-p', 'ds-rate-e'],
  inspect: ['ds-insp-p', 'ds-insp-e'],
  native429: ['ds-n429-p', 'ds-n429-e'],
  freeq: ['ds-freeq-p', 'ds-freeq-e'],
  sfirst: ['ds-sfirst-p', 'ds-sfirst-e'],
  smid: ['ds-smid-p', 'ds-smid-e'],
};

// A rate limit or quota cools the key down, so each scenario has its own two providers
// (and keys) too.
function config(simUrl) {
  const providers = [];
  const targets = [];
  const rs = [];
  for (const [name, [p, e]] of Object.entries(routes)) {
    for (const side of ['a', 'b'])
      providers.push(`  ${name}-${side}: { kind: dashscope, base_url: "${simUrl}/compatible-mode/v1", keys: ["sk-${name}-${side}"], health: { probe: none } }`);
    targets.push(`  ${p}: { provider: ${name}-a, model: ${p}, capabilities: ${CAPS} }`);
    if (e) targets.push(`  ${e}: { provider: ${name}-b, model: ${e}, capabilities: ${CAPS} }`);
    rs.push(`  ${name}:
    primary: [${p}]
    equivalent: [${e ?? ''}]
    envelope: { deadline_ms: 10000, max_same_target_attempts: 1 }`);
  }
  return `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: info, format: json }
retry:
  backoff: { base_ms: 20, max_ms: 100, jitter: 0.1 }
providers:
${providers.join('\n')}
  probed: { kind: dashscope, base_url: "${simUrl}/compatible-mode/v1", keys: ["sk-probe"], health: { interval_ms: 150, probe: models } }
targets:
${targets.join('\n')}
  ds-probed: { provider: probed, model: qwen-probed }
routes:
${rs.join('\n')}
`;
}

before(async () => {
  sim = await startSim();
  gw = await startGateway({ config: config(sim.url) });
  client = new OpenAI({ baseURL: gw.base, apiKey: 'client-key', maxRetries: 0 });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

const calls = (model) => sim.calls(model);

const lastRequest = (model) => sim.lastRequest(model);

// Attempt lines are written by the worker's loop and may land a moment after the answer.
async function attemptLines(res, n = 1) {
  const id = res.headers.get('x-request-id');
  const lines = () => gw.accessLog().filter((l) => l.type === 'attempt' && l.request_id === id);
  await waitFor(() => lines().length >= n, { timeoutMs: 3000, what: `${n} attempt line(s)` });
  return lines();
}

function chat(route, body = {}) {
  return fetch(`${gw.base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: route, messages: [{ role: 'user', content: 'hi' }], ...body }),
  });
}

test('plain completion: compatible-mode path, Bearer key, model rewritten, usage', async () => {
  const { data, response } = await client.chat.completions
    .create({ model: 'plain', messages: [{ role: 'user', content: 'hello qwen' }] })
    .withResponse();
  assert.equal(data.object, 'chat.completion');
  assert.equal(data.choices[0].message.content, TEXT);
  assert.equal(data.choices[0].finish_reason, 'stop');
  assert.equal(data.usage.completion_tokens, 12);
  assert.equal(data.usage.total_tokens, data.usage.prompt_tokens + 12);
  assert.equal(response.headers.get('x-bascule-target'), 'ds-plain');
  const r = await lastRequest('ds-plain');
  assert.equal(r.path, '/compatible-mode/v1/chat/completions');
  assert.equal(r.headers.authorization, 'Bearer sk-plain-a');
  assert.equal(r.body.model, 'ds-plain');
});

test('max_completion_tokens goes upstream as max_tokens', async () => {
  const data = await client.chat.completions.create({
    model: 'plain', max_completion_tokens: 3, messages: [{ role: 'user', content: 'short' }],
  });
  assert.equal(data.choices[0].finish_reason, 'length');
  assert.equal(data.usage.completion_tokens, 3);
  const r = await lastRequest('ds-plain');
  assert.equal(r.body.max_tokens, 3);
  assert.equal('max_completion_tokens' in r.body, false);
});

test('streaming with include_usage: text intact, usage chunk, no DashScope comment', async () => {
  const stream = await client.chat.completions.create({
    model: 'plain', stream: true, stream_options: { include_usage: true },
    messages: [{ role: 'user', content: 'stream please' }],
  });
  let text = '';
  let usage = null;
  let finish = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      text += c.delta?.content ?? '';
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.equal(text, TEXT);
  assert.equal(finish, 'stop');
  assert.equal(usage.completion_tokens, 12);
  const r = await lastRequest('ds-plain');
  assert.equal(r.body.stream_options.include_usage, true);

  // Raw bytes: the upstream's :HTTP_STATUS/200 comment is not relayed; without
  // include_usage the usage chunk the gateway asked for is not either.
  const res = await chat('plain', { stream: true });
  const raw = await res.text();
  assert.equal(res.status, 200);
  assert.ok(!raw.includes('HTTP_STATUS'), raw);
  assert.ok(!raw.includes('"choices":[]'), raw);
  assert.ok(raw.trimEnd().endsWith('data: [DONE]'), raw);
});

test('tools: a full round trip, plain and streamed', async () => {
  const tools = [{
    type: 'function',
    function: { name: 'get_weather', description: 'weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
  }];
  const messages = [{ role: 'user', content: 'Weather in Hangzhou?' }];
  const first = await client.chat.completions.create({ model: 'tools', messages, tools });
  const call = first.choices[0].message.tool_calls[0];
  assert.equal(first.choices[0].finish_reason, 'tool_calls');
  assert.equal(call.function.name, 'get_weather');
  assert.deepEqual(JSON.parse(call.function.arguments), { city: 'Oslo' });

  const second = await client.chat.completions.create({
    model: 'tools', tools,
    messages: [...messages, first.choices[0].message,
      { role: 'tool', tool_call_id: call.id, content: '{"temp_c":21}' }],
  });
  assert.equal(second.choices[0].message.content, TEXT);
  const r = await lastRequest('ds-tools');
  assert.equal(r.body.messages.length, 3);
  assert.equal(r.body.messages[2].role, 'tool');
  assert.equal(r.body.messages[2].tool_call_id, call.id);
  assert.equal(r.body.messages[1].tool_calls[0].id, call.id);

  const stream = await client.chat.completions.create({ model: 'tools', messages, tools, stream: true });
  const parts = {};
  let finish = null;
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      for (const tc of c.delta?.tool_calls ?? []) {
        parts[tc.index] ??= { id: tc.id, name: tc.function?.name, args: '' };
        parts[tc.index].args += tc.function?.arguments ?? '';
      }
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.equal(finish, 'tool_calls');
  assert.equal(parts[0].name, 'get_weather');
  assert.ok(parts[0].id);
  assert.deepEqual(JSON.parse(parts[0].args), { city: 'Oslo' });
});

test('response_format json_object and json_schema reach DashScope as sent', async () => {
  const schema = { type: 'object', properties: { a: { type: 'string' } } };
  for (const response_format of [
    { type: 'json_object' },
    { type: 'json_schema', json_schema: { name: 'thing', schema, strict: false } },
  ]) {
    const res = await chat('plain', { response_format, messages: [{ role: 'user', content: 'answer in JSON' }] });
    const body = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));
    const r = await lastRequest('ds-plain');
    assert.deepEqual(r.body.response_format, response_format);
  }
});

test('a 200 whose body is Throttling.RateQuota is rate_limited and fails over', async () => {
  await sim.setModel('ds-rate-p', { script: [{ action: 'error_200', error_code: 'Throttling.RateQuota', times: 5 }] });
  const res = await chat('rate200');
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  assert.equal(body.choices[0].message.content, TEXT);
  assert.equal(res.headers.get('x-bascule-target'), 'ds-rate-e');
  assert.equal(res.headers.get('x-bascule-attempts'), '2');
  assert.equal(res.headers.get('x-bascule-recovery-reason'), 'rate_limited');
  assert.equal(await calls('ds-rate-p'), 1);
  assert.equal(await calls('ds-rate-e'), 1);
  const attempts = await attemptLines(res, 2);
  assert.equal(attempts[0].kind, 'rate_limited');
});

test('DataInspectionFailed in a 200 is a 400 content_policy, not failed over', async () => {
  await sim.setModel('ds-insp-p', { script: [{ action: 'error_200', error_code: 'DataInspectionFailed', times: 5 }] });
  const err = await client.chat.completions
    .create({ model: 'inspect', messages: [{ role: 'user', content: 'something' }] })
    .catch((e) => e);
  assert.equal(err.status, 400, String(err));
  assert.equal(err.code, 'content_policy_violation');
  assert.equal(await calls('ds-insp-p'), 1);
  assert.equal(await calls('ds-insp-e'), 0);
});

test('a native 429 Throttling.AllocationQuota body fails over; the free-tier one as quota', async () => {
  await sim.setModel('ds-n429-p', {
    script: [{ action: 'status', status: 429, body: { code: 'Throttling.AllocationQuota', message: 'Allocated quota exceeded, please increase your quota limit.', request_id: 'r1' } }],
  });
  await sim.setModel('ds-freeq-p', {
    script: [{ action: 'status', status: 429, body: { code: 'Throttling.AllocationQuota', message: 'Free allocated quota exceeded.', request_id: 'r2' } }],
  });
  for (const [route, kind] of [['native429', 'rate_limited'], ['freeq', 'quota_exhausted']]) {
    const res = await chat(route);
    await res.arrayBuffer();
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-bascule-recovery-reason'), kind);
    const attempts = await attemptLines(res, 2);
    assert.equal(attempts[0].kind, kind);
    assert.equal(attempts[0].status, 429);
  }
  for (const m of ['ds-n429-p', 'ds-n429-e', 'ds-freeq-p', 'ds-freeq-e']) assert.equal(await calls(m), 1, m);
});

test('an error event before any output fails over; after output it ends the stream in-band', async () => {
  await sim.setModel('ds-sfirst-p', { script: [{ action: 'error_200', after_events: 0, error_code: 'Throttling.RateQuota' }] });
  const res = await chat('sfirst', { stream: true });
  const raw = await res.text();
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-bascule-target'), 'ds-sfirst-e');
  assert.ok(raw.includes('data: [DONE]'), raw);
  assert.equal(await calls('ds-sfirst-p'), 1);
  assert.equal(await calls('ds-sfirst-e'), 1);

  await sim.setModel('ds-smid-p', { script: [{ action: 'error_200', after_events: 3 }] });
  const stream = await client.chat.completions.create({
    model: 'smid', stream: true, messages: [{ role: 'user', content: 'hi' }],
  });
  let text = '';
  const err = await (async () => {
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  })().catch((e) => e);
  assert.ok(err instanceof Error, 'the in-band error frame surfaces as an SDK error');
  assert.equal(text, 'Hello héllo');
  assert.equal(await calls('ds-smid-e'), 0, 'committed: no failover');
});

test('the models health probe lists models with the Bearer key', async () => {
  let probe;
  await waitFor(async () => {
    probe = (await sim.requests()).find((r) => r.path === '/compatible-mode/v1/models' && r.headers.authorization === 'Bearer sk-probe');
    return probe !== undefined;
  }, { timeoutMs: 5000, what: 'a models probe' });
  assert.equal(probe.method, 'GET');
});

test('the sim speaks DashScope: 401 shape, 200-with-error body, stream error frame', async () => {
  const url = `${sim.url}/compatible-mode/v1/chat/completions`;
  const noKey = await fetch(url, { method: 'POST', body: JSON.stringify({ model: 'ds-raw', messages: [{ role: 'user', content: 'x' }] }) });
  const nb = await noKey.json();
  assert.equal(noKey.status, 401);
  assert.equal(nb.error.code, 'invalid_api_key');
  assert.ok(nb.request_id);
  await sim.setModel('ds-raw', { script: [{ action: 'error_200' }, { action: 'error_200', after_events: 1, error_code: 'DataInspectionFailed' }] });
  const hidden = await fetch(url, { method: 'POST', headers: { authorization: 'Bearer k' }, body: JSON.stringify({ model: 'ds-raw', messages: [{ role: 'user', content: 'x' }] }) });
  assert.equal(hidden.status, 200);
  const hb = await hidden.json();
  assert.equal(hb.code, 'InternalError');
  assert.ok(hb.message && hb.request_id && !hb.choices);
  const streamed = await fetch(url, { method: 'POST', headers: { authorization: 'Bearer k' }, body: JSON.stringify({ model: 'ds-raw', stream: true, messages: [{ role: 'user', content: 'x' }] }) });
  const text = await streamed.text();
  assert.ok(text.startsWith(':HTTP_STATUS/200\ndata: {'), text);
  assert.match(text, /data:\{"code":"DataInspectionFailed","message":"Input or output data may contain inappropriate content\.","request_id":"[^"]+"\}\n\n$/);
  assert.ok(!text.includes('[DONE]'));
});
