// SPDX-License-Identifier: MIT
// A rate shared through Redis holds the same bound as a local one (docs/internals/redis.md,
// "Rates and concurrency leases"): two gateway processes on one private redis-server,
// a client at rpm 120 (burst 10, one more every 60 s / 111). 200 concurrent requests split
// over both instances are admitted as the burst plus one per interval (plus at most the
// slices the instances took early: 2 x 120 / 32 = 3 each), never the minute at once; a
// paced run of a few seconds over both stays within the same bound. Upstream calls are
// counted by bascule-sim.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startGateway, startSim, waitFor } from '../lib/harness.mjs';
import { startRedis } from '../lib/redis.mjs';

const KEY = 'redis-rate-client-key-0123456789ab';
const KEY2 = 'redis-rate-client2-key-0123456789a';
const INTERVAL_MS = 60000 / 111;
const SLICES = 2 * 3; // each instance may hold one slice taken early
let redis, sim, a, b;

function config(url) {
  return `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: info }
store: { kind: redis, url: "${url}", prefix: "r:", timeout_ms: 10000, instances: 2 }
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-s"], health: { probe: none } }
targets:
  t1: { provider: sim, model: rr-burst }
  t2: { provider: sim, model: rr-paced }
routes:
  burst: { primary: [t1] }
  paced: { primary: [t2] }
clients:
  one: { key: "${KEY}", routes: ["burst"], rpm: 120 }
  two: { key: "${KEY2}", routes: ["paced"], rpm: 120 }
`;
}

async function start() {
  const gw = await startGateway({ config: config(redis.url) });
  await waitFor(() => /shared limits: decided with the other instances/.test(gw.logs()),
    { timeoutMs: 10000, what: 'limits shared through redis' });
  return gw;
}

async function chat(gw, model, key) {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  });
  return { res, body: await res.json() };
}

const calls = async (model) => (await sim.stats()).models[model]?.calls ?? 0;

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

test('rpm 120 over two instances: 200 concurrent admit the burst and the rate, not the minute', async () => {
  const started = Date.now();
  const answers = await Promise.all(
    Array.from({ length: 200 }, (_, i) => chat(i % 2 ? a : b, 'burst', KEY)));
  const elapsed = Date.now() - started;
  const ok = answers.filter((x) => x.res.status === 200).length;
  assert.ok(ok >= 10, `admitted ${ok}`);
  assert.ok(ok <= 10 + Math.ceil(elapsed / INTERVAL_MS) + SLICES, `admitted ${ok} in ${elapsed} ms`);
  assert.equal(await calls('rr-burst'), ok);
  for (const { res, body } of answers.filter((x) => x.res.status !== 200)) {
    assert.equal(res.status, 429, JSON.stringify(body));
    assert.equal(res.headers.get('x-bascule-limited-by'), 'client_rpm');
    assert.equal(res.headers.get('retry-after'), '1'); // the next admission: one interval
  }
});

test('a paced run over both instances for 3 s stays within the burst plus the rate', async () => {
  const started = Date.now();
  let sent = 0;
  // Four senders, two per instance, each one request at a time: bounded in time and count.
  await Promise.all([a, a, b, b].map(async (gw) => {
    while (Date.now() - started < 3000 && sent < 2000) {
      sent++;
      await chat(gw, 'paced', KEY2);
    }
  }));
  const elapsed = Date.now() - started;
  const ok = await calls('rr-paced');
  assert.ok(ok >= 10, `admitted ${ok} of ${sent}`);
  assert.ok(ok <= 10 + Math.ceil(elapsed / INTERVAL_MS) + SLICES, `admitted ${ok} of ${sent} in ${elapsed} ms`);
});
