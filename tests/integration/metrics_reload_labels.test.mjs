// SPDX-License-Identifier: MIT
// Metric labels across reloads (docs/internals/metrics.md "The front cache and scoped
// updates"): a worker's updates find their series through the label pointers of the
// request's config snapshot, and a reload frees the old snapshot's strings, whose addresses
// the next snapshots' strings may take. Each reload here renames the route, the target and
// the provider to names of the same length (so their strings fall in the same allocation
// size), one worker serves a few requests under each config, and every series must count
// exactly the requests made under its own names: none may land on a name of an earlier
// config. The real binary against bascule-sim.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startSim, startGateway, freePort } from '../lib/harness.mjs';

let sim, gw, port;

const NAMES = ['alpha', 'bravo', 'cedar', 'delta', 'eagle', 'fable', 'grape', 'haven'];
const PER_CONFIG = 3;

function config(i) {
  const n = NAMES[i];
  return `
listen: "127.0.0.1:${port}"
workers: 1
log: { level: info, format: json }
providers:
  prov-${n}: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-test-a"], health: { probe: none } }
targets:
  tgt-${n}: { provider: prov-${n}, model: upstream-${n} }
routes:
  route-${n}: { primary: [tgt-${n}] }
`;
}

before(async () => {
  sim = await startSim();
  port = await freePort();
  gw = await startGateway({ config: config(0) });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

async function chat(route) {
  const res = await fetch(`${gw.base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: route, messages: [{ role: 'user', content: 'hi' }] }),
  });
  await res.text();
  return res.status;
}

/** The value of <name>{<labels>} (label text as exposed, in order), 0 when absent. */
function valueOf(text, name, labels) {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}} `));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

test('after each of seven reloads, every series counts only the requests made under its own names', async () => {
  for (let i = 0; i < NAMES.length; i++) {
    if (i > 0)
      await gw.reload(config(i));
    for (let k = 0; k < PER_CONFIG; k++)
      assert.equal(await chat(`route-${NAMES[i]}`), 200, `a request on route-${NAMES[i]}`);
    const res = await fetch(`${gw.url}/metrics`);
    assert.equal(res.status, 200);
    const text = await res.text();
    for (let j = 0; j <= i; j++) {
      const n = NAMES[j];
      assert.equal(valueOf(text, 'bascule_requests_total', `route="route-${n}",outcome="ok"`), PER_CONFIG,
        `requests of route-${n} after config ${i}`);
      assert.equal(valueOf(text, 'bascule_attempts_total', `target="tgt-${n}",kind="ok"`), PER_CONFIG,
        `attempts of tgt-${n} after config ${i}`);
      assert.equal(valueOf(text, 'bascule_outcomes_total', `route="route-${n}",layer="transport",result="ok"`),
        PER_CONFIG, `transport outcomes of route-${n} after config ${i}`);
      assert.equal(valueOf(text, 'bascule_target_outcomes_total', `target="tgt-${n}",layer="transport",result="ok"`),
        PER_CONFIG, `target outcomes of tgt-${n} after config ${i}`);
      assert.equal(valueOf(text, 'bascule_request_duration_seconds_count', `route="route-${n}"`), PER_CONFIG,
        `request durations of route-${n} after config ${i}`);
    }
  }
});
