// SPDX-License-Identifier: MIT
// A concurrency lease renewed while an ask for one more slot is out (docs/internals/redis.md,
// "Rates and concurrency leases"). Redis applies the take at once; its answer reaches
// the gateway later (a proxy holds Redis's replies back). A renewal sent meanwhile must not
// write the count the gateway knew before the take -- that would tell the fleet one slot is
// free while both are in use at the provider, and another process would take it. Whatever
// the timing, the count Redis keeps for the process never drops below what is in flight.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startGateway, startSim, waitFor } from '../lib/harness.mjs';
import { startRedis, startReplyDelayProxy } from '../lib/redis.mjs';

const KEY = 'redis-lease-race-key-0123456789abcd';
const TTL_MS = 1200; /* a renewal every 400 ms: one falls in any hold; a late one does not expire us */
const HOLD_MS = 600; /* under the 1 s ping period: the limits stay shared */
const SLOTS = 'r:{lim:t:tr}:slots';
let redis, proxy, sim, gw;

function config(url) {
  return `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: info }
store: { kind: redis, url: "${url}", prefix: "r:", timeout_ms: 5000, instances: 2, lease_ttl_ms: ${TTL_MS} }
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-s"], health: { probe: none } }
targets:
  tr: { provider: sim, model: lease-race, max_concurrency: 2, queue_ms: 20000 }
routes:
  race: { primary: [tr], envelope: { deadline_ms: 60000 } }
clients:
  team: { key: "${KEY}", routes: ["*"] }
`;
}

function chat(signal) {
  return fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    signal,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
    body: JSON.stringify({ model: 'race', messages: [{ role: 'user', content: 'hi' }] }),
  }).catch(() => null);
}

const inFlight = async () => (await sim.stats()).models['lease-race']?.in_flight ?? 0;
const counted = async () => (await redis.command('HVALS', SLOTS)).map(Number).reduce((a, b) => a + b, 0);

before(async () => {
  redis = await startRedis();
  proxy = await startReplyDelayProxy(redis.port);
  sim = await startSim();
  gw = await startGateway({ config: config(proxy.url) });
  await waitFor(() => /shared limits: decided with the other instances/.test(gw.logs()),
    { timeoutMs: 10000, what: 'limits shared through redis' });
});

after(async () => {
  await gw?.stop();
  await proxy?.stop();
  await sim?.stop();
  await redis?.stop();
});

test('a renewal while a take is unanswered never counts fewer slots than are in flight', async () => {
  await sim.setModel('lease-race', { script: [{ action: 'delay', delay_ms: 60000 }], repeat: true });
  const abort = new AbortController();
  const first = chat(abort.signal);
  await waitFor(async () => (await inFlight()) === 1, { what: 'the first call at the provider' });
  await waitFor(async () => (await counted()) === 1, { what: 'one slot leased' });

  proxy.hold(HOLD_MS);
  const second = chat(abort.signal);
  await waitFor(async () => (await counted()) === 2, { everyMs: 5, what: 'the take applied in Redis' });
  // From here until a renewal after the grant was read, Redis must count both slots: the
  // grant's answer arrives HOLD_MS late and renewals run every TTL_MS / 3 meanwhile.
  const seen = [];
  const renewedAfter = async (score) => Number(await redis.command('ZSCORE', 'r:{lim:t:tr}:exp',
    (await redis.command('HKEYS', SLOTS))[0])) > score;
  let reached = 0;
  let score = Infinity;
  for (let i = 0; i < 400; i++) {
    seen.push(await counted());
    if (!reached && (await inFlight()) === 2) {
      reached = Date.now();
      proxy.hold(0);
      const ids = await redis.command('HKEYS', SLOTS);
      score = Number(await redis.command('ZSCORE', 'r:{lim:t:tr}:exp', ids[0]));
    }
    if (reached && await renewedAfter(score)) {
      seen.push(await counted());
      break;
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  proxy.hold(0);
  assert.ok(reached, 'the second call reached the provider');
  assert.ok(seen.every((n) => n === 2), `slots Redis counted while 2 were in flight: ${seen.join(' ')}`);

  abort.abort();
  await Promise.all([first, second]);
  await waitFor(async () => (await counted()) === 0, { timeoutMs: 10000, what: 'both slots given back' });
});
