// SPDX-License-Identifier: MIT
// Run-time client keys with store.kind redis (docs/internals/keys.md): two gateway processes
// on one private redis-server; a key made through one instance's admin API is served by the
// other within a second (each polls the keyring's revision every 200 ms), and so is its
// revocation (401 there, no upstream call). Waits poll for the change with a bound, never
// sleep.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startGateway, startSim, waitFor } from '../lib/harness.mjs';
import { startRedis } from '../lib/redis.mjs';

const ADMIN = 'admin-key-0123456789abcdef';
let redis, sim, a, b;

function config() {
  return `listen: "127.0.0.1:{{PORT}}"
workers: 2
admin: { key: "${ADMIN}" }
store: { kind: redis, url: "${redis.url}", prefix: "k:", timeout_ms: 1000 }
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-s"], health: { probe: none } }
targets:
  t1: { provider: sim, model: rk-model }
routes:
  chat: { primary: [t1] }
`;
}

before(async () => {
  redis = await startRedis();
  sim = await startSim();
  a = await startGateway({ config: config() });
  b = await startGateway({ config: config() });
});

after(async () => {
  await a?.stop();
  await b?.stop();
  await sim?.stop();
  await redis?.stop();
});

async function status(gw, key) {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: 'chat', messages: [{ role: 'user', content: 'hi' }] }),
  });
  await res.arrayBuffer();
  return res.status;
}

const admin = (gw, p, method = 'GET', body) =>
  fetch(`${gw.url}/admin/${p}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: body ? JSON.stringify(body) : undefined,
  });

/** Polls <gw> until <key> answers <want>; returns the ms it took from <t0>. */
async function seenWithin(gw, key, want, t0) {
  await waitFor(async () => (await status(gw, key)) === want, {
    timeoutMs: 5000,
    everyMs: 25,
    what: `HTTP ${want} on the other instance`,
  });
  return Date.now() - t0;
}

test('a key made on one instance is served by the other within a second, and so is its revocation', async () => {
  const res = await admin(a, 'keys', 'POST', { client: 'zoe', routes: ['chat'] });
  assert.equal(res.status, 201);
  const t0 = Date.now();
  const k = await res.json();
  assert.equal(await status(a, k.secret), 200, 'served at once where it was made');
  const seen = await seenWithin(b, k.secret, 200, t0);
  assert.ok(seen < 1000, `the other instance served it after ${seen} ms`);

  const del = await admin(a, `keys/${k.id}`, 'DELETE');
  assert.equal(del.status, 200);
  const t1 = Date.now();
  assert.equal(await status(a, k.secret), 401);
  const gone = await seenWithin(b, k.secret, 401, t1);
  assert.ok(gone < 1000, `the other instance refused it after ${gone} ms`);
  console.log(`# new key seen after ${seen} ms, revocation after ${gone} ms`);
  const calls = await sim.calls('rk-model');
  assert.equal(await status(b, k.secret), 401);
  assert.equal(await sim.calls('rk-model'), calls, 'no upstream call for the revoked key');
  // The other instance's audit trail has the writes too.
  await waitFor(async () => {
    const { entries } = await (await admin(b, `audit?subject=${k.id}`)).json();
    return entries.length === 2;
  }, { what: 'the audit trail on the other instance' });
});
