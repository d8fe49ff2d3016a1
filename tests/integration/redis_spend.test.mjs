// SPDX-License-Identifier: MIT
// Client spend and budgets with store.kind redis (docs/internals/redis.md): two gateway
// processes on one private redis-server add every cost to one record per client and period,
// so a budget spent through one instance stops the client on the other; each store answer
// (an add's total, a read) refreshes an instance's figure, and a figure older than a second
// is read again, so an operator's reset on one instance reaches the other; spend made while
// Redis is gone is kept and added when Redis is back, on top of what Redis kept in its AOF.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startGateway, startSim, waitFor } from '../lib/harness.mjs';
import { startRedis } from '../lib/redis.mjs';

const KEYS = {
  alpha: 'alpha-key-0123456789abcdef',
  gamma: 'gamma-key-0123456789abcdef',
  delta: 'delta-key-0123456789abcdef',
};
const ADMIN = 'admin-key-0123456789abcdef';
const DAY_MS = 86400000;
const TIMEOUT_MS = 250;
const FRESH_MS = 1000; // SPEND_FRESH_MS (src/router/spend.h)
let redis, sim, a, b;

// Each answer has 2 completion tokens at $1 each: exactly $2 a request, so a $5 budget admits
// a third request (spent $4 < $5) and that one crosses it ($6). The store timeout is not
// tight: a read that times out admits (a budget fails open), which load must not cause.
function config() {
  return `listen: "127.0.0.1:{{PORT}}"
workers: 2
admin: { key: "${ADMIN}" }
store: { kind: redis, url: "${redis.url}", prefix: "s:", timeout_ms: ${TIMEOUT_MS} }
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-s"], health: { probe: none } }
targets:
  t1:
    provider: sim
    model: b-model
    price: { input_per_mtok: 0, output_per_mtok: 1000000 }
routes:
  chat: { primary: [t1] }
clients:
  alpha: { key: "\${K_ALPHA}", routes: [chat], budget: { usd: 5, period: day } }
  gamma: { key: "\${K_GAMMA}", routes: [chat], budget: { usd: 5, period: month } }
  delta: { key: "\${K_DELTA}", routes: [chat], budget: { usd: 1000, period: total } }
`;
}

const env = { K_ALPHA: KEYS.alpha, K_GAMMA: KEYS.gamma, K_DELTA: KEYS.delta };

const chat = (gw, client) =>
  fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${KEYS[client]}` },
    body: JSON.stringify({ model: 'chat', messages: [{ role: 'user', content: 'hi' }] }),
  });

async function served(gw, client) {
  const res = await chat(gw, client);
  assert.equal(res.status, 200, await res.clone().text());
  await res.arrayBuffer();
}

async function expectBudgetExceeded(res) {
  assert.equal(res.status, 429);
  assert.equal(res.headers.get('x-bascule-limited-by'), 'budget');
  assert.equal(res.headers.get('x-should-retry'), 'false');
  const body = await res.json();
  assert.equal(body.error.code, 'budget_exceeded');
  assert.equal(body.retryable, false);
}

const admin = (gw, p, method = 'GET') =>
  fetch(`${gw.url}/admin/${p}`, { method, headers: { authorization: `Bearer ${ADMIN}` } });

async function clientView(gw, id) {
  const { clients } = await (await admin(gw, 'clients')).json();
  return clients.find((c) => c.id === id);
}

/** The Redis key of a client's spend in its current period, from the gateway's own view. */
async function spendKey(id) {
  return `s:{spend:${id}:${(await clientView(a, id)).period_start_ms}}`;
}

/** Costs are added to the store after the answer is sent: wait until Redis has them. */
async function inRedis(id, usd) {
  const key = await spendKey(id);
  await waitFor(async () => Number(await redis.command('GET', key)) === usd,
    { what: `$${usd} in ${key}` });
  return key;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function storeUp(gw) {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const m = /^bascule_store_up (\d+)/m.exec(text);
  return m ? Number(m[1]) : null;
}

const bothStore = (v) => waitFor(async () => (await storeUp(a)) === v && (await storeUp(b)) === v,
  { timeoutMs: 10000, what: `bascule_store_up ${v} on both gateways` });

before(async () => {
  redis = await startRedis();
  sim = await startSim();
  await sim.setModel('b-model', { tokens: 2 });
  a = await startGateway({ env, config: config() });
  b = await startGateway({ env, config: config() });
  await bothStore(1);
});

after(async () => {
  await a?.stop();
  await b?.stop();
  await sim?.stop();
  await redis?.stop();
});

test('a budget spent through one instance stops the client on the other, with no upstream call', async () => {
  for (let i = 0; i < 3; i++) await served(a, 'alpha');
  await expectBudgetExceeded(await chat(a, 'alpha'));
  const key = await inRedis('alpha', 6); // one record: the fleet's spend crossed the budget
  const calls = await sim.calls('b-model');
  await expectBudgetExceeded(await chat(b, 'alpha'));
  assert.equal(await sim.calls('b-model'), calls, 'no upstream call from the other instance');

  const ttl = await redis.command('PTTL', key);
  assert.ok(ttl > DAY_MS && ttl <= 2 * DAY_MS, `a day period lives two days: ${ttl}`);
  const view = await clientView(b, 'alpha');
  assert.equal(view.spend_usd, 6);
  assert.equal(view.budget_left_usd, 0);
});

test('an instance that already has a figure reads the fleet\'s again once it is a second old', async () => {
  await served(b, 'gamma');
  await inRedis('gamma', 2); // b's figure: $2
  await served(a, 'gamma');
  await served(a, 'gamma');
  const key = await inRedis('gamma', 6);
  await expectBudgetExceeded(await chat(a, 'gamma'));
  // b's figure last came from the store when its add answered, at most TIMEOUT_MS after its
  // request; past FRESH_MS from then it is read again before a check. Not a guess at
  // scheduling: both are bounds the code keeps; the margin covers a loaded machine.
  await sleep(FRESH_MS + TIMEOUT_MS + 750);
  const calls = await sim.calls('b-model');
  await expectBudgetExceeded(await chat(b, 'gamma'));
  assert.equal(await sim.calls('b-model'), calls);
  const ttl = await redis.command('PTTL', key);
  assert.ok(ttl > 31 * DAY_MS && ttl <= 32 * DAY_MS, `a month period lives 32 days: ${ttl}`);
});

test('a reset on one instance reaches the other within its refresh', async () => {
  const r = await admin(a, 'clients/alpha/reset-spend', 'POST');
  assert.equal(r.status, 200);
  assert.equal(Number(await redis.command('GET', await spendKey('alpha'))), 0);
  // b refused alpha on a figure of $6; refused requests cost nothing, so poll until b read
  // the record again (a figure older than a second is).
  const res = await waitFor(async () => {
    const got = await chat(b, 'alpha');
    if (got.status === 200) return got;
    await expectBudgetExceeded(got);
    return null;
  }, { timeoutMs: 10000, everyMs: 100, what: 'b admitting alpha after the reset on a' });
  await res.arrayBuffer();
  await inRedis('alpha', 2);
});

test('spend made while Redis is gone is added when it is back, on top of what it kept', async () => {
  await served(a, 'delta');
  const key = await inRedis('delta', 2);
  assert.equal(await redis.command('PTTL', key), -1, 'a total is a durable record');

  await redis.kill9();
  await bothStore(0);
  await served(a, 'delta');
  await served(a, 'delta');
  await served(b, 'delta');
  // The book keeps counting while Redis is away.
  assert.equal((await clientView(a, 'delta')).spend_usd, 6);

  await redis.restart(); // from its AOF: the $2 made before
  await bothStore(1);
  await waitFor(async () => Number(await redis.command('GET', key)) === 8,
    { timeoutMs: 10000, what: 'the kept $6 added to the $2 Redis had' });
  assert.match(a.logs(), /kept while redis was away/);
  assert.match(b.logs(), /kept while redis was away/);
  await served(b, 'delta');
  await inRedis('delta', 10); // added once, not twice
  assert.equal((await clientView(a, 'delta')).spend_usd, 10);
});
