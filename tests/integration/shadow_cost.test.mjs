// SPDX-License-Identifier: MIT
// Shadow traffic's cost (issue 24): a copy's cost is counted in its own metric
// (bascule_shadow_cost_usd_total), never in the client's spend or budget, and the copies of
// every route together stop at shadow.max_usd_per_day: once the day's shadow spend reaches
// it, copies are skipped (outcome "skipped") and never sent. The day's sum outlives a reload.
// Exact figures: the sim answers 2 tokens for the primary at $1 each, 3 for the candidate at
// $1 each (input is free), so a request costs the client $2 and a copy costs nobody $3.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startSim, startGateway, waitFor } from '../lib/harness.mjs';

const ALICE = 'alice-key-0123456789abcdef';
const ADMIN = 'admin-key-0123456789abcdef';
let sim, gw;

const config = (cap) => `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: info, format: json }
admin: { key: "${ADMIN}" }
shadow: { max_usd_per_day: ${cap} }
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-s"], health: { probe: none } }
targets:
  p: { provider: sim, model: sc-prim, price: { input_per_mtok: 0, output_per_mtok: 1000000 } }
  c: { provider: sim, model: sc-cand, price: { input_per_mtok: 0, output_per_mtok: 1000000 } }
routes:
  r:
    primary: [p]
    shadow: { targets: [c], percent: 100 }
clients:
  alice: { key: "${ALICE}", routes: [r], budget: { usd: 15, period: day } }
`;

before(async () => {
  sim = await startSim();
  await sim.setModel('sc-prim', { tokens: 2 });
  await sim.setModel('sc-cand', { tokens: 3 });
  gw = await startGateway({ config: config(5) });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

const metrics = async () => (await fetch(`${gw.url}/metrics`)).text();
const sample = (text, name, labels) => {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return line === undefined ? 0 : Number(line.split(' ').pop());
};
const shadowCount = async (outcome) =>
  sample(await metrics(), 'bascule_shadow_requests_total', `route="r",target="c",outcome="${outcome}"`);

async function chat() {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ALICE}` },
    body: JSON.stringify({ model: 'r', messages: [{ role: 'user', content: 'mirror me' }] }),
  });
  assert.equal(res.status, 200);
  assert.equal(Number(res.headers.get('x-bascule-cost-usd')), 2);
  await res.json();
}

async function aliceSpend() {
  const res = await fetch(`${gw.url}/admin/clients`, { headers: { authorization: `Bearer ${ADMIN}` } });
  return (await res.json()).clients.find((c) => c.id === 'alice').spend_usd;
}

test('copies stop at shadow.max_usd_per_day; their cost is the metric\'s, never the client\'s', async () => {
  // $0 then $3 spent: below $5, copied. $6: every later copy is skipped.
  for (let i = 1; i <= 5; i++) {
    await chat();
    if (i <= 2) await waitFor(async () => (await shadowCount('ok')) === i, { what: `copy ${i} settled` });
    else await waitFor(async () => (await shadowCount('skipped')) === i - 2, { what: `copy ${i} skipped` });
  }
  const text = await metrics();
  assert.equal(sample(text, 'bascule_shadow_cost_usd_total', 'route="r",target="c"'), 6);
  assert.equal(sample(text, 'bascule_shadow_requests_total', 'route="r",target="c",outcome="ok"'), 2);
  assert.equal(sample(text, 'bascule_shadow_requests_total', 'route="r",target="c",outcome="skipped"'), 3);
  assert.equal(await sim.calls('sc-cand'), 2, 'a skipped copy is never sent');
  assert.equal(await sim.calls('sc-prim'), 5);
  // The client paid for its 5 answers only ($10 of a $15 budget), and no
  // cost series names the candidate.
  assert.equal(sample(text, 'bascule_cost_usd_total', 'client="alice",route="r",target="p"'), 10);
  assert.doesNotMatch(text, /^bascule_cost_usd_total\{[^}]*target="c"/m);
  assert.equal(await aliceSpend(), 10);
  // The access line is written after the copy is counted: wait for both lines.
  const shadowLines = () => gw.accessLog().filter((l) => l.type === 'shadow');
  await waitFor(() => shadowLines().length >= 2, { what: 'two shadow access lines' });
  assert.deepEqual(shadowLines().map((l) => l.cost_usd), [3, 3]);
});

test('the day\'s shadow spend outlives a reload: a higher cap admits exactly what it leaves room for', async () => {
  const r = await gw.reload(config(7));
  assert.match(r, /reloaded/);
  await chat(); // $6 < $7: copied, $9
  await waitFor(async () => (await shadowCount('ok')) === 3, { what: 'the copy after the reload settled' });
  await chat(); // $9 >= $7: skipped
  await waitFor(async () => (await shadowCount('skipped')) === 4, { what: 'the next copy skipped' });
  assert.equal(sample(await metrics(), 'bascule_shadow_cost_usd_total', 'route="r",target="c"'), 9);
  assert.equal(await sim.calls('sc-cand'), 3);
});
