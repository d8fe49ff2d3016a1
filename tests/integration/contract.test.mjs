// Capability contracts and canary fallbacks: a target that cannot satisfy what the route
// and the request need is never tried; a fallback in canary takes only its share.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startSim, startGateway } from '../lib/harness.mjs';

let sim, gw;

before(async () => {
  sim = await startSim();
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: warn }
retry: { budget: { ratio: 10, min_per_s: 1000, window_ms: 10000 } }
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-c"], health: { probe: none } }
targets:
  prim: { provider: sim, model: c-prim, capabilities: [text, streaming, tools] }
  notools: { provider: sim, model: c-notools, capabilities: [text, streaming] }
  withtools: { provider: sim, model: c-withtools, capabilities: [text, streaming, tools] }
  small: { provider: sim, model: c-small, capabilities: [text, streaming], context_window: 1000 }
  cprim: { provider: sim, model: k-prim, breaker: { consecutive_failures: 100000, min_requests: 100000 } }
  canary: { provider: sim, model: k-canary, canary_percent: 30 }
  stable: { provider: sim, model: k-stable }
  slowp: { provider: sim, model: b-slow }
  plainonly: { provider: sim, model: cap-plain, capabilities: [text] }
  seeing: { provider: sim, model: cap-vision, capabilities: [text, streaming, vision, json_schema] }
  pricey: { provider: sim, model: b-pricey, price: { input_per_mtok: 1000000, output_per_mtok: 1000000 } }
routes:
  tooly:
    primary: [prim]
    fallback: [notools, withtools]
    envelope: { max_same_target_attempts: 1, allow_cross_model_fallback: true }
  nocap:
    primary: [notools]
  tiny:
    primary: [small]
  caps:
    primary: [plainonly]
    equivalent: [seeing]
  latency:
    primary: [slowp]
    envelope: { max_added_latency_ms: 500 }
  costly:
    primary: [pricey]
    envelope: { max_cost_usd: 0.5 }
  canaried:
    primary: [cprim]
    fallback: [canary, stable]
    envelope: { max_same_target_attempts: 1, allow_cross_model_fallback: true }
`,
  });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

const tools = [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: {} } } }];

function chat(model, extra = {}) {
  return fetch(`${gw.base}/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], ...extra }) });
}

const calls = (model) => sim.calls(model);

test('a fallback target lacking tools is skipped for a request with tools', async () => {
  await sim.setModel('c-prim', { script: [{ action: 'status', status: 503, times: 1 }] });
  const res = await chat('tooly', { tools });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-bascule-target'), 'withtools');
  assert.equal(await calls('c-notools'), 0);
  assert.equal(await calls('c-withtools'), 1);
});

test('without tools in the request the first fallback is fine', async () => {
  await sim.setModel('c-prim', { script: [{ action: 'status', status: 503, times: 1 }] });
  const res = await chat('tooly');
  assert.equal(res.headers.get('x-bascule-target'), 'notools');
});

test('no target with the needed capability: a typed failure naming it, no upstream call', async () => {
  const before = await calls('c-notools');
  const res = await chat('nocap', { tools });
  assert.equal(res.status, 400);
  const body = await res.json();
  assert.equal(body.reason, 'no_eligible_fallback');
  assert.match(body.error.message, /missing: tools/);
  assert.equal(res.headers.get('x-should-retry'), 'false');
  assert.equal(await calls('c-notools'), before);
});

test('a request larger than every context window is refused before any attempt', async () => {
  const res = await chat('tiny', { messages: [{ role: 'user', content: 'x'.repeat(8000) }] });
  assert.equal(res.status, 400);
  assert.match((await res.json()).error.message, /context window/);
  assert.equal(await calls('c-small'), 0);
});

test('a canary fallback takes about its share of the failures', async () => {
  await sim.setModel('k-prim', { script: [{ action: 'status', status: 503, times: 100000 }] });
  const N = 200;
  for (let i = 0; i < N; i += 10)
    await Promise.all(Array.from({ length: 10 }, async () => (await chat('canaried')).arrayBuffer()));
  const canary = await calls('k-canary');
  const stable = await calls('k-stable');
  assert.equal(canary + stable, N);
  // canary_percent 30: expected 60, sd ~6.5; the bounds are ~4.5 sd wide.
  assert.ok(canary >= 30 && canary <= 90, `canary took ${canary}/${N}`);
  // Its results are counted apart from the stable fallback's (task results come from
  // POST /v1/feedback; the answers themselves are the transport layer).
  const metrics = await (await fetch(`${gw.url}/metrics`)).text();
  const task = (t) => Number((new RegExp(`bascule_target_outcomes_total\\{target="${t}",layer="transport",result="ok"\\} (\\d+)`).exec(metrics) || [])[1] || 0);
  assert.equal(task('canary'), canary);
  assert.equal(task('stable'), stable);
});

test('a wait past max_added_latency_ms stops at once with a typed failure', async () => {
  await sim.setModel('b-slow', { script: [{ action: 'status', status: 503, headers: { 'retry-after': '2' } }] });
  const t0 = Date.now();
  const res = await chat('latency');
  // Not the 2 s the upstream asked for (the reason and the one call say it deterministically).
  assert.ok(Date.now() - t0 < 2000, 'did not wait');
  assert.equal(res.status, 503);
  assert.equal((await res.json()).reason, 'latency_budget_exhausted');
  assert.equal(await calls('b-slow'), 1);
});

test('an attempt whose estimated cost passes max_cost_usd is never made', async () => {
  const res = await chat('costly', { messages: [{ role: 'user', content: 'x'.repeat(4000) }] });
  assert.equal(res.status, 503);
  const body = await res.json();
  assert.equal(body.reason, 'cost_budget_exhausted');
  assert.equal(body.retryable, false);
  assert.equal(await calls('b-pricey'), 0);
});

test('each capability the request implies skips targets without it', async () => {
  const image = { role: 'user', content: [{ type: 'text', text: 'what is this?' },
    { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }] };
  const cases = [
    ['vision (an image part)', { messages: [image] }],
    ['streaming', { stream: true }],
    ['json_schema', { response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object' } } } }],
  ];
  for (const [what, extra] of cases) {
    const before = await calls('cap-plain');
    const res = await chat('caps', extra);
    assert.equal(res.status, 200, what);
    assert.equal(res.headers.get('x-bascule-target'), 'seeing', what);
    await res.text();
    assert.equal(await calls('cap-plain'), before, `${what}: the text-only target is never tried`);
  }
  const plain = await chat('caps');
  assert.equal(plain.headers.get('x-bascule-target'), 'plainonly', 'a plain request uses the primary');
  await plain.text();
});
