// breaker.mode: adaptive (docs/internals/breaker.md "Adaptive mode"): the SRE book's
// client-side throttling per failure domain instead of closed/open/half-open. A healthy
// target is never throttled; a dead one sees only a few of the requests (the refusal
// probability climbs towards 1 as failures and refusals pile up while nothing is accepted),
// its circuit never opens, and every refusal is a typed failure. Requests go one at a time;
// the bounds hold with a wide margin whatever the gateway's random draws.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startSim, startGateway } from '../lib/harness.mjs';

const ADMIN = 'test-admin-key-0123456789';
let sim, gw;

before(async () => {
  sim = await startSim();
  gw = await startGateway({ config: `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: warn }
admin: { key: "${ADMIN}" }
providers:
  a: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-a"], health: { probe: none } }
targets:
  dead: { provider: a, model: ad-dead, breaker: { mode: adaptive, window_ms: 60000 } }
  fine: { provider: a, model: ad-fine, breaker: { mode: adaptive, window_ms: 60000 } }
routes:
  dead: { primary: [dead], envelope: { deadline_ms: 10000, max_attempts: 1 } }
  fine: { primary: [fine], envelope: { deadline_ms: 10000, max_attempts: 1 } }
` });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

async function chat(model) {
  const res = await fetch(`${gw.base}/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'x' }] }),
  });
  return { status: res.status, text: await res.text() };
}

async function targetView(id) {
  const res = await fetch(`${gw.url}/admin/targets`, { headers: { authorization: `Bearer ${ADMIN}` } });
  return (await res.json()).targets.find((t) => t.id === id);
}

test('adaptive mode: a healthy target is never throttled', async () => {
  for (let i = 0; i < 50; i++) assert.equal((await chat('fine')).status, 200);
  assert.equal(await sim.calls('ad-fine'), 50);
});

test('adaptive mode: a dead target sees a few of 100 requests, never opens, every refusal typed', async (t) => {
  await sim.setModel('ad-dead', { script: [{ action: 'status', status: 503, times: 100000 }] });
  const reasons = {};
  for (let i = 0; i < 100; i++) {
    const r = await chat('dead');
    assert.notEqual(r.status, 200);
    const body = JSON.parse(r.text);
    assert.equal(typeof body.reason, 'string', r.text);
    reasons[body.reason] = (reasons[body.reason] ?? 0) + 1;
  }
  const calls = await sim.calls('ad-dead');
  t.diagnostic(`dead target: ${calls} calls of 100; answers ${JSON.stringify(reasons)}`);
  // Expected about the harmonic sum H(100) ~ 5; 30 is far out of reach of chance.
  assert.ok(calls >= 1 && calls <= 30, `${calls} calls`);
  assert.ok((reasons.no_eligible_fallback ?? 0) >= 70, 'refused locally, typed');
  const v = await targetView('dead');
  assert.equal(v.circuit, 'closed', 'the throttle never opens the circuit');
  assert.equal(v.breaker.opened, 0);
  assert.ok(v.breaker.denied >= 70, `refusals counted (${v.breaker.denied})`);
});
