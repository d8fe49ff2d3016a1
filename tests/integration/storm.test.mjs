// A 429 storm: every upstream answers 429. The gateway-wide retry budget (docs/design.md §3)
// must keep upstream calls a bounded multiple of client requests; a control gateway with
// an unlimited budget shows what the budget prevents. Adaptive concurrency is off here: it
// would turn requests away before the budget is measured (adaptive.test.mjs covers it).
import { test, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startSim, startGateway } from '../lib/harness.mjs';

const REQUESTS = 100;
const CONCURRENCY = 10;
const procs = [];

after(async () => { for (const p of procs) await p.stop(); });

function config(simBase, model, budget) {
  return `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: warn }
retry:
  backoff: { base_ms: 5, max_ms: 20, jitter: 0.1 }
  budget: ${budget}
providers:
  a: { kind: openai_compatible, base_url: "${simBase}", keys: ["sk-a"], health: { probe: none } }
  b: { kind: openai_compatible, base_url: "${simBase}", keys: ["sk-b"], health: { probe: none } }
targets:
  p: { provider: a, model: ${model}-p, adaptive: false, breaker: { consecutive_failures: 100000, min_requests: 100000 } }
  e: { provider: b, model: ${model}-e, adaptive: false, breaker: { consecutive_failures: 100000, min_requests: 100000 } }
routes:
  storm:
    primary: [p]
    equivalent: [e]
    envelope: { deadline_ms: 10000, max_attempts: 3 }
`;
}

async function storm(sim, budget, model) {
  for (const m of [`${model}-p`, `${model}-e`])
    await sim.setModel(m, { script: [{ action: 'status', status: 429, headers: { 'retry-after-ms': '1' }, times: 100000 }] });
  const gw = await startGateway({ config: config(sim.base, model, budget) });
  procs.push(gw);
  const statuses = [];
  let next = 0;
  const worker = async () => {
    while (next < REQUESTS) {
      next++;
      const res = await fetch(`${gw.base}/chat/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'storm', messages: [{ role: 'user', content: 'x' }] }),
      });
      statuses.push(res.status);
      await res.arrayBuffer();
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const s = await sim.stats();
  const upstream = (s.models[`${model}-p`]?.calls ?? 0) + (s.models[`${model}-e`]?.calls ?? 0);
  return { upstream, statuses };
}

test('a 429 storm: upstream calls stay bounded by the retry budget', async () => {
  const sim = await startSim();
  procs.push(sim);
  const bounded = await storm(sim, '{ ratio: 0.2, min_per_s: 1, window_ms: 10000 }', 'b');
  const open = await storm(sim, '{ ratio: 10, min_per_s: 1000, window_ms: 10000 }', 'u');
  const amp = bounded.upstream / REQUESTS;
  const ampOpen = open.upstream / REQUESTS;
  console.log(`429 storm: ${REQUESTS} client requests -> ${bounded.upstream} upstream calls with the budget ` +
    `(amplification ${amp.toFixed(2)}), ${open.upstream} without (${ampOpen.toFixed(2)})`);
  const tally = {}; for (const s of bounded.statuses) tally[s] = (tally[s] ?? 0) + 1;
  assert.ok(bounded.statuses.every((s) => s === 429), `every client gets a 429 typed failure: ${JSON.stringify(tally)}`);
  // ratio 0.2 x 100 first attempts + floor of 1/s over a 10 s window = 30 retries at most.
  assert.ok(bounded.upstream >= REQUESTS && bounded.upstream <= REQUESTS + 30 + 2,
    `bounded: ${bounded.upstream}`);
  assert.ok(open.upstream >= 1.5 * REQUESTS, `without a budget requests retry and fail over: ${open.upstream}`);
});
