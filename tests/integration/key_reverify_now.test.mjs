// SPDX-License-Identifier: MIT
// One upstream 401 on a provider's only key (issue 24): the key used to rest until its first
// re-verification, health.key_reverify_ms (30 s) later, and every request failed meanwhile.
// When the last usable key of a provider is refused, it is re-verified at once in the
// background (the provider's list-models request with that key); when that answers 2xx the
// key is back and requests succeed. While no key is usable the typed failure says which key
// state holds them ("all keys cooled: auth_failed"), not "rate limits". The tests wait for
// the events (the re-verification metric), with a bound far below the 30 s of the old wait.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startSim, startGateway, waitFor } from '../lib/harness.mjs';

let sim, gw;

before(async () => {
  sim = await startSim();
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 2
providers:
  solo: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-solo"], health: { probe: none } }
  bad: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-sim-bad-only"], health: { probe: none } }
targets:
  solo@solo: { provider: solo, model: m-solo }
  bad@bad: { provider: bad, model: m-bad }
routes:
  solo: { primary: [solo@solo], envelope: { max_attempts: 1 } }
  bad: { primary: [bad@bad], envelope: { max_attempts: 1 } }
`,
  });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

function chat(model) {
  return fetch(`${gw.base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  });
}

async function metric(name, labels) {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const want = `${name}{${Object.entries(labels).map(([k, v]) => `${k}="${v}"`).join(',')}}`;
  const line = text.split('\n').find((l) => l.startsWith(`${want} `));
  return line ? Number(line.split(' ').pop()) : 0;
}

test('one 401 on the only key: re-verified at once and restored, requests succeed again', async () => {
  await sim.setModel('m-solo', { script: [{ action: 'status', status: 401 }] });
  const first = await chat('solo');
  const body = await first.json();
  assert.equal(first.status, 503, JSON.stringify(body));
  assert.match(body.error.message, /last: auth on solo@solo/);
  // The event, not a clock: restored by the re-verification, well before key_reverify_ms (30 s).
  await waitFor(async () => (await metric('bascule_key_reverifications_total', { provider: 'solo', result: 'restored' })) === 1,
    { timeoutMs: 10000, what: 'the refused key re-verified and restored' });
  const probe = (await sim.requests()).filter((r) => r.path === '/v1/models').pop();
  assert.equal(probe?.headers.authorization, 'Bearer sk-solo', 'the look used the refused key');
  const again = await chat('solo');
  assert.equal(again.status, 200);
  assert.equal((await again.json()).object, 'chat.completion');
  assert.equal(await sim.calls('m-solo'), 2);
});

test('while no key is usable the typed failure says why: all keys cooled: auth_failed', async () => {
  const first = await chat('bad');
  assert.match((await first.json()).error.message, /last: auth on bad@bad/);
  // The look at once is refused too (the sim refuses sk-sim-bad*): the key stays out.
  await waitFor(async () => (await metric('bascule_key_reverifications_total', { provider: 'bad', result: 'refused' })) === 1,
    { timeoutMs: 10000, what: 'the refused look' });
  const again = await chat('bad');
  const body = await again.json();
  assert.equal(again.status, 503, JSON.stringify(body));
  assert.equal(body.error.code, 'no_eligible_fallback');
  assert.match(body.error.message, /all keys cooled: auth_failed\)/);
  assert.doesNotMatch(body.error.message, /rate limits/);
  const ra = Number(again.headers.get('retry-after'));
  assert.ok(ra >= 1 && ra <= 60, `Retry-After is the next look, not the 600 s cooldown (${ra})`);
  assert.equal(await sim.calls('m-bad'), 1, 'the cooled key is not sent another chat request');
});
