// Adaptive traffic governance against bascule-sim, with exact upstream call counts: a 429
// cools a key for its model only, rate-limit headers on a success keep a key out until its
// reset, and the AIMD controller settles a 429 storm from an upstream that takes only 4
// requests at once. Every scenario has its own providers and models, so key and controller
// state never leak between tests.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startSim, startGateway } from '../lib/harness.mjs';

let sim, gw;
// A deployment limit, not a key limit: every key of the account shares it, so rotating keys
// (each rests only for its 429's retry-after-ms) does not calm the storm by itself.
const AIMD_KEYS = Array.from({ length: 8 }, (_, i) => `"sk-aimd-${i}"`).join(", ");

const CONFIG = (simBase) => `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: info, format: json }
retry:
  backoff: { base_ms: 20, max_ms: 200, jitter: 0.2 }
providers:
  p-two: { kind: openai_compatible, base_url: "${simBase}", keys: ["sk-two"], health: { probe: none } }
  p-rl1: { kind: openai_compatible, base_url: "${simBase}", keys: ["sk-rl1"], health: { probe: none } }
  p-rl2: { kind: openai_compatible, base_url: "${simBase}", keys: ["sk-rl2"], health: { probe: none } }
  p-aimd: { kind: openai_compatible, base_url: "${simBase}", keys: [${AIMD_KEYS}], health: { probe: none } }
  p-cap: { kind: openai_compatible, base_url: "${simBase}", keys: ["sk-cap"], health: { probe: none } }
targets:
  two-a: { provider: p-two, model: twoA }
  two-b: { provider: p-two, model: twoB }
  rl-first: { provider: p-rl1, model: rlFirst }
  rl-second: { provider: p-rl2, model: rlSecond }
  aimd: { provider: p-aimd, model: aimdM }
  capped: { provider: p-cap, model: capM, max_concurrency: 8, rpm: 6000, queue_ms: 3000 }
routes:
  twoA:
    primary: [two-a]
    envelope: { deadline_ms: 2000 }
  twoB:
    primary: [two-b]
    envelope: { deadline_ms: 2000 }
  rl:
    primary: [rl-first]
    equivalent: [rl-second]
  aimd:
    primary: [aimd]
    envelope: { deadline_ms: 5000 }
  capped:
    primary: [capped]
    envelope: { deadline_ms: 8000 }
`;

before(async () => {
  sim = await startSim();
  gw = await startGateway({ config: CONFIG(sim.base) });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

function chat(route) {
  return fetch(`${gw.base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: route, messages: [{ role: 'user', content: 'hi' }] }),
  });
}

test('a 429 with Retry-After: 5 on model A does not stop model B on the same key', async () => {
  await sim.setModel('twoA', { script: [{ action: 'status', status: 429, headers: { 'retry-after': '5' } }] });
  const a = await chat('twoA');
  await a.text();
  assert.equal(a.status, 429);
  assert.equal(await sim.calls('twoA'), 1);
  // Model B on the same key goes upstream at once.
  const b = await chat('twoB');
  assert.equal(b.status, 200);
  assert.equal(b.headers.get('x-bascule-target'), 'two-b');
  assert.equal((await b.json()).object, 'chat.completion');
  assert.equal(await sim.calls('twoB'), 1);
  // Model A stays cooled on that key: no second call upstream.
  const a2 = await chat('twoA');
  await a2.text();
  assert.equal(a2.status, 429);
  assert.equal(await sim.calls('twoA'), 1);
});

test('x-ratelimit-remaining-requests: 0 + reset 3s sends the next request to the equivalent', async () => {
  await sim.setModel('rlFirst', {
    script: [{ action: 'ok', headers: { 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': '3s' } }],
  });
  const first = await chat('rl');
  assert.equal(first.status, 200);
  assert.equal(first.headers.get('x-bascule-target'), 'rl-first');
  await first.json();
  const second = await chat('rl');
  assert.equal(second.status, 200);
  assert.equal(second.headers.get('x-bascule-target'), 'rl-second');
  await second.json();
  assert.equal(await sim.calls('rlFirst'), 1); // 0 calls to the first after its headers
  assert.equal(await sim.calls('rlSecond'), 1);
});

test('16 client loops against an upstream taking 4 at once settle under 30% rejected', async () => {
  const LOOPS = 16, PER_LOOP = 24;
  await sim.setModel('aimdM', { max_concurrent: 4, repeat: true, script: [{ action: 'delay', delay_ms: 40 }] });
  let done = 0, mid = null, midPromise = null, midMetrics = null;
  const statuses = {};
  const loop = async () => {
    for (let i = 0; i < PER_LOOP; i++) {
      const res = await chat('aimd');
      await res.text();
      statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      if (++done === (LOOPS * PER_LOOP) / 2)
        midPromise = Promise.all([
          sim.stats().then((s) => { mid = s.models.aimdM; }),
          fetch(`http://127.0.0.1:${gw.port}/metrics`).then((r) => r.text()).then((t) => { midMetrics = t; }),
        ]);
    }
  };
  await Promise.all(Array.from({ length: LOOPS }, loop));
  await midPromise;
  const end = (await sim.stats()).models.aimdM;
  const calls = end.calls - mid.calls, rejected = end.faults - mid.faults;
  // Enough calls to judge a ratio; a slow build (ThreadSanitizer) turns more requests away
  // locally at the adaptive limit, so fewer reach the upstream.
  assert.ok(calls >= 10, `upstream calls in the second half: ${calls}`);
  assert.ok(rejected / calls < 0.3,
    `second half: ${rejected} of ${calls} upstream calls rejected (whole run ${end.faults}/${end.calls}; client statuses ${JSON.stringify(statuses)})`);
  assert.ok(end.faults > 0, 'the upstream limit was reached at least once');
  assert.ok(statuses[200] > 0);
  // The effective concurrency is exported and, half-way through while all 16 loops press,
  // it has settled near what the upstream takes (4): a 429 halves it, successes add one slot
  // per <limit> of them, so it probes a slot or two above 4 before the next 429 -- 8 is
  // twice the upstream's, half the 16 loops (a controller that never cut would sit there).
  const effective = (text) => {
    const m = text.match(/^bascule_target_effective_concurrency\{target="aimd"\} (\d+)/m);
    assert.ok(m, 'effective concurrency gauge for aimd');
    return Number(m[1]);
  };
  const settled = effective(midMetrics);
  assert.ok(settled >= 1 && settled <= 8, `effective concurrency half-way: ${settled} (the upstream takes 4)`);
  const metrics = await (await fetch(`http://127.0.0.1:${gw.port}/metrics`)).text();
  assert.ok(effective(metrics) >= 1 && effective(metrics) <= LOOPS, `effective concurrency ${effective(metrics)}`);
  assert.match(metrics, /^bascule_target_effective_rpm\{target="aimd"\} 0$/m);
});

test('with a configured max_concurrency, the limiter enforces the AIMD-scaled caps', async () => {
  // The upstream takes 2 at once; the target allows 8. Its 429s halve the effective limit
  // the limiter enforces (configured x factor), rpm included.
  await sim.setModel('capM', { max_concurrent: 2, repeat: true, script: [{ action: 'delay', delay_ms: 40 }] });
  const limits = async () => (await (await fetch(`${gw.url}/status.json`)).json())
    .targets.find((t) => t.id === 'capped');
  const before = await limits();
  assert.equal(before.limits.effective_max_concurrency, 8);
  assert.equal(before.limits.effective_rpm, 6000);
  await Promise.all(Array.from({ length: 12 }, async () => { const r = await chat('capped'); await r.text(); }));
  assert.ok((await sim.stats()).models.capM.faults > 0, 'the upstream limit was reached');
  const after = await limits();
  assert.ok(after.adaptive.factor < 1, `factor ${after.adaptive.factor}`);
  assert.ok(after.limits.effective_max_concurrency < 8,
    `effective max_concurrency ${after.limits.effective_max_concurrency}`);
  assert.equal(after.limits.effective_max_concurrency, after.adaptive.effective_concurrency);
  assert.ok(after.limits.effective_rpm < 6000, `effective rpm ${after.limits.effective_rpm}`);
});
