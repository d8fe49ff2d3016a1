// SPDX-License-Identifier: MIT
// Shared health state through Redis (docs/internals/redis.md): two gateway processes on one
// private redis-server. A circuit opened through one is open on the other, which then
// sends the failing target at most one call; a Retry-After seen by one cools the key on
// the other, which then does not call the provider with it. Redis restarted empty: both
// reconnect and keep serving, and the next transition is shared again.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startGateway, startSim, waitFor } from '../lib/harness.mjs';
import { startRedis } from '../lib/redis.mjs';

let redis, sim, a, b;
const ADMIN = 'test-admin-key-0123456789';

function config(url) {
  return `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: info }
store: { kind: redis, url: "${url}", prefix: "h:" }
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-s"], health: { probe: none } }
  lim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-l"], health: { probe: none } }
targets:
  bad@sim: { provider: sim, model: u-bad, breaker: { consecutive_failures: 2, open_ms: 60000, panic: false } }
  probe@sim: { provider: sim, model: u-probe, breaker: { consecutive_failures: 2, open_ms: 1500, half_open_probes: 1, panic: false } }
  grow@sim: { provider: sim, model: u-grow, breaker: { consecutive_failures: 2, open_ms: 20000, open_backoff: 3, max_open_ms: 600000 } }
  rl@lim: { provider: lim, model: u-rl }
routes:
  bad: { primary: [bad@sim], envelope: { deadline_ms: 3000 } }
  rl: { primary: [rl@lim], envelope: { deadline_ms: 2000 } }
  probe: { primary: [probe@sim], envelope: { deadline_ms: 800, max_attempts: 1 } }
  grow: { primary: [grow@sim], envelope: { deadline_ms: 2000, max_attempts: 1 } }
admin: { key: "${ADMIN}" }
`;
}

async function breakerState(gw, target) {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  // The state whose series is 1, as the old single gauge's code (0 closed ... 3 ramping).
  const codes = { closed: 0, open: 1, half_open: 2, ramping: 3 };
  const m = new RegExp(`^bascule_breaker_state\\{target="${target}",state="(\\w+)"\\} 1$`, 'm').exec(text);
  return m ? codes[m[1]] : null;
}

async function chat(gw, model) {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  });
  await res.arrayBuffer();
  return res;
}

async function storeUp(gw) {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  return /^bascule_store_up 1/m.test(text);
}

before(async () => {
  redis = await startRedis();
  sim = await startSim();
  a = await startGateway({ config: config(redis.url) });
  b = await startGateway({ config: config(redis.url) });
  await waitFor(async () => (await storeUp(a)) && (await storeUp(b)),
    { timeoutMs: 10000, what: 'both gateways connected to redis' });
  // Both subscribed: a message published now reaches two subscribers.
  await waitFor(async () => (await redis.command('PUBSUB', 'NUMSUB', 'h:events'))[1] === 2,
    { timeoutMs: 10000, what: 'both gateways subscribed' });
});

after(async () => {
  await a?.stop();
  await b?.stop();
  await sim?.stop();
  await redis?.stop();
});

test('a circuit opened through one instance is open on the other (<= 1 call from it)', async (t) => {
  await sim.setModel('u-bad', { script: [{ action: 'status', status: 503, times: 1000 }] });
  for (let i = 0; i < 10 && (await breakerState(a, 'bad@sim')) !== 1; i++) await chat(a, 'bad');
  assert.equal(await breakerState(a, 'bad@sim'), 1, 'open on the first instance');
  const t0 = Date.now();
  await waitFor(async () => (await breakerState(b, 'bad@sim')) === 1,
    { timeoutMs: 5000, everyMs: 5, what: 'the circuit open on the second instance' });
  t.diagnostic(`seen open by the other instance after <= ${Date.now() - t0} ms`);
  const before = await sim.calls('u-bad');
  for (let i = 0; i < 3; i++) {
    const res = await chat(b, 'bad');
    assert.notEqual(res.status, 200);
  }
  assert.ok((await sim.calls('u-bad')) - before <= 1, 'the second instance called the open target at most once');
  assert.equal(await redis.command('EXISTS', 'h:{circuit:sim|u-bad|*|*}'), 1);
});

test('a Retry-After seen by one instance is honoured by the other (key cooldown)', async () => {
  await sim.setModel('u-rl', { script: [{ action: 'status', status: 429, times: 1000, headers: { 'retry-after': '5' } }] });
  const from = b.logs().length;
  const first = await chat(a, 'rl');
  assert.equal(first.status, 429);
  assert.equal(await sim.calls('u-rl'), 1);
  await waitFor(() => /key 0 of provider lim cools down/.test(b.logs().slice(from)),
    { timeoutMs: 5000, what: 'the cooldown announced to the second instance' });
  const second = await chat(b, 'rl');
  assert.equal(second.status, 429);
  const ra = Number(second.headers.get('retry-after'));
  assert.ok(ra >= 1 && ra <= 5, `Retry-After ${ra}`);
  assert.equal(await sim.calls('u-rl'), 1, 'the second instance did not use the cooling key');
  const ttl = await redis.command('PTTL', 'h:{cool:lim:0}');
  assert.ok(ttl > 0 && ttl <= 5000, `the cooldown key has a TTL (${ttl})`);
});

async function reopened(gw, target) {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const m = new RegExp(`^bascule_breaker_transitions_total\\{target="${target}",to="open"\\} (\\d+)`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

test('half-open probes are limited across instances: one probe for both', async () => {
  // Two failures open the circuit; then every call hangs past the deadline, so a probe
  // holds its half-open window open long enough for the other instance to probe too if
  // it were allowed to.
  await sim.setModel('u-probe', { script: [{ action: 'status', status: 503, times: 2 }, { action: 'hang', times: 1000 }] });
  for (let i = 0; i < 4 && (await breakerState(a, 'probe@sim')) !== 1; i++) await chat(a, 'probe');
  assert.equal(await breakerState(a, 'probe@sim'), 1);
  await waitFor(async () => (await breakerState(b, 'probe@sim')) === 1, { what: 'open on the second instance' });
  const before = await sim.calls('u-probe');
  const opensA = await reopened(a, 'probe@sim');
  const opensB = await reopened(b, 'probe@sim');
  const pending = [];
  // Both instances get traffic through the end of the open period until a probe failed
  // and reopened a circuit (the event that ends the half-open window).
  await waitFor(async () => {
    pending.push(chat(a, 'probe'), chat(b, 'probe'));
    return (await reopened(a, 'probe@sim')) > opensA || (await reopened(b, 'probe@sim')) > opensB;
  }, { timeoutMs: 10000, everyMs: 50, what: 'a probe that failed and reopened the circuit' });
  await Promise.all(pending);
  assert.equal((await sim.calls('u-probe')) - before, 1, 'one probe in total across both instances');
});

async function retryAfterMs(gw, id) {
  const res = await fetch(`${gw.url}/admin/targets`, { headers: { authorization: `Bearer ${ADMIN}` } });
  return (await res.json()).targets.find((t) => t.id === id).retry_after_ms;
}

test('the growing open time is shared: an opening carries its length and count', async () => {
  const key = 'h:{circuit:sim|u-grow|*|*}';
  await sim.setModel('u-grow', { script: [{ action: 'status', status: 503, times: 1000 }] });
  for (let i = 0; i < 4 && (await breakerState(a, 'grow@sim')) !== 1; i++) await chat(a, 'grow');
  await waitFor(async () => (await redis.command('GET', key)) === 'open 1', { what: 'the first opening in Redis' });
  // Every circuit is open: the next request on a is a panic probe; it fails and reopens the
  // circuit for 3 x 20 s, which b hears with the count.
  await chat(a, 'grow');
  await waitFor(async () => (await redis.command('GET', key)) === 'open 2', { what: 'the second opening in Redis' });
  await waitFor(async () => (await retryAfterMs(b, 'grow@sim')) > 20000,
    { what: 'the longer open time on the second instance' });
  // b's own failed probe now opens for 20 s x 3^2: it counted a's openings as its own.
  const before = await sim.calls('u-grow');
  await chat(b, 'grow');
  assert.equal((await sim.calls('u-grow')) - before, 1, 'b probed in panic');
  await waitFor(async () => (await redis.command('GET', key)) === 'open 3', { what: 'the third opening in Redis' });
  const ttl = await redis.command('PTTL', key);
  assert.ok(ttl > 60000 && ttl <= 180000, `the third opening lasts 180 s (${ttl} ms left)`);
  await waitFor(async () => (await retryAfterMs(a, 'grow@sim')) > 60000,
    { what: 'a follows the third opening' });
});

test('Redis restarted empty: both instances reconnect, serve, and share the next transition', async () => {
  await redis.command('FLUSHALL');
  await redis.kill9();
  await redis.restart();
  assert.equal(await redis.command('DBSIZE'), 0);
  await waitFor(async () => (await redis.command('PUBSUB', 'NUMSUB', 'h:events'))[1] === 2,
    { timeoutMs: 10000, what: 'both gateways subscribed again' });
  const from = b.logs().length;
  await sim.setModel('u-rl', { script: [{ action: 'status', status: 429, times: 1000, headers: { 'retry-after': '3' } }] });
  // The key of lim may still cool from the last test (then a answers 429 without a call):
  // ask until a sees a fresh 429 and announces it again.
  await waitFor(async () => (await chat(a, 'rl')).status === 429 && /cools down/.test(b.logs().slice(from)),
    { timeoutMs: 15000, everyMs: 500, what: 'a new cooldown shared after the restart' });
  assert.equal(await redis.command('EXISTS', 'h:{cool:lim:0}'), 1);
  assert.equal(a.proc.exitCode, null);
  assert.equal(b.proc.exitCode, null);
});
