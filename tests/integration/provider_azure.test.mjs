// The azure provider kind end to end: the official openai SDK -> bascule -> bascule-sim's
// Azure dialect under /openai. Deployment URLs with api-version and the api-key header;
// plain, streaming (Azure's prompt-filter chunk and filter annotations never reach the
// client), tools with a full round trip, response_format, usage, embeddings; and Azure's
// errors: the content filter 400 -> 400 content_policy (no failover), finish_reason
// content_filter passed through, a 429 whose retry-after-ms is honoured on the same
// target, a 429 asking for a day -> quota, failed over. Call counts from /_sim/stats.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startSim, startGateway, waitFor } from '../lib/harness.mjs';

let sim, gw, client;

const TEXT = 'Hello héllo wörld! This is bascule-sim ✓ streaming 🚀 tokens';
const CAPS = '[text, streaming, tools, parallel_tool_calls, json_schema, json_object, embeddings]';
const API_VERSION = '2024-10-21';

// name -> [primary deployment, equivalent deployment or null]. Each scenario has its own
// providers and keys: a rate limit or quota cools the key down.
const routes = {
  plain: ['az-plain', null],
  tools: ['az-tools', null],
  filter: ['az-filter-p', 'az-filter-e'],
  outfilter: ['az-out', null],
  ra: ['az-ra-p', 'az-ra-e'],
  rams: ['az-rams-p', 'az-rams-e'],
  daily: ['az-daily-p', 'az-daily-e'],
};

function config(simUrl) {
  const providers = [];
  const targets = [];
  const rs = [];
  for (const [name, [p, e]] of Object.entries(routes)) {
    for (const side of ['a', 'b'])
      providers.push(`  ${name}-${side}: { kind: azure, base_url: "${simUrl}/openai", api_version: "${API_VERSION}", keys: ["az-${name}-${side}"], health: { probe: none } }`);
    targets.push(`  ${p}: { provider: ${name}-a, model: gpt-4o, deployment: ${p}, capabilities: ${CAPS} }`);
    if (e) targets.push(`  ${e}: { provider: ${name}-b, model: gpt-4o, deployment: ${e}, capabilities: ${CAPS} }`);
    rs.push(`  ${name}:
    primary: [${p}]
    equivalent: [${e ?? ''}]
    envelope: { deadline_ms: 10000, max_same_target_attempts: 2 }`);
  }
  return `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: info, format: json }
retry:
  backoff: { base_ms: 20, max_ms: 100, jitter: 0.1 }
providers:
${providers.join('\n')}
  probed: { kind: azure, base_url: "${simUrl}/openai", api_version: "${API_VERSION}", keys: ["az-probe"], health: { interval_ms: 150, probe: models } }
targets:
${targets.join('\n')}
  az-probed: { provider: probed, model: gpt-4o, deployment: az-probed }
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

function chat(route, body = {}) {
  return fetch(`${gw.base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: route, messages: [{ role: 'user', content: 'hi' }], ...body }),
  });
}

// Attempt lines are written by the worker's loop and may land a moment after the answer.
async function attempts(res, n = 1) {
  const id = res.headers.get('x-request-id');
  const lines = () => gw.accessLog().filter((l) => l.type === 'attempt' && l.request_id === id);
  await waitFor(() => lines().length >= n, { timeoutMs: 3000, what: `${n} attempt line(s)` });
  return lines();
}

test('plain completion: deployment URL, api-version, api-key header, usage', async () => {
  const { data, response } = await client.chat.completions
    .create({ model: 'plain', messages: [{ role: 'user', content: 'hello azure' }] })
    .withResponse();
  assert.equal(data.object, 'chat.completion');
  assert.equal(data.choices[0].message.content, TEXT);
  assert.equal(data.choices[0].finish_reason, 'stop');
  assert.equal(data.usage.completion_tokens, 12);
  assert.equal(response.headers.get('x-bascule-target'), 'az-plain');
  const r = await lastRequest('az-plain');
  assert.equal(r.path, '/openai/deployments/az-plain/chat/completions');
  assert.equal(r.query, `api-version=${API_VERSION}`);
  assert.equal(r.headers['api-key'], 'az-plain-a');
  assert.equal(r.headers.authorization, undefined);
});

test('streaming with include_usage: Azure-only chunks dropped, text and usage intact', async () => {
  const stream = await client.chat.completions.create({
    model: 'plain', stream: true, stream_options: { include_usage: true },
    messages: [{ role: 'user', content: 'stream please' }],
  });
  let text = '';
  let usage = null;
  let finish = null;
  const ids = new Set();
  for await (const chunk of stream) {
    ids.add(chunk.id);
    assert.equal(chunk.object, 'chat.completion.chunk');
    if (chunk.usage) usage = chunk.usage;
    else assert.equal(chunk.choices.length, 1, JSON.stringify(chunk));
    for (const c of chunk.choices) {
      assert.ok(c.delta, 'every choice has a delta');
      text += c.delta.content ?? '';
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.equal(text, TEXT);
  assert.equal(finish, 'stop');
  assert.equal(usage.completion_tokens, 12);
  assert.equal(ids.size, 1, `one id, no blank prompt-filter chunk: ${[...ids]}`);

  const res = await chat('plain', { stream: true });
  const raw = await res.text();
  assert.ok(!raw.includes('prompt_filter_results'), raw);
  assert.ok(!raw.includes('content_filter_offsets'), raw);
  assert.ok(!raw.includes('"choices":[]'), raw);
  assert.ok(raw.trimEnd().endsWith('data: [DONE]'));
});

test('tools: a full round trip, plain and streamed', async () => {
  const tools = [{
    type: 'function',
    function: { name: 'lookup', description: 'look up', parameters: { type: 'object', properties: { q: { type: 'string' } } } },
  }];
  const messages = [{ role: 'user', content: 'Find the docs' }];
  const first = await client.chat.completions.create({ model: 'tools', messages, tools, tool_choice: 'auto' });
  const call = first.choices[0].message.tool_calls[0];
  assert.equal(first.choices[0].finish_reason, 'tool_calls');
  assert.equal(call.function.name, 'lookup');
  assert.deepEqual(JSON.parse(call.function.arguments), { q: 'sample' });
  const second = await client.chat.completions.create({
    model: 'tools', tools,
    messages: [...messages, first.choices[0].message, { role: 'tool', tool_call_id: call.id, content: 'found' }],
  });
  assert.equal(second.choices[0].message.content, TEXT);
  const r = await lastRequest('az-tools');
  assert.equal(r.body.messages[2].tool_call_id, call.id);

  const stream = await client.chat.completions.create({ model: 'tools', messages, tools, stream: true });
  let args = '';
  let name = null;
  let finish = null;
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      for (const tc of c.delta.tool_calls ?? []) {
        name ??= tc.function?.name;
        args += tc.function?.arguments ?? '';
      }
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.equal(name, 'lookup');
  assert.equal(finish, 'tool_calls');
  assert.deepEqual(JSON.parse(args), { q: 'sample' });
});

test('response_format json_schema reaches the deployment as sent', async () => {
  const response_format = {
    type: 'json_schema',
    json_schema: { name: 'x', schema: { type: 'object', properties: { a: { type: 'string' } } }, strict: false },
  };
  const res = await chat('plain', { response_format });
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  assert.deepEqual((await lastRequest('az-plain')).body.response_format, response_format);
});

test('the content filter 400 is a 400 content_policy, not failed over', async () => {
  await sim.setModel('az-filter-p', { script: [{ action: 'status', status: 400, error_code: 'content_filter', times: 5 }] });
  const err = await client.chat.completions
    .create({ model: 'filter', messages: [{ role: 'user', content: 'something' }] })
    .catch((e) => e);
  assert.equal(err.status, 400, String(err));
  assert.equal(err.code, 'content_policy_violation');
  assert.match(err.message, /content management policy/);
  assert.equal(await calls('az-filter-p'), 1);
  assert.equal(await calls('az-filter-e'), 0);
});

test('finish_reason content_filter is passed through, plain and streamed', async () => {
  await sim.setModel('az-out', { script: [{ action: 'ok', finish_reason: 'content_filter', times: 2 }] });
  const data = await client.chat.completions.create({ model: 'outfilter', messages: [{ role: 'user', content: 'x' }] });
  assert.equal(data.choices[0].finish_reason, 'content_filter');
  const stream = await client.chat.completions.create({ model: 'outfilter', stream: true, messages: [{ role: 'user', content: 'x' }] });
  let finish = null;
  for await (const chunk of stream) for (const c of chunk.choices) finish = c.finish_reason ?? finish;
  assert.equal(finish, 'content_filter');
  assert.equal(await calls('az-out'), 2);
});

test('a 429 with retry-after-ms is honoured on the same target', async () => {
  await sim.setModel('az-ra-p', { script: [{ action: 'status', status: 429, headers: { 'retry-after-ms': '400', 'retry-after': '1' } }] });
  const t0 = Date.now();
  const res = await chat('ra');
  const body = await res.json();
  const elapsed = Date.now() - t0;
  assert.equal(res.status, 200, JSON.stringify(body));
  assert.equal(res.headers.get('x-bascule-target'), 'az-ra-p');
  assert.equal(res.headers.get('x-bascule-attempts'), '2');
  // It waited; that the wait was retry-after-ms (400), not retry-after (1 s), is the
  // attempt line's next_delay_ms below, not a clock reading.
  assert.ok(elapsed >= 380, `waited ${elapsed} ms`);
  assert.equal(await calls('az-ra-p'), 2);
  assert.equal(await calls('az-ra-e'), 0);
  const a = await attempts(res, 2);
  assert.equal(a[0].kind, 'rate_limited');
  assert.equal(a[0].status, 429);
  assert.equal(a[0].next, 'retry');
  assert.equal(a[0].next_delay_ms, 400);
});

test('Azure\'s x-ms-retry-after-ms spelling is honoured too', async () => {
  await sim.setModel('az-rams-p', { script: [{ action: 'status', status: 429, headers: { 'x-ms-retry-after-ms': '300' } }] });
  const res = await chat('rams');
  await res.arrayBuffer();
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-bascule-target'), 'az-rams-p');
  assert.equal((await attempts(res, 2))[0].next_delay_ms, 300);
  assert.equal(await calls('az-rams-p'), 2);
  assert.equal(await calls('az-rams-e'), 0);
});

test('a 429 asking for a day is quota: failed over at once', async () => {
  await sim.setModel('az-daily-p', {
    script: [{ action: 'status', status: 429, headers: { 'retry-after': '86400' }, message: 'Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded call rate limit of your current OpenAI S0 pricing tier. Please retry after 86400 seconds.' }],
  });
  const t0 = Date.now();
  const res = await chat('daily');
  await res.arrayBuffer();
  assert.equal(res.status, 200);
  assert.ok(Date.now() - t0 < 2000);
  assert.equal(res.headers.get('x-bascule-target'), 'az-daily-e');
  assert.equal(res.headers.get('x-bascule-recovery-reason'), 'quota_exhausted');
  assert.equal(await calls('az-daily-p'), 1);
  assert.equal(await calls('az-daily-e'), 1);
});

test('embeddings go to the deployment embeddings path', async () => {
  const r = await client.embeddings.create({ model: 'plain', input: ['a', 'b'] });
  assert.equal(r.data.length, 2);
  const seen = await lastRequest('az-plain');
  assert.equal(seen.path, '/openai/deployments/az-plain/embeddings');
  assert.equal(seen.query, `api-version=${API_VERSION}`);
  assert.equal(seen.headers['api-key'], 'az-plain-a');
});

test('the models health probe lists the resource\'s models with the api-key', async () => {
  let probe;
  await waitFor(async () => {
    probe = (await sim.requests()).find((r) => r.path === '/openai/models' && r.headers['api-key'] === 'az-probe');
    return probe !== undefined;
  }, { timeoutMs: 5000, what: 'a models probe' });
  assert.equal(probe.method, 'GET');
  assert.equal(probe.query, `api-version=${API_VERSION}`);
  assert.equal(probe.headers.authorization, undefined);
});

test('the sim speaks Azure: api-key, api-version, error shapes', async () => {
  const url = (q) => `${sim.url}/openai/deployments/az-raw/chat/completions${q}`;
  const body = JSON.stringify({ messages: [{ role: 'user', content: 'x' }] });
  const noKey = await fetch(url(`?api-version=${API_VERSION}`), { method: 'POST', body });
  assert.equal(noKey.status, 401);
  assert.equal((await noKey.json()).error.code, '401');
  const bearerOnly = await fetch(url(`?api-version=${API_VERSION}`), { method: 'POST', headers: { authorization: 'Bearer k' }, body });
  assert.equal(bearerOnly.status, 401);
  await bearerOnly.arrayBuffer();
  const noVersion = await fetch(url(''), { method: 'POST', headers: { 'api-key': 'k' }, body });
  assert.equal(noVersion.status, 404);
  assert.equal((await noVersion.json()).error.message, 'Resource not found');
  const ok = await fetch(url(`?api-version=${API_VERSION}`), { method: 'POST', headers: { 'api-key': 'k' }, body });
  const ob = await ok.json();
  assert.equal(ok.status, 200);
  assert.equal(ob.model, 'az-raw', 'the deployment names the model');
  assert.ok(ob.prompt_filter_results);
  await sim.setModel('az-raw', { script: [{ action: 'status', status: 400, error_code: 'content_filter' }] });
  const filtered = await fetch(url(`?api-version=${API_VERSION}`), { method: 'POST', headers: { 'api-key': 'k' }, body });
  const fb = await filtered.json();
  assert.equal(filtered.status, 400);
  assert.equal(fb.error.code, 'content_filter');
  assert.equal(fb.error.innererror.code, 'ResponsibleAIPolicyViolation');
  assert.equal(fb.error.innererror.content_filter_result.violence.filtered, true);
  const models = await fetch(`${sim.url}/openai/models?api-version=${API_VERSION}`, { headers: { 'api-key': 'k' } });
  assert.equal(models.status, 200);
  assert.equal((await models.json()).object, 'list');
});
