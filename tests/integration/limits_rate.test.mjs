// SPDX-License-Identifier: MIT
// Rates as a rate plus a burst (docs/internals/limits.md, "Rates"): 200 concurrent requests
// against a client at rpm 120 (burst 10 by default, one more every 60 s / 111) are admitted
// as the burst and then one per interval, never the whole minute at once; every refusal's
// Retry-After says when the next request would be admitted, and one is after that time. A
// configured burst (rpm 6, rpm_burst 3: one every 15 s after the burst) says so too. The any-60 s
// window bound is asserted exactly by tests/unit/test_limits_rate.c with an injected clock.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startSim, startGateway } from '../lib/harness.mjs';

const PACED = 'limits-rate-paced-key-0123456789';
const SMALL = 'limits-rate-small-key-0123456789';
const INTERVAL_MS = 60000 / 111; // rpm 120, burst 10: 60 s / (120 - 10 + 1)
let sim, gw;

before(async () => {
  sim = await startSim();
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: warn }
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-r"], health: { probe: none } }
targets:
  t: { provider: sim, model: rate-client }
  s: { provider: sim, model: rate-small }
routes:
  paced: { primary: [t] }
  small: { primary: [s] }
clients:
  paced: { key: "${PACED}", routes: ["*"], rpm: 120 }
  small: { key: "${SMALL}", routes: ["*"], rpm: 6, rpm_burst: 3 }
`,
  });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

async function chat(model, key) {
  const res = await fetch(`${gw.base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  });
  return { res, body: await res.json() };
}

const calls = async (model) => (await sim.stats()).models[model]?.calls ?? 0;

test('rpm 120: of 200 concurrent, the burst (10) and one per interval pass, never the minute', async () => {
  const started = Date.now();
  const answers = await Promise.all(Array.from({ length: 200 }, () => chat('paced', PACED)));
  const elapsed = Date.now() - started;
  const ok = answers.filter((a) => a.res.status === 200).length;
  // The burst at once, then at most one per interval for as long as the 200 took.
  assert.ok(ok >= 10, `admitted ${ok}`);
  assert.ok(ok <= 10 + Math.ceil(elapsed / INTERVAL_MS), `admitted ${ok} in ${elapsed} ms`);
  assert.equal(await calls('rate-client'), ok);
  for (const { res, body } of answers.filter((a) => a.res.status !== 200)) {
    assert.equal(res.status, 429, JSON.stringify(body));
    assert.equal(res.headers.get('x-bascule-limited-by'), 'client_rpm');
    // The next admission is at most one interval (541 ms) away: 1 s, never the minute.
    assert.equal(res.headers.get('retry-after'), '1');
  }
  // After the Retry-After, the next request is admitted.
  await new Promise((r) => setTimeout(r, 1000));
  assert.equal((await chat('paced', PACED)).res.status, 200);
});

test('rpm 6 with rpm_burst 3: three at once, then Retry-After says 15 s (60 s / 4)', async () => {
  const answers = [];
  for (let i = 0; i < 5; i++) answers.push(await chat('small', SMALL));
  assert.deepEqual(answers.map((a) => a.res.status), [200, 200, 200, 429, 429]);
  const wait = Number(answers[3].res.headers.get('retry-after'));
  // 15 s less the time the three took (a loaded machine may take seconds).
  assert.ok(wait >= 10 && wait <= 15, `Retry-After ${wait}`);
  assert.equal(await calls('rate-small'), 3);
});
