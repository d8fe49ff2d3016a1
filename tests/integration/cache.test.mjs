// SPDX-License-Identifier: MIT
// The response cache (routes.<r>.cache, docs/internals/cache.md), the real binary against
// bascule-sim: a miss then a hit with the same bytes, no upstream call, Age and cost 0; the
// key's canonical body (member order, whitespace, user); streams replayed as streams and
// never served to a plain request; Cache-Control no-cache / no-store; tenants kept apart
// under scope: client (tested as the other tenant) and shared under scope: route; errors and
// cut streams never stored; TTL expiry; DELETE /admin/cache; the metrics.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startSim, startGateway, waitFor } from '../lib/harness.mjs';

const ALPHA = 'alpha-cache-key-0123456789abcdef';
const BETA = 'beta-cache-key-0123456789abcdefg';
const ADMIN = 'admin-cache-key-0123456789abcdef';
let sim, gw;

const config = (simUrl) => `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: info, format: json }
admin: { key: "${ADMIN}" }
providers:
  oai: { kind: openai, base_url: "${simUrl}/v1", keys: ["sk-oai"], health: { probe: none } }
targets:
  t-cached: { provider: oai, model: m-cached, price: { input_per_mtok: 2.5, output_per_mtok: 10 } }
  t-shared: { provider: oai, model: m-shared }
  t-short: { provider: oai, model: m-short }
  t-err: { provider: oai, model: m-err }
  t-cut: { provider: oai, model: m-cut }
  t-none: { provider: oai, model: m-none }
  t-checked: { provider: oai, model: m-checked }
routes:
  cached: { primary: [t-cached], cache: { mode: exact, ttl_s: 300 } }
  shared: { primary: [t-shared], cache: { mode: exact, scope: route } }
  short: { primary: [t-short], cache: { mode: exact, ttl_s: 1 } }
  err:
    primary: [t-err]
    envelope: { max_attempts: 1 }
    cache: { mode: exact }
  cut:
    primary: [t-cut]
    envelope: { max_attempts: 1 }
    cache: { mode: exact }
  none: { primary: [t-none] }
  checked:
    primary: [t-checked]
    envelope: { max_attempts: 1 }
    checks: { max_chars: 10 }
    cache: { mode: exact }
clients:
  alpha: { key: "\${TEST_ALPHA_KEY}", routes: ["*"] }
  beta: { key: "\${TEST_BETA_KEY}", routes: ["*"] }
`;

before(async () => {
  sim = await startSim();
  gw = await startGateway({
    config: config(sim.url),
    env: { TEST_ALPHA_KEY: ALPHA, TEST_BETA_KEY: BETA },
  });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

async function chat(body, { key = ALPHA, headers = {}, raw = null } = {}) {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
    body: raw ?? JSON.stringify(body),
  });
  return { res, text: await res.text() };
}

async function calls(model) {
  return (await sim.stats()).models?.[model]?.calls ?? 0;
}

const ask = (route, content, extra = {}) => ({
  model: route, messages: [{ role: 'user', content }], ...extra,
});

test('a miss then a hit: same bytes, no upstream call, Age, cost 0, counted', async () => {
  const body = ask('cached', 'first question');
  const a = await chat(body);
  assert.equal(a.res.status, 200);
  assert.equal(a.res.headers.get('x-bascule-cache'), 'miss');
  assert.ok(Number(a.res.headers.get('x-bascule-cost-usd')) > 0);
  const before = await calls('m-cached');
  const b = await chat(body);
  assert.equal(b.res.status, 200);
  assert.equal(b.res.headers.get('x-bascule-cache'), 'hit');
  assert.equal(b.text, a.text);
  assert.match(b.res.headers.get('age'), /^\d+$/);
  assert.equal(b.res.headers.get('x-bascule-cost-usd'), '0');
  assert.equal(b.res.headers.get('x-bascule-attempts'), '0');
  assert.equal(await calls('m-cached'), before, 'the hit made no upstream call');
  await waitFor(() => gw.accessLog().some((l) => l.route === 'cached' && l.cache === 'hit'),
    { what: 'the access line of the hit' });
  const hitLine = gw.accessLog().find((l) => l.route === 'cached' && l.cache === 'hit');
  assert.ok(!(hitLine.cost_usd > 0), 'a hit costs nothing');
  const metrics = await (await fetch(`${gw.url}/metrics`)).text();
  assert.match(metrics, /bascule_cache_requests_total\{route="cached",result="hit"\} [1-9]/);
  assert.match(metrics, /bascule_cache_requests_total\{route="cached",result="miss"\} [1-9]/);
  assert.match(metrics, /bascule_cache_saved_usd_total [0-9.e-]*[1-9]/);
  const auth = { headers: { authorization: `Bearer ${ADMIN}` } };
  const status = await (await fetch(`${gw.url}/status.json`, auth)).json();
  const row = status.cache.routes.find((x) => x.route === 'cached');
  assert.ok(row.hit >= 1 && row.miss >= 1, JSON.stringify(row));
  assert.equal(row.hit_ratio, Number((row.hit / (row.hit + row.miss)).toFixed(4)));
  assert.ok(status.cache.saved_usd > 0 && status.cache.entries >= 1, JSON.stringify(status.cache));
  const page = await (await fetch(`${gw.url}/status`, auth)).text();
  assert.match(page, /Response cache/);
});

test('the key is the canonical body: member order, whitespace and user do not matter', async () => {
  const a = await chat(ask('cached', 'canonical', { temperature: 0.5, user: 'u1' }));
  assert.equal(a.res.headers.get('x-bascule-cache'), 'miss');
  const raw = '{ "temperature" : 0.5,\n "messages":[{"content":"canonical","role":"user"}],' +
    '"user":"someone else", "m\\u006fdel":"cached"}';
  const b = await chat(null, { raw });
  assert.equal(b.res.headers.get('x-bascule-cache'), 'hit');
  assert.equal(b.text, a.text);
  const c = await chat(ask('cached', 'canonical', { temperature: 0.7 }));
  assert.equal(c.res.headers.get('x-bascule-cache'), 'miss', 'a parameter that matters');
});

test('the answer is stored before its last byte goes out: asked again at once, it is a hit', async () => {
  // The next request may land on another worker before the first one's bookkeeping ran.
  for (let i = 0; i < 20; i++) {
    const body = ask('cached', `at once ${i}`);
    const a = await chat(body);
    assert.equal(a.res.headers.get('x-bascule-cache'), 'miss');
    const b = await chat(body);
    assert.equal(b.res.headers.get('x-bascule-cache'), 'hit', `round ${i}`);
  }
});

test('a body with a nested name twice is never keyed: bypass, both times upstream', async () => {
  const raw = '{"model":"cached","messages":[{"role":"user","content":"dup","content":"other"}]}';
  const n = await calls('m-cached');
  const a = await chat(null, { raw });
  const b = await chat(null, { raw });
  assert.equal(a.res.headers.get('x-bascule-cache'), 'bypass');
  assert.equal(b.res.headers.get('x-bascule-cache'), 'bypass');
  assert.equal(await calls('m-cached'), n + 2);
});

test('scope: client -- another tenant\'s identical request misses and goes upstream', async () => {
  const body = ask('cached', 'tenant secret question');
  const a = await chat(body, { key: ALPHA });
  assert.equal(a.res.headers.get('x-bascule-cache'), 'miss');
  assert.equal((await chat(body, { key: ALPHA })).res.headers.get('x-bascule-cache'), 'hit');
  const n = await calls('m-cached');
  const b = await chat(body, { key: BETA });
  assert.equal(b.res.status, 200);
  assert.equal(b.res.headers.get('x-bascule-cache'), 'miss');
  assert.equal(await calls('m-cached'), n + 1, 'beta was answered upstream');
  assert.notEqual(JSON.parse(b.text).id, JSON.parse(a.text).id, 'not alpha\'s answer');
});

test('scope: route -- the answer is shared by every client', async () => {
  const body = ask('shared', 'shared question');
  assert.equal((await chat(body, { key: ALPHA })).res.headers.get('x-bascule-cache'), 'miss');
  const b = await chat(body, { key: BETA });
  assert.equal(b.res.headers.get('x-bascule-cache'), 'hit');
});

test('a stream is stored whole and replayed as the same stream; never to a plain request', async () => {
  const body = ask('cached', 'stream me', { stream: true });
  const a = await chat(body);
  assert.equal(a.res.headers.get('x-bascule-cache'), 'miss');
  assert.match(a.text, /data: \[DONE\]/);
  const n = await calls('m-cached');
  const b = await chat(body);
  assert.equal(b.res.headers.get('x-bascule-cache'), 'hit');
  assert.match(b.res.headers.get('content-type'), /text\/event-stream/);
  // The replay is the stream as the client first got it (the cost comment is the miss's own).
  assert.equal(b.text, a.text.replace(/: x-bascule-cost-usd: [0-9.]+\n\n$/, ''));
  assert.equal(await calls('m-cached'), n);
  const plain = await chat(ask('cached', 'stream me'));
  assert.equal(plain.res.headers.get('x-bascule-cache'), 'miss', 'another shape: not served');
  assert.match(plain.res.headers.get('content-type'), /application\/json/);
  const usage = await chat(ask('cached', 'stream me',
    { stream: true, stream_options: { include_usage: true } }));
  assert.equal(usage.res.headers.get('x-bascule-cache'), 'miss', 'a stream with usage differs');
  assert.match(usage.text, /"usage":\{/);
});

test('Cache-Control: no-cache skips the lookup, no-store the write', async () => {
  const body = ask('cached', 'control question');
  assert.equal((await chat(body, { headers: { 'cache-control': 'no-store' } }))
    .res.headers.get('x-bascule-cache'), 'miss');
  assert.equal((await chat(body)).res.headers.get('x-bascule-cache'), 'miss', 'no-store: not kept');
  const n = await calls('m-cached');
  const c = await chat(body, { headers: { 'cache-control': 'max-age=0, No-Cache' } });
  assert.equal(c.res.headers.get('x-bascule-cache'), 'bypass');
  assert.equal(await calls('m-cached'), n + 1, 'no-cache went upstream');
  assert.equal((await chat(body)).res.headers.get('x-bascule-cache'), 'hit');
});

test('an error is not stored', async () => {
  await sim.setModel('m-err', { script: [{ action: 'status', status: 400 }] });
  const body = ask('err', 'error question');
  const a = await chat(body);
  assert.equal(a.res.status, 400);
  assert.equal(a.res.headers.get('x-bascule-cache'), 'miss');
  const b = await chat(body);
  assert.equal(b.res.status, 200);
  assert.equal(b.res.headers.get('x-bascule-cache'), 'miss');
  assert.equal(await calls('m-err'), 2);
  assert.equal((await chat(body)).res.headers.get('x-bascule-cache'), 'hit');
});

test('a cut stream is not stored', async () => {
  await sim.setModel('m-cut', { script: [{ action: 'cut', after_events: 3 }] });
  const body = ask('cut', 'cut question', { stream: true });
  const a = await chat(body).catch((e) => ({ error: e }));
  assert.ok(a.error || !/\[DONE\]/.test(a.text), 'the first stream broke');
  const b = await chat(body);
  assert.equal(b.res.headers.get('x-bascule-cache'), 'miss');
  assert.match(b.text, /\[DONE\]/);
  assert.equal(await calls('m-cut'), 2);
  assert.equal((await chat(body)).res.headers.get('x-bascule-cache'), 'hit');
});

test('an entry ends at its TTL', async () => {
  const body = ask('short', 'short-lived');
  assert.equal((await chat(body)).res.headers.get('x-bascule-cache'), 'miss');
  assert.equal((await chat(body)).res.headers.get('x-bascule-cache'), 'hit');
  await waitFor(async () => (await chat(body)).res.headers.get('x-bascule-cache') === 'miss',
    { timeoutMs: 8000, everyMs: 200, what: 'the entry to expire' });
});

test('DELETE /admin/cache?route= drops that route\'s entries only', async () => {
  const one = ask('cached', 'to be dropped');
  const two = ask('shared', 'to be kept');
  await chat(one);
  await chat(two);
  assert.equal((await chat(one)).res.headers.get('x-bascule-cache'), 'hit');
  const denied = await fetch(`${gw.url}/admin/cache?route=cached`, { method: 'DELETE' });
  assert.equal(denied.status, 401);
  const res = await fetch(`${gw.url}/admin/cache?route=cached`, {
    method: 'DELETE', headers: { authorization: `Bearer ${ADMIN}` },
  });
  assert.equal(res.status, 200);
  const out = await res.json();
  assert.equal(out.route, 'cached');
  assert.ok(out.deleted >= 1);
  assert.equal((await chat(one)).res.headers.get('x-bascule-cache'), 'miss');
  assert.equal((await chat(two)).res.headers.get('x-bascule-cache'), 'hit');
});

test('an answer the route\'s checks refuse is not stored, plain or streamed', async () => {
  const body = ask('checked', 'too long an answer for the checks');
  const a = await chat(body);
  assert.ok(a.res.status >= 500, `refused: ${a.res.status}`);
  assert.match(a.text, /contract/);
  assert.equal((await chat(body)).res.headers.get('x-bascule-cache'), 'miss');
  // A pass-through stream's checks can only be recorded as it passes: never stored.
  const s = ask('checked', 'a stream past the checks', { stream: true });
  const first = await chat(s);
  assert.equal(first.res.status, 200);
  assert.equal((await chat(s)).res.headers.get('x-bascule-cache'), 'miss');
  assert.equal(await calls('m-checked'), 4);
});

test('a hit under an Idempotency-Key is that key\'s record too', async () => {
  const body = ask('cached', 'idempotent and cached');
  const a = await chat(body);
  assert.equal(a.res.headers.get('x-bascule-cache'), 'miss');
  const key = { 'idempotency-key': 'cache-idem-1' };
  const b = await chat(body, { headers: key });
  assert.equal(b.res.headers.get('x-bascule-cache'), 'hit');
  const c = await chat(body, { headers: key });
  assert.equal(c.res.status, 200);
  assert.equal(c.res.headers.get('x-bascule-idempotent-replay'), 'true');
  assert.equal(c.text, a.text);
});

test('a route without cache says nothing of it', async () => {
  const a = await chat(ask('none', 'uncached'));
  assert.equal(a.res.status, 200);
  assert.equal(a.res.headers.get('x-bascule-cache'), null);
});

test('an Anthropic-dialect stream is replayed in its own dialect, apart from OpenAI\'s', async () => {
  const post = (body) => fetch(`${gw.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ALPHA}`,
      'anthropic-version': '2023-06-01' },
    body: JSON.stringify(body),
  });
  const body = { model: 'cached', max_tokens: 64, stream: true,
    messages: [{ role: 'user', content: 'anthropic stream' }] };
  const a = await post(body);
  const aText = await a.text();
  assert.equal(a.status, 200);
  assert.equal(a.headers.get('x-bascule-cache'), 'miss');
  assert.match(aText, /event: message_stop/);
  const n = await calls('m-cached');
  const b = await post(body);
  const bText = await b.text();
  assert.equal(b.headers.get('x-bascule-cache'), 'hit');
  assert.equal(bText, aText.replace(/: x-bascule-cost-usd: [0-9.]+\n\n$/, ''));
  assert.equal(await calls('m-cached'), n);
  // The same conversation asked in OpenAI's dialect is another key.
  for (const extra of [{}, { stream_options: { include_usage: true } }]) {
    const o = await chat(ask('cached', 'anthropic stream', { stream: true, max_tokens: 64, ...extra }));
    assert.equal(o.res.headers.get('x-bascule-cache'), 'miss');
    assert.doesNotMatch(o.text, /message_stop/);
  }
});
