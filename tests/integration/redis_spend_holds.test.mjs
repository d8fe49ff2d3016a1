// SPDX-License-Identifier: MIT
// Issue 24 item 3 across instances (docs/internals/redis.md, "Spend and budgets"): two
// gateways share one Redis; each admitted request's hold is an add to the fleet's spend
// record, and the record before that add decides. 100 requests at once, half through each
// instance, each costing exactly its estimate ($0.015), against $0.01 serve exactly one
// (the first hold Redis applies finds the record at 0; every later one finds it past the
// budget), and against $0.10 at most seven. Once all are done the record is exactly what
// the served ones cost: every hold was given back, by the refused and by clients that left
// -- also one that left while ADMIT waited for Redis to answer its hold (a third instance
// talks to Redis through a proxy that holds the replies back).
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startGateway, startSim, waitFor } from '../lib/harness.mjs';
import { startRedis, startReplyDelayProxy } from '../lib/redis.mjs';

const ADMIN = 'admin-key-0123456789abcdef';
const KEYS = {
  one: 'one-key-0123456789abcdef-1',
  seven: 'seven-key-0123456789abcdef',
  leaver: 'leaver-key-0123456789abcdef',
  waiter: 'waiter-key-0123456789abcdef',
};
const HOLD_MS = 600; // under the store's 1 s ping period: it stays up
const N = 100;
const COST = 0.015;
let redis, proxy, sim, a, b, c;

const config = (url = redis.url) => `listen: "127.0.0.1:{{PORT}}"
workers: 2
admin: { key: "${ADMIN}" }
store: { kind: redis, url: "${url}", prefix: "h:", timeout_ms: 5000 }
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-s"], health: { probe: none } }
targets:
  t1: { provider: sim, model: h-model, price: { input_per_mtok: 0, output_per_mtok: 7500 } }
  t2: { provider: sim, model: hang-model, price: { input_per_mtok: 0, output_per_mtok: 7500 } }
routes:
  chat: { primary: [t1] }
  hang: { primary: [t2] }
clients:
  one: { key: "\${K_ONE}", routes: [chat], budget: { usd: 0.01, period: day } }
  seven: { key: "\${K_SEVEN}", routes: [chat], budget: { usd: 0.1, period: day } }
  leaver: { key: "\${K_LEAVER}", routes: [hang], budget: { usd: 0.05, period: day } }
  waiter: { key: "\${K_WAITER}", routes: [chat], budget: { usd: 0.05, period: day } }
`;

const env = () => ({ K_ONE: KEYS.one, K_SEVEN: KEYS.seven, K_LEAVER: KEYS.leaver, K_WAITER: KEYS.waiter });

before(async () => {
  redis = await startRedis();
  sim = await startSim();
  await sim.setModel('h-model', { tokens: 2, script: [{ action: 'delay', delay_ms: 300 }], repeat: true });
  await sim.setModel('hang-model', { tokens: 2, script: [{ action: 'hang' }], repeat: true });
  a = await startGateway({ env: env(), config: config() });
  b = await startGateway({ env: env(), config: config() });
  proxy = await startReplyDelayProxy(redis.port);
  c = await startGateway({ env: env(), config: config(proxy.url) });
});

after(async () => {
  await a?.stop();
  await b?.stop();
  await c?.stop();
  await proxy?.stop();
  await sim?.stop();
  await redis?.stop();
});

const chat = (gw, client, model = 'chat', signal) =>
  fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', signal,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${KEYS[client]}` },
    body: JSON.stringify({ model, max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] }),
  });

const view = async (gw, id) => {
  const res = await fetch(`${gw.url}/admin/clients`, { headers: { authorization: `Bearer ${ADMIN}` } });
  return (await res.json()).clients.find((c) => c.id === id);
};

/** The fleet's record of <id> in Redis once it settles on <want> (holds given back). */
async function record(id, want) {
  const key = `h:{spend:${id}:${(await view(a, id)).period_start_ms}}`;
  const got = await waitFor(async () => {
    const v = Number(await redis.command('GET', key));
    return Math.abs(v - want) < 1e-9 ? { v } : null;
  }, { what: `$${want} in ${key}` });
  return got.v;
}

async function burst(client) {
  const answers = await Promise.all(Array.from({ length: N }, async (_, i) => {
    const res = await chat(i % 2 ? b : a, client);
    const body = await res.json();
    if (res.status !== 200) {
      assert.equal(res.status, 429);
      assert.equal(body.error.code, 'budget_exceeded');
    }
    return res.status;
  }));
  return answers.filter((s) => s === 200).length;
}

test('100 requests at once through two instances against $0.01 serve exactly one', async () => {
  const calls = await sim.calls('h-model');
  assert.equal(await burst('one'), 1);
  assert.equal(await sim.calls('h-model'), calls + 1);
  await record('one', COST);
  assert.equal((await view(a, 'one')).in_flight, 0);
  assert.equal((await view(b, 'one')).in_flight, 0);
});

test('100 requests at once through two instances against $0.10: at most the budget and one estimate', async () => {
  const served = await burst('seven');
  assert.ok(served >= 1 && served <= 7, `${served} served`);
  const v = await record('seven', served * COST);
  assert.ok(v <= 0.1 + COST, `the fleet spent ${v}`);
});

test('holds of clients that leave are given back in the fleet\'s record', async () => {
  const acs = Array.from({ length: 4 }, () => new AbortController());
  const started = await sim.calls('hang-model');
  const pending = acs.map((ac, i) => chat(i % 2 ? b : a, 'leaver', 'hang', ac.signal).catch(() => null));
  await waitFor(async () => (await sim.calls('hang-model')) === started + 4, { what: 'four requests upstream' });
  await record('leaver', 4 * COST); // four holds in the fleet's record while they hang
  const refused = await chat(b, 'leaver', 'hang'); // $0.06 held of $0.05
  assert.equal(refused.status, 429);
  await refused.arrayBuffer();
  for (const ac of acs) ac.abort();
  await Promise.all(pending);
  await record('leaver', 0); // nothing generated, a free prompt: nothing spent, nothing held
});

test('a client that leaves while its hold waits for Redis leaves nothing held', async () => {
  const key = `h:{spend:waiter:${(await view(a, 'waiter')).period_start_ms}}`;
  const count = () => proxy.sent().split('spend:waiter').length - 1;
  const before = count();
  proxy.hold(HOLD_MS);
  const ac = new AbortController();
  const leaving = chat(c, 'waiter', 'chat', ac.signal).catch(() => null);
  // c has no figure for waiter yet: a read, then (once it answers) the hold's add.
  await waitFor(() => count() >= before + 2, { timeoutMs: 10000, everyMs: 5, what: 'the hold sent' });
  ac.abort();
  await leaving;
  proxy.hold(0);
  await record('waiter', 0);
  await waitFor(async () => (await view(c, 'waiter')).in_flight === 0, { what: 'nothing in flight on c' });
  const res = await chat(c, 'waiter'); // and the budget is whole: served
  assert.equal(res.status, 200, await res.clone().text());
  await res.arrayBuffer();
  await record('waiter', COST);
  assert.equal(Number(await redis.command('PTTL', key)) > 0, true, 'the record keeps its TTL');
});
