// SPDX-License-Identifier: MIT
// The response cache in Redis (cache.store: redis, docs/internals/cache.md): two gateways on
// one Redis share an answer -- one's miss is the other's hit, with no upstream call, a stream
// included; scope: client still holds across instances; DELETE /admin/cache on one instance
// (a new generation of the route in Redis) makes both miss that route at once, and keeps
// another route's answers, or without route= clears every route; a stalled or stopped Redis
// makes the DELETE a 503 saying so while chat still answers (a miss), never an error; and
// cache.store: redis without store.kind: redis is refused.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { bins, startGateway, startSim, waitFor } from '../lib/harness.mjs';
import { startRedis } from '../lib/redis.mjs';

const ALPHA = 'alpha-cache-redis-0123456789abcd';
const BETA = 'beta-cache-redis-0123456789abcde';
const ADMIN = 'admin-cache-redis-0123456789abcd';
let redis, sim, a, b;

const config = (url) => `listen: "127.0.0.1:{{PORT}}"
workers: 2
admin: { key: "${ADMIN}" }
store: { kind: redis, url: "${url}", prefix: "c:", timeout_ms: 500 }
cache: { store: redis }
providers:
  sim: { kind: openai, base_url: "${sim.url}/v1", keys: ["sk-s"], health: { probe: none } }
targets:
  t: { provider: sim, model: m-redis }
routes:
  chat: { primary: [t], cache: { mode: exact, ttl_s: 60 } }
  other: { primary: [t], cache: { mode: exact, ttl_s: 60 } }
clients:
  alpha: { key: "\${TEST_ALPHA_KEY}", routes: ["*"] }
  beta: { key: "\${TEST_BETA_KEY}", routes: ["*"] }
`;

before(async () => {
  redis = await startRedis();
  sim = await startSim();
  const env = { TEST_ALPHA_KEY: ALPHA, TEST_BETA_KEY: BETA };
  a = await startGateway({ config: config(redis.url), env });
  b = await startGateway({ config: config(redis.url), env });
});

after(async () => {
  await a?.stop();
  await b?.stop();
  await sim?.stop();
  await redis?.stop();
});

async function chat(gw, content, { key = ALPHA, stream = false, model = 'chat', headers = {} } = {}) {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
    body: JSON.stringify({ model, stream, messages: [{ role: 'user', content }] }),
  });
  return { status: res.status, cache: res.headers.get('x-bascule-cache'), text: await res.text() };
}

const calls = async () => (await sim.stats()).models?.['m-redis']?.calls ?? 0;

test('one instance\'s answer is the other\'s hit, plain and streamed', async () => {
  for (const stream of [false, true]) {
    const first = await chat(a, `shared answer ${stream}`, { stream });
    assert.equal(first.status, 200);
    assert.equal(first.cache, 'miss');
    const n = await calls();
    // The store's write is asynchronous: poll the other instance, bounded. A poll says
    // no-store, so one that races the write (a miss, answered upstream) cannot put its own
    // answer in place of the first instance's.
    let hit, raced = 0;
    await waitFor(async () => {
      hit = await chat(b, `shared answer ${stream}`,
        { stream, headers: { 'cache-control': 'no-store' } });
      raced += hit.cache === 'hit' ? 0 : 1;
      return hit.cache === 'hit';
    }, { timeoutMs: 5000, everyMs: 50, what: 'the other instance to hit' });
    assert.equal(hit.text, first.text.replace(/: x-bascule-cost-usd: [0-9.]+\n\n$/, ''));
    assert.ok(await calls() <= n + raced, 'at most the polls that raced the write went upstream');
    const again = await calls();
    assert.equal((await chat(b, `shared answer ${stream}`, { stream })).cache, 'hit');
    assert.equal(await calls(), again, 'a hit makes no upstream call');
  }
});

test('scope: client holds across instances', async () => {
  assert.equal((await chat(a, 'alpha only')).cache, 'miss');
  await waitFor(async () => (await chat(a, 'alpha only')).cache === 'hit',
    { timeoutMs: 5000, everyMs: 50, what: 'the write' });
  const other = await chat(b, 'alpha only', { key: BETA });
  assert.equal(other.status, 200);
  assert.equal(other.cache, 'miss');
});

// A lookup that stores nothing (no-store): what it says is the state of the shared cache,
// not one this check just wrote.
const peek = async (gw, content, model = 'chat') =>
  (await chat(gw, content, { model, headers: { 'cache-control': 'no-store' } })).cache;

/** Stores an answer through <a> and waits until <b> hits it. */
async function shared(content, model) {
  assert.equal((await chat(a, content, { model })).status, 200);
  await waitFor(async () => (await peek(b, content, model)) === 'hit',
    { timeoutMs: 5000, everyMs: 50, what: `${model}: the other instance to hit` });
}

const clear = (gw, query = '') => fetch(`${gw.url}/admin/cache${query}`, {
  method: 'DELETE', headers: { authorization: `Bearer ${ADMIN}` },
});

test('DELETE /admin/cache?route= on one instance: both miss that route, another route still hits', async () => {
  await shared('cleared later', 'chat');
  await shared('kept', 'other');
  const res = await clear(a, '?route=chat');
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.equal(body.route, 'chat');
  assert.equal(body.store, 'redis');
  assert.ok(Number.isInteger(body.generations.chat) && body.generations.chat >= 1, JSON.stringify(body));
  assert.deepEqual(Object.keys(body.generations), ['chat']);
  // At once, on both instances: no wait for a TTL, no message between the instances.
  assert.equal(await peek(b, 'cleared later'), 'miss');
  assert.equal(await peek(a, 'cleared later'), 'miss');
  assert.equal(await peek(b, 'kept', 'other'), 'hit');
  assert.equal(await peek(a, 'kept', 'other'), 'hit');
  // The route caches again under its new generation.
  await shared('cleared later', 'chat');
  const again = await (await clear(b, '?route=chat')).json();
  assert.equal(again.generations.chat, body.generations.chat + 1);
});

test('DELETE /admin/cache without route= clears every route, on every instance', async () => {
  await shared('all one', 'chat');
  await shared('all two', 'other');
  const res = await clear(b);
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.equal(body.route, null);
  assert.deepEqual(Object.keys(body.generations).sort(), ['chat', 'other']);
  for (const gw of [a, b]) {
    assert.equal(await peek(gw, 'all one'), 'miss');
    assert.equal(await peek(gw, 'all two', 'other'), 'miss');
  }
});

test('a stalled Redis: DELETE is a 503 within store.timeout_ms, chat still answers (a miss)', async () => {
  await shared('before the stall', 'chat');
  redis.pause();
  try {
    const t0 = Date.now();
    const res = await clear(a, '?route=chat');
    assert.equal(res.status, 503);
    const err = (await res.json()).error;
    assert.equal(err.code, 'store_unavailable');
    assert.match(err.message, /Redis did not confirm the clear/);
    assert.ok(Date.now() - t0 < 4000, 'bounded by store.timeout_ms, not a wait on Redis');
    const r = await chat(b, 'before the stall');
    assert.equal(r.status, 200);
    assert.equal(r.cache, 'miss');
  } finally {
    redis.resume();
  }
});

test('a Redis that is gone is a miss, never an error; DELETE says it is a 503', async () => {
  await redis.stop();
  redis = null;
  const r = await chat(a, 'redis is gone');
  assert.equal(r.status, 200);
  assert.equal(r.cache, 'miss');
  const res = await clear(a);
  assert.equal(res.status, 503);
  assert.equal((await res.json()).error.code, 'store_unavailable');
});

test('cache.store: redis without store.kind: redis is refused', () => {
  const dir = mkdtempSync(join(tmpdir(), 'bascule-cfg-'));
  const file = join(dir, 'gateway.yaml');
  writeFileSync(file, `listen: "127.0.0.1:1"
cache: { store: redis }
providers:
  p: { kind: openai_compatible, base_url: "http://127.0.0.1:9/v1", keys: ["sk-up"] }
targets:
  t: { provider: p, model: m }
routes:
  r: { primary: [t], cache: { mode: exact } }
`);
  try {
    const r = spawnSync(bins.bascule, ['--check-config', file], { encoding: 'utf8' });
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, /redis needs store.kind: redis/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
