// SPDX-License-Identifier: MIT
// A client's spend is read from the store by the first request of a period; the others of
// the period judge on the book's figure (docs/internals/spend.md). When that first request's
// client leaves while the read runs, the figure Redis returns must still reach the book --
// otherwise the load stays "running" for the whole period: the spend stays unknown to the
// operator and every later request of the client waits for a read of its own. A proxy holds
// Redis's replies back so that the client surely leaves before the answer.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startGateway, startSim, waitFor } from '../lib/harness.mjs';
import { startRedis, startReplyDelayProxy } from '../lib/redis.mjs';

const KEY = 'spend-leave-key-0123456789abcdef';
const ADMIN = 'spend-leave-admin-0123456789abcd';
const HOLD_MS = 600; /* under the store's 1 s ping period: it stays up */
let redis, proxy, sim, gw;

function config(url) {
  return `listen: "127.0.0.1:{{PORT}}"
workers: 2
admin: { key: "${ADMIN}" }
store: { kind: redis, url: "${url}", prefix: "sl:", timeout_ms: 5000 }
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-s"], health: { probe: none } }
targets:
  t1: { provider: sim, model: leave-model, price: { input_per_mtok: 0, output_per_mtok: 1000000 } }
routes:
  chat: { primary: [t1] }
clients:
  alpha: { key: "${KEY}", routes: [chat], budget: { usd: 50, period: day } }
`;
}

/** The book's figure (the status page's view, never a store read); null while unknown. */
async function spendUsd() {
  const res = await fetch(`${gw.url}/status.json`, { headers: { authorization: `Bearer ${ADMIN}` } });
  assert.equal(res.status, 200);
  const { clients } = await res.json();
  return clients.find((c) => c.id === 'alpha').spend_usd;
}

async function storeUp() {
  const m = /^bascule_store_up (\d+)/m.exec(await (await fetch(`${gw.url}/metrics`)).text());
  return m ? Number(m[1]) : null;
}

before(async () => {
  redis = await startRedis();
  proxy = await startReplyDelayProxy(redis.port);
  sim = await startSim();
  await sim.setModel('leave-model', { tokens: 2 });
  gw = await startGateway({ config: config(proxy.url) });
  await waitFor(async () => (await storeUp()) === 1, { timeoutMs: 10000, what: 'the store up' });
});

after(async () => {
  await gw?.stop();
  await proxy?.stop();
  await sim?.stop();
  await redis?.stop();
});

test('the first read of a period reaches the book though its client left meanwhile', async () => {
  await redis.command('SET', 'sl:marker', '1'); // nothing of alpha in Redis: the figure is 0
  assert.equal(await spendUsd(), null, 'nothing read yet');
  proxy.hold(HOLD_MS);
  const abort = new AbortController();
  const leaving = fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    signal: abort.signal,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
    body: JSON.stringify({ model: 'chat', messages: [{ role: 'user', content: 'hi' }] }),
  }).catch(() => null);
  await waitFor(() => proxy.sent().includes('spend:alpha'), { everyMs: 5, what: 'the spend read sent' });
  abort.abort();
  await leaving;
  proxy.hold(0);
  await waitFor(async () => (await spendUsd()) !== null, { timeoutMs: 10000, what: 'alpha\'s spend known' });
  assert.equal(await spendUsd(), 0);

  // The next request judges on the book's figure, and its cost adds to it.
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
    body: JSON.stringify({ model: 'chat', messages: [{ role: 'user', content: 'hi' }] }),
  });
  assert.equal(res.status, 200, await res.clone().text());
  await res.arrayBuffer();
  await waitFor(async () => (await spendUsd()) === 2, { what: 'the $2 answer in the book' });
});
