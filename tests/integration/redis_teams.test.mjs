// SPDX-License-Identifier: MIT
// Teams with store.kind redis (docs/internals/keys.md "Teams"): two gateway processes on one
// private redis-server. A team change made on one instance is served by the other within a
// second (the teams are in the keyring document each instance polls), and a team budget is
// one spend record for the fleet: two keys spending on two instances cross it together.
// Waits poll for the change with a bound, never sleep.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startGateway, startSim, waitFor } from '../lib/harness.mjs';
import { startRedis } from '../lib/redis.mjs';

const ADMIN = 'admin-key-0123456789abcdef';
let redis, sim, a, b;

// Each answer of t1 has 2 completion tokens at $1 each: $2 a request.
function config() {
  return `listen: "127.0.0.1:{{PORT}}"
workers: 2
admin: { key: "${ADMIN}" }
store: { kind: redis, url: "${redis.url}", prefix: "rt:", timeout_ms: 1000 }
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-s"], health: { probe: none } }
targets:
  t1:
    provider: sim
    model: rt-model
    price: { input_per_mtok: 0, output_per_mtok: 1000000 }
routes:
  chat: { primary: [t1] }
  chat2: { primary: [t1] }
`;
}

before(async () => {
  redis = await startRedis();
  sim = await startSim();
  await sim.setModel('rt-model', { tokens: 2 });
  a = await startGateway({ config: config() });
  b = await startGateway({ config: config() });
});

after(async () => {
  await a?.stop();
  await b?.stop();
  await sim?.stop();
  await redis?.stop();
});

async function status(gw, key, model = 'chat') {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }),
  });
  const body = await res.json().catch(() => ({}));
  return res.status === 429 ? `429 ${body.error?.code}` : res.status;
}

async function admin(gw, p, method = 'GET', body) {
  const res = await fetch(`${gw.url}/admin/${p}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, json: await res.json() };
}

test('a team change on one instance is served by the other within a second', async () => {
  assert.equal((await admin(a, 'teams', 'POST', { id: 'fleet' })).status, 201);
  const k = await admin(a, 'keys', 'POST', { client: 'fay', team: 'fleet', routes: ['*'] });
  assert.equal(k.status, 201);
  await waitFor(async () => (await status(b, k.json.secret, 'chat2')) === 200, {
    timeoutMs: 5000, everyMs: 25, what: 'the key served on the other instance',
  });
  const p = await admin(a, 'teams/fleet', 'PATCH', { routes: ['chat'] });
  assert.equal(p.status, 200);
  const t0 = Date.now();
  assert.equal(await status(a, k.json.secret, 'chat2'), 404, 'narrowed at once where made');
  await waitFor(async () => (await status(b, k.json.secret, 'chat2')) === 404, {
    timeoutMs: 5000, everyMs: 25, what: "the team's narrower routes on the other instance",
  });
  const seen = Date.now() - t0;
  assert.ok(seen < 1000, `the other instance applied it after ${seen} ms`);
  console.log(`# team change seen after ${seen} ms`);
  assert.equal((await admin(b, 'teams/fleet')).json.routes[0], 'chat');
});

test("a team budget is the fleet's: two keys on two instances cross it together", async () => {
  assert.equal((await admin(a, 'teams', 'POST', { id: 'shared', budget: '3/day' })).status, 201);
  const k1 = (await admin(a, 'keys', 'POST', { client: 'k1', team: 'shared', routes: ['chat'] })).json;
  const k2 = (await admin(a, 'keys', 'POST', { client: 'k2', team: 'shared', routes: ['chat'] })).json;
  await waitFor(async () => (await admin(b, 'keys')).json.keys.filter((x) => x.team === 'shared').length === 2, {
    timeoutMs: 5000, everyMs: 25, what: 'the keys on the other instance',
  });
  assert.equal(await status(a, k1.secret), 200); // team $2
  assert.equal(await status(b, k2.secret), 200); // $4: crosses $3
  const calls = await sim.calls('rt-model');
  for (const gw of [a, b])
    for (const k of [k1, k2]) assert.equal(await status(gw, k.secret), '429 budget_exceeded');
  assert.equal(await sim.calls('rt-model'), calls);
});
