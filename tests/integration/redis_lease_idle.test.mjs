// SPDX-License-Identifier: MIT
// A concurrency slot granted after its request stopped waiting for it (docs/internals/redis.md,
// "Rates and concurrency leases"). A proxy holds Redis's replies back past
// store.timeout_ms: the request goes ahead on the local caps and ends, then the grant arrives.
// Nothing will use that slot, so it must go back to the fleet -- before, the renewals kept it
// leased for as long as the process lived, and the fleet ran with one slot fewer.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startGateway, startSim, waitFor } from '../lib/harness.mjs';
import { startRedis, startReplyDelayProxy } from '../lib/redis.mjs';

const KEY = 'redis-lease-idle-key-0123456789abcd';
const TTL_MS = 1500; /* a renewal every 500 ms */
const TIMEOUT_MS = 200;
const HOLD_MS = 900; /* past the ask's timeout, under two ping periods: the connection stays */
const SLOTS = 'i:{lim:t:ti}:slots';
let redis, proxy, sim, gw;

function config(url) {
  return `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: info }
store: { kind: redis, url: "${url}", prefix: "i:", timeout_ms: ${TIMEOUT_MS}, instances: 2, lease_ttl_ms: ${TTL_MS} }
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-s"], health: { probe: none } }
targets:
  ti: { provider: sim, model: lease-idle, max_concurrency: 2, queue_ms: 20000 }
routes:
  idle: { primary: [ti], envelope: { deadline_ms: 60000 } }
clients:
  team: { key: "${KEY}", routes: ["*"] }
`;
}

async function chat() {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
    body: JSON.stringify({ model: 'idle', messages: [{ role: 'user', content: 'hi' }] }),
  });
  return { status: res.status, body: await res.text() };
}

const counted = async () => (await redis.command('HVALS', SLOTS)).map(Number).reduce((a, b) => a + b, 0);
const wentLocal = () => (gw.logs().match(/shared limits: (?:[a-z]:\S* )?decided locally/g) ?? []).length;

before(async () => {
  redis = await startRedis();
  proxy = await startReplyDelayProxy(redis.port);
  sim = await startSim();
  gw = await startGateway({ config: config(proxy.url) });
  await waitFor(() => /shared limits: decided with the other instances/.test(gw.logs()),
    { timeoutMs: 10000, what: 'limits shared through redis' });
  await sim.setModel('lease-idle', { script: [{ action: 'delay', delay_ms: 50 }], repeat: true });
});

after(async () => {
  await gw?.stop();
  await proxy?.stop();
  await sim?.stop();
  await redis?.stop();
});

test('a slot granted after its request went ahead locally goes back to the fleet', async () => {
  const warm = await chat(); /* the set exists and has leased and given back once */
  assert.equal(warm.status, 200, warm.body);
  await waitFor(async () => (await counted()) === 0, { timeoutMs: 10000, what: 'the warm-up slot back' });

  const before = wentLocal();
  proxy.hold(HOLD_MS);
  const late = await chat(); /* its ask unanswered past timeout_ms: decided locally */
  proxy.hold(0);
  assert.equal(late.status, 200, late.body);
  assert.ok(wentLocal() > before, `the limits turned local:\n${gw.logs().slice(-2000)}`);
  // The take was applied in Redis when it arrived; its answer reaches the gateway HOLD_MS late.
  await waitFor(async () => (await counted()) === 1, { timeoutMs: 5000, what: 'the late take applied' });
  // Two renewals after the grant is read it is known unused, and given back.
  await waitFor(async () => (await counted()) === 0,
    { timeoutMs: 4 * TTL_MS, what: 'the unused slot given back while the process lives' });

  const after = await chat(); /* the fleet still grants */
  assert.equal(after.status, 200, after.body);
  await waitFor(async () => (await counted()) === 0, { timeoutMs: 10000, what: 'its slot back' });
});
