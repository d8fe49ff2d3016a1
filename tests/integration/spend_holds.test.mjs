// SPDX-License-Identifier: MIT
// Issue 24 item 3: a budget holds under concurrency (docs/internals/spend.md, "Holds").
// Each admitted request holds its estimate against its client's budget until it ends, so
// requests in flight cannot together cross the budget by more than one estimate: 200
// requests at once, each costing exactly its estimate ($0.015: 2 output tokens at $0.0075,
// max_tokens 2, a free prompt), against $0.01 serve one and against $0.10 seven -- not 200.
// Holds are given back on every path: clients that leave requests hanging upstream, and a
// SIGHUP reload while they hang, leave nothing held.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startSim, startGateway, waitFor } from '../lib/harness.mjs';

const ADMIN = 'admin-key-0123456789abcdef';
const KEYS = {
  one: 'one-key-0123456789abcdef-1',
  seven: 'seven-key-0123456789abcdef',
  leaver: 'leaver-key-0123456789abcdef',
};
const N = 200;
const COST = 0.015;
let sim, gw;

const config = (extra = '') => `listen: "127.0.0.1:{{PORT}}"
workers: 2
admin: { key: "${ADMIN}" }
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
${extra}`;

before(async () => {
  sim = await startSim();
  // Each answer waits 300 ms: the 200 requests are all in flight together on a build
  // without holds (the case the issue measured), whatever the machine's speed.
  await sim.setModel('h-model', { tokens: 2, script: [{ action: 'delay', delay_ms: 300 }], repeat: true });
  await sim.setModel('hang-model', { tokens: 2, script: [{ action: 'hang' }], repeat: true });
  gw = await startGateway({
    env: { K_ONE: KEYS.one, K_SEVEN: KEYS.seven, K_LEAVER: KEYS.leaver },
    config: config(),
  });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

const chat = (client, model = 'chat', signal) =>
  fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', signal,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${KEYS[client]}` },
    body: JSON.stringify({ model, max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] }),
  });

const view = async (id) => {
  const res = await fetch(`${gw.url}/admin/clients`, { headers: { authorization: `Bearer ${ADMIN}` } });
  return (await res.json()).clients.find((c) => c.id === id);
};

/** N requests of <client> at once: how many were served; every other one is budget_exceeded. */
async function burst(client) {
  const answers = await Promise.all(Array.from({ length: N }, async () => {
    const res = await chat(client);
    const body = await res.json();
    if (res.status !== 200) {
      assert.equal(res.status, 429);
      assert.equal(body.error.code, 'budget_exceeded');
    }
    return res.status;
  }));
  return answers.filter((s) => s === 200).length;
}

const near = (got, want, what) => assert.ok(Math.abs(got - want) < 1e-9, `${what}: ${got}, want ${want}`);

test('200 requests at once against a budget of $0.01 serve one, at $0.015', async () => {
  const calls = await sim.calls('h-model');
  assert.equal(await burst('one'), 1);
  assert.equal(await sim.calls('h-model'), calls + 1, 'the refused ones never went upstream');
  const v = await view('one');
  near(v.spend_usd, COST, 'spend');
  assert.equal(v.in_flight, 0);
});

test('200 requests at once against $0.10 serve seven: the budget plus less than one estimate', async () => {
  assert.equal(await burst('seven'), 7);
  const v = await view('seven');
  near(v.spend_usd, 7 * COST, 'spend');
  assert.ok(v.spend_usd <= 0.1 + COST);
});

test('holds are given back when clients leave and across a reload: nothing stays held', async () => {
  // Each hanging request holds $0.015 of $0.05: four fit (0.045 < 0.05), the fifth is refused.
  const acs = Array.from({ length: 4 }, () => new AbortController());
  const started = await sim.calls('hang-model');
  const pending = acs.map((ac) => chat('leaver', 'hang', ac.signal).catch(() => null));
  await waitFor(async () => (await sim.calls('hang-model')) === started + 4, { what: 'four requests upstream' });
  const refused = await chat('leaver', 'hang');
  assert.equal(refused.status, 429);
  await refused.arrayBuffer();
  // A reload while they hang (the book and the holds outlive the old snapshot).
  const line = await gw.reload(config('# reloaded\n'));
  assert.match(line, /reloaded/);
  for (const ac of acs) ac.abort();
  await Promise.all(pending);
  await waitFor(async () => (await view('leaver')).in_flight === 0, { what: 'the leavers done' });
  // No output was generated and the prompt is free: the leavers cost $0, and their holds
  // are back, so four more fit again.
  assert.equal((await view('leaver')).spend_usd, 0);
  const again = Array.from({ length: 4 }, () => new AbortController());
  const started2 = await sim.calls('hang-model');
  const pending2 = again.map((ac) => chat('leaver', 'hang', ac.signal).catch(() => null));
  await waitFor(async () => (await sim.calls('hang-model')) === started2 + 4, { what: 'four more upstream' });
  for (const ac of again) ac.abort();
  await Promise.all(pending2);
});
