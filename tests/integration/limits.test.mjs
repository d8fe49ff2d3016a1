// SPDX-License-Identifier: MIT
// Local limits (docs/configuration.md "clients", "targets"; docs/internals/limits.md): a
// client's rpm and max_concurrency answer 429 rate_limited with Retry-After and
// x-bascule-limited-by before anything goes upstream; a target's rpm sends at most rpm calls
// upstream and answers the rest with a typed 429, or moves them to the equivalent tier; a
// target's max_concurrency is never passed at the provider, and queue_ms makes the others
// wait for a slot instead of failing. Exact upstream call counts from bascule-sim.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startSim, startGateway, waitFor } from '../lib/harness.mjs';

const LIMITED = 'limits-limited-key-0123456789';
const SINGLE = 'limits-single-key-0123456789';
const FREE = 'limits-free-key-0123456789abc';
const ADMIN = 'limits-admin-key-0123456789ab';
let sim, gw;

before(async () => {
  sim = await startSim();
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: warn }
admin: { key: "${ADMIN}" }
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-l"], health: { probe: none } }
  one: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-o"], max_concurrency: 1, health: { probe: none } }
  two: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-k1", "sk-k2"], health: { probe: none } }
targets:
  p1: { provider: one, model: l-prov-1 }
  p2: { provider: one, model: l-prov-2 }
  cl: { provider: sim, model: l-client }
  cs: { provider: sim, model: l-single }
  tr: { provider: sim, model: l-trpm, rpm: 10, rpm_burst: 10 }
  tq: { provider: sim, model: l-tier, rpm: 10, rpm_burst: 10 }
  tqe: { provider: sim, model: l-tier-eq }
  tc: { provider: sim, model: l-conc, max_concurrency: 2, queue_ms: 20000 }
  tk: { provider: two, model: l-per-key, rpm: 3, rpm_burst: 3 }
routes:
  client-rpm: { primary: [cl] }
  single: { primary: [cs] }
  target-rpm: { primary: [tr] }
  tiered: { primary: [tq], equivalent: [tqe] }
  conc: { primary: [tc] }
  per-key: { primary: [tk] }
  prov-1: { primary: [p1] }
  prov-2: { primary: [p2] }
clients:
  limited: { key: "${LIMITED}", routes: ["*"], rpm: 10, rpm_burst: 10 }
  single: { key: "${SINGLE}", routes: ["*"], max_concurrency: 1 }
  free: { key: "${FREE}", routes: ["*"] }
`,
  });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

function chat(model, key) {
  return fetch(`${gw.base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  });
}

// n requests at once; each answer with its body read.
async function burst(n, model, key) {
  return Promise.all(
    Array.from({ length: n }, async () => {
      const res = await chat(model, key);
      return { res, body: await res.json() };
    }),
  );
}

// The access lines of <route> once <n> are written (they are flushed in batches).
async function accessLines(route, n, pred = () => true) {
  const pick = () => gw.accessLog().filter((l) => l.type === 'access' && l.route === route && pred(l));
  await waitFor(() => pick().length >= n, { what: `${n} access lines of ${route}` });
  const lines = pick();
  assert.equal(lines.length, n);
  return lines;
}

const stats = async (model) => (await sim.stats()).models[model] ?? { calls: 0, max_in_flight: 0 };

function assertLimited(res, body, limitedBy) {
  assert.equal(res.status, 429, JSON.stringify(body));
  assert.equal(body.error.code, 'rate_limited');
  assert.equal(body.error.type, 'rate_limit_error');
  assert.equal(res.headers.get('x-bascule-limited-by'), limitedBy);
  assert.ok(Number(res.headers.get('retry-after')) >= 1, 'Retry-After in whole seconds');
  assert.equal(res.headers.get('x-should-retry'), 'true'); // nothing went upstream
}

test('client rpm 10: exactly 10 of 15 concurrent are served, 5 x 429 with Retry-After', async () => {
  const answers = await burst(15, 'client-rpm', LIMITED);
  const ok = answers.filter((a) => a.res.status === 200);
  const limited = answers.filter((a) => a.res.status !== 200);
  assert.equal(ok.length, 10);
  assert.equal(limited.length, 5);
  for (const { res, body } of limited) {
    assertLimited(res, body, 'client_rpm');
    // A burst of the whole minute (rpm_burst 10 of rpm 10): the next one a minute later.
    assert.ok(Number(res.headers.get('retry-after')) <= 60);
  }
  assert.equal((await stats('l-client')).calls, 10);
  // Another client is not limited by it.
  assert.equal((await chat('client-rpm', FREE)).status, 200);
});

test('client max_concurrency 1: a second call while the first runs is a 429', async () => {
  await sim.setModel('l-single', { script: [{ action: 'delay', delay_ms: 5000 }] });
  const first = chat('single', SINGLE);
  // Wait for the event itself: the first call has reached the sim (it is held there 5 s).
  await waitFor(async () => (await stats('l-single')).calls >= 1, { timeoutMs: 10000, what: 'the first call upstream' });
  const second = await chat('single', SINGLE);
  assertLimited(second, await second.json(), 'client_concurrency');
  assert.equal((await first).status, 200);
  assert.equal((await stats('l-single')).calls, 1);
  // The slot came back with the answer.
  assert.equal((await chat('single', SINGLE)).status, 200);
});

test('provider max_concurrency 1 spans its targets: a call to another target waits for none, 429', async () => {
  await sim.setModel('l-prov-1', { script: [{ action: 'delay', delay_ms: 5000 }] });
  const first = chat('prov-1', FREE);
  await waitFor(async () => (await stats('l-prov-1')).calls >= 1, { timeoutMs: 10000, what: 'the first call upstream' });
  const second = await chat('prov-2', FREE);
  const body = await second.json();
  assertLimited(second, body, 'provider_concurrency');
  assert.equal(body.reason, 'rate_limited');
  assert.equal((await first).status, 200);
  assert.equal((await stats('l-prov-2')).calls, 0);
  assert.equal((await chat('prov-2', FREE)).status, 200); // the slot came back
});

test('target rpm 10: at most 10 (+1) upstream calls for 20 concurrent, the rest typed 429', async () => {
  const start = Date.now();
  const answers = await burst(20, 'target-rpm', FREE);
  const calls = (await stats('l-trpm')).calls;
  assert.ok(calls >= 10 && calls <= 11, `upstream calls: ${calls}`);
  const ok = answers.filter((a) => a.res.status === 200);
  assert.equal(ok.length, calls);
  for (const { res, body } of answers.filter((a) => a.res.status !== 200)) {
    assertLimited(res, body, 'target_rpm');
    assert.equal(body.reason, 'rate_limited');
    assert.equal(body.retryable, true);
  }
  assert.ok(Date.now() - start < 30000, 'within the deadline');
  const refused = answers.length - ok.length;
  const lines = await accessLines('target-rpm', refused, (l) => l.status === 429);
  assert.ok(lines.every((l) => l.limited_by === 'target_rpm' && l.attempts === 0));
});

test('a target rpm is per key: two keys at rpm 3 serve 6 of 10, 3 on each key', async () => {
  const answers = await burst(10, 'per-key', FREE);
  const ok = answers.filter((a) => a.res.status === 200);
  assert.equal(ok.length, 6);
  assert.equal((await stats('l-per-key')).calls, 6);
  for (const { res, body } of answers.filter((a) => a.res.status !== 200))
    assertLimited(res, body, 'target_rpm');
  const seen = await sim.requests('l-per-key');
  const byKey = {};
  for (const r of seen) byKey[r.headers.authorization] = (byKey[r.headers.authorization] ?? 0) + 1;
  assert.deepEqual(byKey, { 'Bearer sk-k1': 3, 'Bearer sk-k2': 3 });
});

test('target rpm with an equivalent tier: the overflow is served there (20/20)', async () => {
  const answers = await burst(20, 'tiered', FREE);
  for (const { res, body } of answers) assert.equal(res.status, 200, JSON.stringify(body));
  const primary = (await stats('l-tier')).calls;
  const equivalent = (await stats('l-tier-eq')).calls;
  assert.ok(primary <= 11, `primary calls: ${primary}`);
  assert.equal(primary + equivalent, 20);
  const moved = answers.filter((a) => a.res.headers.get('x-bascule-target') === 'tqe');
  assert.equal(moved.length, equivalent);
  for (const { res } of moved)
    assert.equal(res.headers.get('x-bascule-recovery-reason'), 'primary_unavailable');
});

test('max_concurrency 2: never more than 2 in flight at the provider, all served by waiting', async () => {
  await sim.setModel('l-conc', { script: [{ action: 'delay', delay_ms: 1000 }], repeat: true });
  const answers = await burst(8, 'conc', FREE);
  for (const { res, body } of answers) assert.equal(res.status, 200, JSON.stringify(body));
  const s = await stats('l-conc');
  assert.equal(s.calls, 8);
  assert.ok(s.max_in_flight <= 2, `max in flight: ${s.max_in_flight}`);
  const lines = await accessLines('conc', 8);
  assert.ok(lines.some((l) => l.queued_ms > 0), 'some waited for a slot');
  // The attempt line of a request that waited says how long, and for which limit.
  const waited = lines.filter((l) => l.queued_ms > 0).map((l) => l.request_id);
  await waitFor(() => gw.accessLog().some((l) => l.type === 'attempt' && waited.includes(l.request_id)),
    { what: 'the attempt line of a request that waited' });
  const attempt = gw.accessLog().find((l) => l.type === 'attempt' && waited.includes(l.request_id));
  assert.ok(attempt.queued_ms > 0, JSON.stringify(attempt));
  assert.equal(attempt.limited_by, 'target_concurrency');
  const metrics = await (await fetch(`${gw.url}/metrics`)).text();
  assert.match(metrics, /bascule_limit_decisions_total\{limit="target_concurrency",outcome="queued"\} [1-9]/);
  assert.match(metrics, /bascule_limit_decisions_total\{limit="client_rpm",outcome="rejected"\} 5/);
  assert.match(metrics, /bascule_queue_depth\{target="tc"\} 0/);
  assert.match(metrics, /bascule_limit_decisions_total\{limit="target_rpm",outcome="moved_on"\} [1-9]/);
  // The status page: the configured limits, the slots in use and the queue, per target.
  const status = await (await fetch(`${gw.url}/status.json`, { headers: { authorization: `Bearer ${ADMIN}` } })).json();
  const tc = status.targets.find((t) => t.id === 'tc');
  assert.deepEqual(
    { ...tc.limits, provider: undefined },
    { rpm: 0, tpm: 0, max_concurrency: 2, queue_ms: 20000, effective_rpm: 0, effective_max_concurrency: 2,
      inflight: 0, queued: 0, provider: undefined },
  );
  assert.equal(tc.limits.provider.max_concurrency, 256);
  assert.equal(status.targets.find((t) => t.id === 'tr').limits.rpm, 10);
});
