// SPDX-License-Identifier: MIT
// Who is calling (docs/configuration.md "clients"; docs/internals/auth.md): with clients
// configured every API surface needs a client key (401 in the surface's dialect, no upstream
// call), a route outside a key's `routes` is a 404 like an unknown model, operator surfaces
// need the admin key (a client key is 403), and the ledger and idempotency records are each
// client's own. The real bascule binary against bascule-sim, plus the official SDKs.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startSim, startGateway, waitFor } from '../lib/harness.mjs';

const ALPHA = 'alpha-key-0123456789abcdef';
const BETA = 'beta-key-0123456789abcdef';
const ADMIN = 'admin-key-0123456789abcdef';
let sim, gw;

before(async () => {
  sim = await startSim();
  gw = await startGateway({
    env: { TEST_ALPHA_KEY: ALPHA, TEST_BETA_KEY: BETA },
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 2
admin: { key: "${ADMIN}" }
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-s"], health: { probe: none } }
targets:
  sa: { provider: sim, model: c-support }
  in: { provider: sim, model: c-internal }
  wp: { provider: sim, model: c-wp }
  wpe: { provider: sim, model: c-wpe }
routes:
  support-agent: { primary: [sa] }
  internal: { primary: [in] }
  wp:
    primary: [wp]
    equivalent: [wpe]
    envelope: { max_same_target_attempts: 1 }
clients:
  alpha:
    key: "\${TEST_ALPHA_KEY}"
    routes: [support-agent, wp]
    rpm: 600
  beta: { key: "\${TEST_BETA_KEY}", routes: ["*"] }
`,
  });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

const total = async () => (await sim.stats()).total;

function post(path, body, headers = {}) {
  return fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

const chatBody = (model) => ({ model, messages: [{ role: 'user', content: 'hi' }] });
const bearer = (key) => ({ authorization: `Bearer ${key}` });

test('no key or a wrong key: 401 in each dialect, nothing sent upstream', async () => {
  const before = await total();
  for (const headers of [{}, bearer('not-a-client-key-at-all'), { 'x-api-key': 'nope-nope-nope' }]) {
    const given = Object.keys(headers).length > 0;
    let res = await post('/v1/chat/completions', chatBody('support-agent'), headers);
    assert.equal(res.status, 401);
    let body = await res.json();
    assert.equal(body.error.type, 'invalid_request_error');
    assert.equal(body.error.code, 'invalid_api_key');
    assert.match(body.error.message, given ? /Incorrect API key/ : /didn't provide an API key/);

    res = await post('/v1/responses', { model: 'support-agent', input: 'hi' }, headers);
    assert.equal(res.status, 401);
    assert.equal((await res.json()).error.code, 'invalid_api_key');

    res = await post('/v1/messages', { model: 'support-agent', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] },
      { 'anthropic-version': '2023-06-01', ...headers });
    assert.equal(res.status, 401);
    body = await res.json();
    assert.equal(body.type, 'error');
    assert.equal(body.error.type, 'authentication_error');

    res = await post('/v1/messages/count_tokens', { model: 'support-agent', messages: [{ role: 'user', content: 'hi' }] },
      { 'anthropic-version': '2023-06-01', ...headers });
    assert.equal(res.status, 401);
    assert.equal((await res.json()).error.type, 'authentication_error');

    res = await post('/v1/embeddings', { model: 'support-agent', input: 'hi' }, headers);
    assert.equal(res.status, 401);
    assert.equal((await res.json()).error.code, 'invalid_api_key');

    for (const path of ['/v1/models', '/models', '/v1/ledger/op-1']) {
      res = await fetch(`${gw.url}${path}`, { headers });
      assert.equal(res.status, 401, path);
      await res.arrayBuffer();
    }
  }
  assert.equal(await total(), before, 'no upstream call');
  // The access log is read from the gateway's stderr: wait for both lines to arrive.
  await waitFor(() => {
    const lines = gw.accessLog().filter((l) => l.status === 401);
    return lines.some((l) => l.detail === 'client key missing') &&
      lines.some((l) => l.detail === 'client key unknown');
  }, { timeoutMs: 10000, what: 'the 401 access-log lines' });
});

test('a client key as a bearer token or as x-api-key: served, the client in the access log', async () => {
  const before = await sim.calls('c-support');
  let res = await post('/v1/chat/completions', chatBody('support-agent'), bearer(ALPHA));
  assert.equal(res.status, 200);
  const id = res.headers.get('x-request-id');
  await res.json();
  res = await post('/v1/chat/completions', chatBody('support-agent'), { 'x-api-key': BETA });
  assert.equal(res.status, 200);
  await res.json();
  assert.equal((await sim.calls('c-support')) - before, 2);
  const line = await waitFor(() => gw.accessLog().find((l) => l.request_id === id && l.type === 'access'),
    { what: 'the access line' });
  assert.equal(line.client, 'alpha');
  assert.ok(!gw.logs().includes(ALPHA), 'the key itself is never logged');
});

test('a route outside the key\'s routes: the same 404 as an unknown model, and not listed', async () => {
  const before = await total();
  const denied = await post('/v1/chat/completions', chatBody('internal'), bearer(ALPHA));
  const unknown = await post('/v1/chat/completions', chatBody('no-such-route'), bearer(ALPHA));
  assert.equal(denied.status, 404);
  assert.equal(unknown.status, 404);
  const [d, u] = [await denied.json(), await unknown.json()];
  assert.equal(d.error.code, 'model_not_found');
  assert.equal(d.error.type, u.error.type);
  assert.equal(d.error.message.replace('internal', 'X'), u.error.message.replace('no-such-route', 'X'));
  const anth = await post('/v1/messages', { model: 'internal', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] },
    { 'anthropic-version': '2023-06-01', 'x-api-key': ALPHA });
  assert.equal(anth.status, 404);
  assert.equal((await anth.json()).error.type, 'not_found_error');
  assert.equal(await total(), before, 'no upstream call');

  const list = async (key, headers = {}) =>
    (await (await fetch(`${gw.base}/models`, { headers: { ...bearer(key), ...headers } })).json()).data.map((m) => m.id);
  assert.deepEqual(await list(ALPHA), ['support-agent', 'wp']);
  assert.deepEqual(await list(BETA), ['support-agent', 'internal', 'wp']);
  assert.deepEqual(await list(ALPHA, { 'anthropic-version': '2023-06-01' }), ['support-agent', 'wp']);
  const one = await fetch(`${gw.base}/models/internal`, { headers: bearer(ALPHA) });
  assert.equal(one.status, 404);
  assert.equal((await one.json()).error.code, 'model_not_found');
  const ok = await fetch(`${gw.base}/models/internal`, { headers: bearer(BETA) });
  assert.equal(ok.status, 200);
  await ok.json();
  const served = await post('/v1/chat/completions', chatBody('internal'), bearer(BETA));
  assert.equal(served.status, 200);
  await served.json();
});

test('operator surfaces: the admin key opens them, a client key is 403, health stays open', async () => {
  for (const path of ['/status', '/status.json']) {
    let res = await fetch(`${gw.url}${path}`);
    assert.equal(res.status, 401, path);
    await res.arrayBuffer();
    res = await fetch(`${gw.url}${path}`, { headers: bearer(ALPHA) });
    assert.equal(res.status, 403, path);
    assert.equal((await res.json()).error.code, 'operator_only');
    res = await fetch(`${gw.url}${path}`, { headers: bearer(ADMIN) });
    assert.equal(res.status, 200, path);
    await res.arrayBuffer();
    res = await fetch(`${gw.url}${path}`, { headers: { 'x-admin-key': ADMIN } }); // as /admin takes it
    assert.equal(res.status, 200, path);
    await res.arrayBuffer();
  }
  let res = await fetch(`${gw.url}/admin/targets`, { headers: bearer(BETA) });
  assert.equal(res.status, 403);
  await res.arrayBuffer();
  res = await fetch(`${gw.url}/admin/targets`);
  assert.equal(res.status, 401);
  await res.arrayBuffer();
  res = await fetch(`${gw.url}/admin/targets`, { headers: bearer(ADMIN) });
  assert.equal(res.status, 200);
  assert.ok(Array.isArray((await res.json()).targets));
  res = await fetch(`${gw.url}/metrics`); // open without metrics.key
  assert.equal(res.status, 200);
  await res.arrayBuffer();
  res = await fetch(`${gw.url}/health/live`);
  assert.equal(res.status, 200);
  await res.arrayBuffer();
});

async function ledger(method, op, key, body) {
  const res = await fetch(`${gw.base}/ledger/${op}`, {
    method,
    headers: { 'content-type': 'application/json', ...bearer(key) },
    body: body && JSON.stringify(body),
  });
  return { status: res.status, location: res.headers.get('location'), body: await res.json() };
}

test('the ledger is each client\'s own: another client can neither read nor move an entry', async () => {
  let r = await ledger('PUT', 'op-shared-1', ALPHA, { tool_name: 'send_email', state: 'planned' });
  assert.equal(r.status, 201);
  assert.equal(r.body.operation_id, 'op-shared-1', 'the caller sees its own id');
  assert.equal(r.location, '/v1/ledger/op-shared-1');
  r = await ledger('GET', 'op-shared-1', BETA);
  assert.equal(r.status, 404);
  assert.equal(r.body.error.code, 'operation_not_found');
  r = await ledger('PUT', 'op-shared-1', BETA, { tool_name: 'send_email', state: 'succeeded', external_reference: 'msg-1' });
  assert.equal(r.status, 409, 'beta has no such operation: succeeded cannot start one');
  r = await ledger('PUT', 'op-shared-1', BETA, { tool_name: 'other_tool', state: 'started' });
  assert.equal(r.status, 201, 'beta\'s op-shared-1 is a different entry');
  r = await ledger('GET', 'op-shared-1', ALPHA);
  assert.equal(r.status, 200);
  assert.equal(r.body.state, 'planned');
  assert.equal(r.body.tool_name, 'send_email');
  assert.equal(r.body.version, 1);
  r = await ledger('PUT', 'op-shared-1', ALPHA, { tool_name: 'send_email', state: 'started' });
  assert.equal(r.status, 200);
  assert.equal(r.body.state, 'started');
  // A long id still fits the store's key once scoped.
  const long = 'op-'.padEnd(128, 'x');
  r = await ledger('PUT', long, ALPHA, { tool_name: 't', state: 'planned' });
  assert.equal(r.status, 201);
  assert.equal(r.body.operation_id, long);
  assert.equal((await ledger('GET', long, BETA)).status, 404);
  assert.equal((await ledger('GET', long, ALPHA)).status, 200);
});

test('the router\'s ledger gate reads the caller\'s own entry', async () => {
  // alpha's op-gate-1 is started: a retryable failure must not be replayed for alpha ...
  assert.equal((await ledger('PUT', 'op-gate-1', ALPHA, { tool_name: 'send_email', state: 'started' })).status, 201);
  await sim.setModel('c-wp', { script: [{ action: 'status', status: 503, times: 4 }] });
  const headers = { 'x-bascule-side-effects': 'write_possible', 'x-bascule-operation-id': 'op-gate-1' };
  const wpe0 = await sim.calls('c-wpe');
  let res = await post('/v1/chat/completions', chatBody('wp'), { ...bearer(ALPHA), ...headers });
  assert.equal(res.status, 409);
  assert.equal((await res.json()).error.code, 'reconcile_required');
  assert.equal(await sim.calls('c-wpe'), wpe0);
  // ... while beta, whose op-gate-1 does not exist, fails over as usual.
  res = await post('/v1/chat/completions', chatBody('wp'), { ...bearer(BETA), ...headers });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-bascule-target'), 'wpe');
  await res.json();
  assert.equal((await sim.calls('c-wpe')) - wpe0, 1);
  await sim.setModel('c-wp', { tokens: 4 });
});

test('an idempotency record is never replayed to another client', async () => {
  const before = await sim.calls('c-support');
  const send = (key) => post('/v1/chat/completions', chatBody('support-agent'), { ...bearer(key), 'idempotency-key': 'idem-c-1' });
  let res = await send(ALPHA);
  assert.equal(res.status, 200);
  const first = await res.text();
  res = await send(ALPHA);
  assert.equal(res.headers.get('x-bascule-idempotent-replay'), 'true');
  assert.equal(await res.text(), first);
  res = await send(BETA);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-bascule-idempotent-replay'), null);
  await res.text();
  assert.equal((await sim.calls('c-support')) - before, 2);
});

test('the official SDKs: a client key works, a wrong one raises AuthenticationError', async () => {
  const ok = new OpenAI({ baseURL: gw.base, apiKey: ALPHA, maxRetries: 0 });
  const done = await ok.chat.completions.create(chatBody('support-agent'));
  assert.equal(done.object, 'chat.completion');
  const models = [];
  for await (const m of ok.models.list()) models.push(m.id);
  assert.deepEqual(models, ['support-agent', 'wp']);
  const bad = new OpenAI({ baseURL: gw.base, apiKey: 'sk-wrong-wrong-wrong', maxRetries: 0 });
  await assert.rejects(bad.chat.completions.create(chatBody('support-agent')), (err) => {
    assert.ok(err instanceof OpenAI.AuthenticationError, String(err));
    assert.equal(err.status, 401);
    assert.equal(err.code, 'invalid_api_key');
    return true;
  });
  await assert.rejects(ok.chat.completions.create(chatBody('internal')), (err) => {
    assert.ok(err instanceof OpenAI.NotFoundError, String(err));
    return true;
  });
  const anthBad = new Anthropic({ baseURL: gw.url, apiKey: 'sk-ant-wrong', maxRetries: 0 });
  await assert.rejects(
    anthBad.messages.create({ model: 'support-agent', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }),
    (err) => {
      assert.ok(err instanceof Anthropic.AuthenticationError, String(err));
      return true;
    },
  );
  const anthOk = new Anthropic({ baseURL: gw.url, apiKey: BETA, maxRetries: 0 });
  const msg = await anthOk.messages.create({ model: 'support-agent', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] });
  assert.equal(msg.type, 'message');
});
