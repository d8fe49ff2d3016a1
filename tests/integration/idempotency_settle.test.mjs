// SPDX-License-Identifier: MIT
// The idempotency record of a complete answer is stored, and acknowledged by the store,
// before the answer goes out (router/guard.c guard_idem_settle, docs/internals/store.md):
// a client that repeats a request the moment it has read the answer gets the replay (200,
// x-bascule-idempotent-replay: true, one upstream call) -- on another instance sharing the
// Redis store and on the same one -- never 409 idempotency_key_in_use. Gateway A reaches
// Redis through a proxy that holds the record's completion (the only command carrying the
// answer's bytes: "chat.completion", or an Anthropic "message") back for HOLD_MS, so
// without the wait B's lookup always reaches Redis first. Covered: a plain answer, a live
// stream, a buffered stream, an answer translated to /v1/messages, the memory store. A store
// that does not answer within store.timeout_ms costs the record, never the answer.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startGateway, startSim, waitFor } from '../lib/harness.mjs';
import { startRedis, startCommandDelayProxy } from '../lib/redis.mjs';

const HOLD_MS = 1000;
let redis, proxy, sim, a, b, mem, slow;

function config(store) {
  return `listen: "127.0.0.1:{{PORT}}"
workers: 2
store: ${store}
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-s"], health: { probe: none } }
targets:
  m1@sim: { provider: sim, model: upstream-m1 }
routes:
  chat: { primary: [m1@sim] }
  buffered: { primary: [m1@sim], envelope: { on_stream_failure: buffer } }
`;
}

const redisStore = (url, timeoutMs) =>
  `{ kind: redis, url: "${url}", prefix: "s:", timeout_ms: ${timeoutMs} }`;

function chat(gw, key, content = 'hi', extra = {}) {
  return fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify({ model: 'chat', messages: [{ role: 'user', content }], ...extra }),
  });
}

async function storeUp(gw) {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  return /^bascule_store_up 1/m.test(text);
}

before(async () => {
  redis = await startRedis();
  sim = await startSim();
  proxy = await startCommandDelayProxy(redis.port, /chat\.completion|"type":"message"/, HOLD_MS);
  a = await startGateway({ config: config(redisStore(proxy.url, 5000)) });
  b = await startGateway({ config: config(redisStore(redis.url, 5000)) });
  slow = await startGateway({ config: config(redisStore(proxy.url, 100)) });
  mem = await startGateway({ config: config('{ kind: memory }') });
  await waitFor(async () => (await storeUp(a)) && (await storeUp(b)) && (await storeUp(slow)),
    { timeoutMs: 10000, what: 'the Redis store up on the three gateways' });
});

after(async () => {
  await a?.stop();
  await b?.stop();
  await slow?.stop();
  await mem?.stop();
  await proxy?.stop();
  await sim?.stop();
  await redis?.stop();
});

async function expectReplay(res, body1) {
  const text = await res.text();
  assert.equal(res.status, 200, text);
  assert.equal(res.headers.get('x-bascule-idempotent-replay'), 'true');
  assert.equal(text, body1);
}

test('a repeat on the other instance right after the answer is a replay, with a slow store write', async () => {
  await sim.reset();
  const held = proxy.held();
  const first = await chat(a, 'settle-other');
  const body1 = await first.text();
  assert.equal(first.status, 200, body1);
  await expectReplay(await chat(b, 'settle-other'), body1);
  assert.equal(await sim.calls('upstream-m1'), 1);
  assert.ok(proxy.held() > held, 'the completion went through the delaying proxy');
});

test('a repeat on the same instance right after the answer is a replay, with a slow store write', async () => {
  await sim.reset();
  const first = await chat(a, 'settle-same');
  const body1 = await first.text();
  assert.equal(first.status, 200, body1);
  await expectReplay(await chat(a, 'settle-same'), body1);
  await expectReplay(await chat(b, 'settle-same'), body1);
  assert.equal(await sim.calls('upstream-m1'), 1);
});

test('a stream: a repeat on the other instance right after its end is a replay', async () => {
  await sim.reset();
  const held = proxy.held();
  const first = await chat(a, 'settle-stream', 'hi', { stream: true });
  const body1 = await first.text();
  assert.equal(first.status, 200, body1);
  assert.match(body1, /data: \[DONE\]/);
  await expectReplay(await chat(b, 'settle-stream', 'hi', { stream: true }), body1);
  await expectReplay(await chat(a, 'settle-stream', 'hi', { stream: true }), body1);
  assert.equal(await sim.calls('upstream-m1'), 1);
  assert.ok(proxy.held() > held, 'the completion went through the delaying proxy');
});

test('a buffered stream: a repeat on the other instance right after it is a replay', async () => {
  await sim.reset();
  const held = proxy.held();
  const extra = { stream: true, model: 'buffered' };
  const first = await chat(a, 'settle-buffered', 'hi', extra);
  const body1 = await first.text();
  assert.equal(first.status, 200, body1);
  assert.equal(first.headers.get('x-bascule-buffered'), 'true');
  await expectReplay(await chat(b, 'settle-buffered', 'hi', extra), body1);
  assert.equal(await sim.calls('upstream-m1'), 1);
  assert.ok(proxy.held() > held, 'the completion went through the delaying proxy');
});

test('an answer translated to /v1/messages: a repeat on the other instance is a replay', async () => {
  await sim.reset();
  const messages = (gw) => fetch(`${gw.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': 'settle-messages' },
    body: JSON.stringify({ model: 'chat', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] }),
  });
  const held = proxy.held();
  const first = await messages(a);
  const body1 = await first.text();
  assert.equal(first.status, 200, body1);
  assert.equal(JSON.parse(body1).type, 'message');
  await expectReplay(await messages(b), body1);
  assert.equal(await sim.calls('upstream-m1'), 1);
  assert.ok(proxy.held() > held, 'the completion went through the delaying proxy');
});

test('memory store: a repeat right after the answer or the stream is a replay', async () => {
  await sim.reset();
  const first = await chat(mem, 'settle-mem');
  const body1 = await first.text();
  assert.equal(first.status, 200, body1);
  await expectReplay(await chat(mem, 'settle-mem'), body1);
  const s1 = await chat(mem, 'settle-mem-stream', 'hi', { stream: true });
  const sbody = await s1.text();
  assert.equal(s1.status, 200, sbody);
  await expectReplay(await chat(mem, 'settle-mem-stream', 'hi', { stream: true }), sbody);
  assert.equal(await sim.calls('upstream-m1'), 2);
});

test('a store write past store.timeout_ms: the answer is sent anyway', async () => {
  await sim.reset();
  const t0 = Date.now();
  const first = await chat(slow, 'settle-timeout');
  const body1 = await first.text();
  assert.equal(first.status, 200, body1);
  assert.ok(JSON.parse(body1).choices.length > 0);
  assert.ok(Date.now() - t0 < HOLD_MS, 'not held for the whole proxy delay');
  assert.equal(await sim.calls('upstream-m1'), 1);
});
