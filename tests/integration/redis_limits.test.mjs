// SPDX-License-Identifier: MIT
// Limits shared through Redis (docs/internals/redis.md, "Rates and concurrency
// leases"): two gateway processes on one private redis-server enforce one client rpm and one
// target max_concurrency together -- exactly rpm served across both, never more than the
// slots in flight at the provider -- and the slots of a gateway killed with -9 come back to
// the others once its lease expires. store.timeout_ms is generous here: the claim is
// exactness while Redis answers (a slow answer turns the limits local, divided by
// store.instances, which docs/internals/redis.md describes and test_limits_fleet covers).
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startGateway, startSim, waitFor } from '../lib/harness.mjs';
import { startRedis } from '../lib/redis.mjs';

const KEY = 'redis-limits-client-key-0123456789';
const FREE = 'redis-limits-free-key-0123456789ab';
const KEY2 = 'redis-limits-client2-key-012345678';
const KEY3 = 'redis-limits-client3-key-012345678';
const TTL_MS = 6000;
let redis, sim, a, b;

function config(url) {
  return `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: info }
store: { kind: redis, url: "${url}", prefix: "l:", timeout_ms: 10000, instances: 2, lease_ttl_ms: ${TTL_MS} }
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-s"], health: { probe: none } }
targets:
  cl: { provider: sim, model: rl-client }
  tc: { provider: sim, model: rl-conc, max_concurrency: 2, queue_ms: 20000 }
  tk: { provider: sim, model: rl-kill, max_concurrency: 2 }
routes:
  client-rpm: { primary: [cl] }
  client-rpm-2: { primary: [cl] }
  client-rpm-3: { primary: [cl] }
  conc: { primary: [tc], envelope: { deadline_ms: 30000 } }
  kill: { primary: [tk], envelope: { deadline_ms: 60000 } }
clients:
  team: { key: "${KEY}", routes: ["*"], rpm: 10, rpm_burst: 10 }
  free: { key: "${FREE}", routes: ["*"] }
  team2: { key: "${KEY2}", routes: ["*"], rpm: 1000 }
  team3: { key: "${KEY3}", routes: ["*"], rpm: 10, rpm_burst: 10 }
`;
}

const sharing = (gw) => /shared limits: decided with the other instances/.test(gw.logs());

async function start() {
  const gw = await startGateway({ config: config(redis.url) });
  await waitFor(() => sharing(gw), { timeoutMs: 10000, what: 'limits shared through redis' });
  return gw;
}

const KEYS = { 'client-rpm': KEY, 'client-rpm-2': KEY2, 'client-rpm-3': KEY3 };

function chat(gw, model) {
  return fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${KEYS[model] ?? FREE}` },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  });
}

async function answer(gw, model) {
  const res = await chat(gw, model);
  return { res, body: await res.json() };
}

const stats = async (model) => (await sim.stats()).models[model] ?? { calls: 0, max_in_flight: 0, in_flight: 0 };

before(async () => {
  redis = await startRedis();
  sim = await startSim();
  a = await start();
  b = await start();
});

after(async () => {
  await a?.stop();
  await b?.stop();
  await sim?.stop();
  await redis?.stop();
});

// How often <gw> has said its limits turned local (Redis slow or gone: all sets, or one set
// whose ask went unanswered past timeout_ms).
const wentLocal = (gw) => (gw.logs().match(/shared limits: (?:[a-z]:\S* )?decided locally/g) ?? []).length;

test('client rpm 10 across two instances: exactly 10 of 16 concurrent served', async () => {
  const before = [wentLocal(a), wentLocal(b)];
  // 14 to one instance, 2 to the other: two local buckets of rpm / instances (5 each) would
  // serve 5 + 2 = 7, and a bucket per process 10 + 2 = 12; only the shared one serves 10.
  const answers = await Promise.all(
    Array.from({ length: 16 }, (_, i) => answer(i < 14 ? a : b, 'client-rpm')));
  const ok = answers.filter((x) => x.res.status === 200);
  const limited = answers.filter((x) => x.res.status !== 200);
  assert.equal(ok.length, 10, JSON.stringify(limited.map((x) => x.body)));
  for (const { res, body } of limited) {
    assert.equal(res.status, 429, JSON.stringify(body));
    assert.equal(body.error.code, 'rate_limited');
    assert.equal(res.headers.get('x-bascule-limited-by'), 'client_rpm');
    assert.ok(Number(res.headers.get('retry-after')) >= 1);
  }
  assert.equal((await stats('rl-client')).calls, 10);
  // Both instances served some: the bucket is one, not one per process.
  const served = (gw) => gw.accessLog().filter((l) => l.type === 'access' && l.route === 'client-rpm' && l.status === 200).length;
  await waitFor(() => served(a) + served(b) === 10, { what: 'the access lines of the 10 served' });
  // Decided with the fleet throughout: never a local decision (store.timeout_ms is 10 s here;
  // a build too slow for that fails here, loudly).
  assert.deepEqual([wentLocal(a), wentLocal(b)], before, 'no instance decided locally');
});

test('max_concurrency 2 across two instances: never more than 2 in flight, all served', async () => {
  const before = [wentLocal(a), wentLocal(b)];
  await sim.setModel('rl-conc', { script: [{ action: 'delay', delay_ms: 400 }], repeat: true });
  const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => answer(i % 2 ? a : b, 'conc')));
  for (const { res, body } of answers) assert.equal(res.status, 200, JSON.stringify(body));
  const s = await stats('rl-conc');
  assert.equal(s.calls, 8);
  // Exact while Redis answers, and it answers throughout (store.timeout_ms is 10 s): a
  // local decision here is a failure, not a reason to check less.
  assert.deepEqual([wentLocal(a), wentLocal(b)], before, 'no instance decided locally');
  assert.ok(s.max_in_flight <= 2, `max in flight: ${s.max_in_flight}`);
  // The slots went back: nothing is left leased in Redis -- at the latest when the lease of
  // a slot Redis still counts (a give lost on a slow build) has expired with its key.
  await waitFor(async () => (await redis.command('HLEN', 'l:{lim:t:tc}:slots')) === 0,
    { timeoutMs: 2 * TTL_MS + 5000, what: 'every slot given back' });
});

test('a gateway killed with -9 while holding slots: they come back after the lease TTL', async () => {
  const c = await start();
  await sim.setModel('rl-kill', { script: [{ action: 'delay', delay_ms: 60000 }], repeat: true });
  const held = [chat(c, 'kill').catch(() => null), chat(c, 'kill').catch(() => null)];
  await waitFor(async () => (await stats('rl-kill')).in_flight === 2,
    { timeoutMs: 10000, what: 'two calls held at the provider' });
  const killedAt = Date.now();
  c.proc.kill('SIGKILL');
  await Promise.all(held);
  await sim.setModel('rl-kill', { script: [] });
  // The dead process's slots are still leased for up to TTL_MS: refused meanwhile.
  // The lease was renewed at most TTL_MS / 3 before the kill: the slots are held for at
  // least 4 s after it, far more than one request takes. Checked always: a build so slow
  // that it does not answer within that fails here.
  const early = await answer(a, 'kill');
  const earlyMs = Date.now() - killedAt;
  assert.equal(early.res.status, 429, `${earlyMs} ms after the kill: ${JSON.stringify(early.body)}`);
  assert.equal(early.res.headers.get('x-bascule-limited-by'), 'target_concurrency');
  // Once the lease expired, the capacity is the fleet's again.
  let last;
  await waitFor(async () => (last = await answer(a, 'kill')).res.status === 200,
    { timeoutMs: TTL_MS + 10000, everyMs: 200, what: 'the dead gateway\'s slots back' });
  assert.equal(last.res.status, 200);
});

// Whether <gw>'s last word on its limits is that they are shared (not local).
function sharedNow(gw) {
  const logs = gw.logs();
  return logs.lastIndexOf('shared limits: decided with') > logs.lastIndexOf('shared limits: decided locally');
}

// The time a request spent in ADMIT, from its access line (milliseconds).
async function admitMs(gw, requestId) {
  let line;
  await waitFor(() => (line = gw.accessLog().find((l) => l.type === 'access' && l.request_id === requestId)),
    { what: `the access line of ${requestId}` });
  return line.states?.admit ?? 0;
}

test('Redis slower than a PING period but within store.timeout_ms: nothing turns local, the ask is answered', async () => {
  const before = [wentLocal(a), wentLocal(b)];
  redis.pause();
  const resume = new Promise((resolve) => setTimeout(() => { redis.resume(); resolve(); }, 2500));
  try {
    const { res, body } = await answer(a, 'client-rpm-2');
    assert.equal(res.status, 200, JSON.stringify(body));
  } finally {
    await resume;
  }
  // store.timeout_ms is 10 s here: a 2.5 s pause is a slow Redis, not an absent one.
  assert.deepEqual([wentLocal(a), wentLocal(b)], before, 'no instance decided locally');
  assert.ok(sharedNow(a) && sharedNow(b));
});

test('Redis paused: a limit\'s ask waits at most store.timeout_ms, then the instance decides alone', async () => {
  // An instance of its own with a short store.timeout_ms: how long a Redis call may take is
  // the operator's, and a pause shorter than it turns nothing local (a, b: 10 s).
  const c = await startGateway({ config: config(redis.url).replace('timeout_ms: 10000', 'timeout_ms: 1500') });
  try {
    await waitFor(() => sharing(c), { timeoutMs: 10000, what: 'limits shared through redis' });
    redis.pause();
    try {
      const started = Date.now();
      const { res, body } = await answer(c, 'client-rpm-2');
      assert.equal(res.status, 200, JSON.stringify(body));
      const ms = await admitMs(c, res.headers.get('x-request-id'));
      // 1500 is c's store.timeout_ms; the rest is scheduling slack on a loaded machine.
      assert.ok(ms <= 1500 + 1000, `admitted after ${ms} ms`);
      assert.ok(Date.now() - started < 10000);
    } finally {
      redis.resume();
    }
    assert.match(c.logs(), /shared limits: (?:[a-z]:\S* )?decided locally/);
    await waitFor(() => sharedNow(c) && sharedNow(a) && sharedNow(b),
      { timeoutMs: 15000, what: 'limits shared again once Redis answers' });
  } finally {
    await c.stop();
  }
});

test('Redis gone: each instance enforces the limits divided by store.instances', async () => {
  await waitFor(() => sharedNow(b), { timeoutMs: 15000, what: 'limits shared before Redis goes' });
  const count = (re) => (b.logs().match(re) ?? []).length;
  const local = count(/shared limits: decided locally/g);
  const shared = count(/shared limits: decided with the other instances/g);
  await redis.kill9();
  await waitFor(() => count(/shared limits: decided locally/g) > local, { timeoutMs: 10000, what: 'limits local' });
  // rpm 10 (burst 10) over instances: 2 is a burst of 5 on this instance.
  const answers = [];
  for (let i = 0; i < 7; i++) answers.push(await answer(b, 'client-rpm-3'));
  assert.deepEqual(answers.map((x) => x.res.status), [200, 200, 200, 200, 200, 429, 429]);
  assert.equal(answers[5].res.headers.get('x-bascule-limited-by'), 'client_rpm');
  await redis.restart();
  await waitFor(() => count(/shared limits: decided with the other instances/g) > shared,
    { timeoutMs: 15000, what: 'limits shared again after Redis restarted' });
});
