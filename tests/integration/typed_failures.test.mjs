// Typed failures agree with themselves: body `retryable`, `Retry-After` / `retry-after-ms` /
// body `retry_after_ms`, and `x-should-retry` come from one decision. What no wait can fix
// (a request too large for every window, targets disabled by the admin) carries no wait
// and x-should-retry: false; what time fixes (an open circuit, a cooling key) carries the
// wait, and x-should-retry: true only when nothing went upstream.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startSim, startGateway } from '../lib/harness.mjs';

const ADMIN = 'typed-failures-admin-key-0123456789';
let sim, gw;

before(async () => {
  sim = await startSim();
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: warn }
admin: { key: "${ADMIN}" }
retry: { budget: { ratio: 10, min_per_s: 1000, window_ms: 10000 } }
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-t1"], health: { probe: none } }
  rl: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-t2"], health: { probe: none } }
targets:
  windowed: { provider: sim, model: t-windowed, context_window: 128000 }
  off1: { provider: sim, model: t-off1 }
  off2: { provider: sim, model: t-off2 }
  fragile: { provider: sim, model: t-fragile, breaker: { consecutive_failures: 1, open_ms: 40000, panic: false } }
  limited: { provider: rl, model: t-limited }
routes:
  big: { primary: [windowed] }
  dark: { primary: [off1], equivalent: [off2] }
  fragile:
    primary: [fragile]
    envelope: { max_attempts: 1 }
  limited:
    primary: [limited]
    envelope: { max_attempts: 1 }
`,
  });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

function chat(model, extra = {}) {
  return fetch(`${gw.base}/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], ...extra }) });
}

const admin = (p) => fetch(`${gw.url}/admin/targets/${p}`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}` } });

// The three signals of a failure that is not retryable.
async function notRetryable(res, status) {
  assert.equal(res.status, status, await res.clone().text());
  assert.equal(res.headers.get('x-should-retry'), 'false');
  assert.equal(res.headers.get('retry-after'), null);
  assert.equal(res.headers.get('retry-after-ms'), null);
  const body = await res.json();
  assert.equal(body.retryable, false);
  assert.equal(body.retry_after_ms, null);
  return body;
}

test('max_tokens past every context window: 400, not retryable, no Retry-After', async () => {
  const body = await notRetryable(await chat('big', { max_tokens: 100000000 }), 400);
  assert.equal(body.reason, 'no_eligible_fallback');
  assert.equal(body.error.type, 'invalid_request_error');
  assert.match(body.error.message, /context window/);
  assert.equal(await sim.calls('t-windowed'), 0);
});

test('every target disabled by the admin: 503 with x-should-retry false and no wait', async () => {
  assert.equal((await admin('off1/disable')).status, 200);
  assert.equal((await admin('off2/disable')).status, 200);
  try {
    const body = await notRetryable(await chat('dark'), 503);
    assert.equal(body.reason, 'no_eligible_fallback');
    assert.match(body.error.message, /disabled/);
  } finally {
    await admin('off1/enable');
    await admin('off2/enable');
  }
  const res = await chat('dark');
  assert.equal(res.status, 200, 'enabled again: served');
  await res.arrayBuffer();
});

test('an open circuit: 503 retryable, Retry-After until it half-opens, x-should-retry true', async () => {
  await sim.setModel('t-fragile', { script: [{ action: 'status', status: 500, times: 1 }] });
  const first = await chat('fragile');
  assert.equal(first.status, 503, await first.clone().text());
  const firstBody = await first.json();
  assert.equal(firstBody.reason, 'attempts_exhausted');
  assert.equal(firstBody.retryable, true, 'a server error may pass');
  assert.equal(first.headers.get('x-should-retry'), 'false', 'the gateway already tried');
  assert.ok(Number(first.headers.get('retry-after')) >= 1);
  // The failure opened the circuit (consecutive_failures: 1) before the answer was sent; with
  // panic: false nothing is tried while it is open.
  const res = await chat('fragile');
  assert.equal(res.status, 503, await res.clone().text());
  assert.equal(res.headers.get('x-should-retry'), 'true', 'nothing went upstream');
  const wait = Number(res.headers.get('retry-after-ms'));
  assert.ok(wait > 30000 && wait <= 40000, `retry-after-ms ${wait}`);
  assert.equal(res.headers.get('retry-after'), String(Math.ceil(wait / 1000)));
  const body = await res.json();
  assert.equal(body.retryable, true);
  assert.equal(body.retry_after_ms, wait);
  assert.equal(await sim.calls('t-fragile'), 1);
});

test('a cooling key: 429 rate_limited with the provider\'s wait', async () => {
  await sim.setModel('t-limited', { script: [{ action: 'status', status: 429, headers: { 'retry-after': '20' } }] });
  const first = await chat('limited');
  assert.equal(first.status, 429, await first.clone().text());
  await first.arrayBuffer();
  const res = await chat('limited');
  assert.equal(res.status, 429);
  assert.equal(res.headers.get('x-should-retry'), 'true');
  const body = await res.json();
  assert.equal(body.reason, 'rate_limited');
  assert.equal(body.retryable, true);
  assert.ok(body.retry_after_ms > 15000 && body.retry_after_ms <= 20000, `${body.retry_after_ms}`);
  assert.equal(await sim.calls('t-limited'), 1);
});
