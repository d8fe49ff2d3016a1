// Breakers that keep answering (docs/internals/breaker.md "Panic" and "The open time"):
// with faults that flap between two targets, the success rate with breakers on stays within
// 20 % of the rate with them effectively off, because when every circuit is open the one open
// longest is tried as a probe (breaker.panic, on by default) instead of failing at once. The
// promises of the breaker still hold: a dead primary beside a healthy equivalent sees a
// bounded number of calls, a dead target alone is probed within the retry budget only, and a
// 429 storm is not amplified. Every failure is typed.
//
// Deterministic: requests go one at a time and the faults are scripted by request count (the
// test switches each phase's script before its first request), and open_ms is far longer than
// the test, so no circuit half-opens by the clock.
import { test, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startSim, startGateway } from '../lib/harness.mjs';

const procs = [];
after(async () => { for (const p of procs.reverse()) await p.stop(); });

let simP;
function sim() {
  simP ??= startSim().then((s) => { procs.push(s); return s; });
  return simP;
}

const ADMIN = 'test-admin-key-0123456789';
const OFF = 'consecutive_failures: 100000, min_requests: 100000';
const ON = 'consecutive_failures: 2, min_requests: 1000, open_ms: 60000, success_threshold: 1, ramp_ms: 0';

function flapConfig(simBase, name, breaker, budget = '{ ratio: 1, min_per_s: 1000, window_ms: 10000 }') {
  return `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: info, format: json }
admin: { key: "${ADMIN}" }
retry:
  budget: ${budget}
providers:
  a: { kind: openai_compatible, base_url: "${simBase}", keys: ["sk-a"], health: { probe: none } }
  b: { kind: openai_compatible, base_url: "${simBase}", keys: ["sk-b"], health: { probe: none } }
targets:
  p: { provider: a, model: ${name}-p, adaptive: false, breaker: { ${breaker} } }
  e: { provider: b, model: ${name}-e, adaptive: false, breaker: { ${breaker} } }
routes:
  flap:
    primary: [p]
    equivalent: [e]
    envelope: { deadline_ms: 10000, max_attempts: 2, max_same_target_attempts: 1 }
`;
}

async function chat(gw, model) {
  const res = await fetch(`${gw.base}/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'x' }] }),
  });
  const text = await res.text();
  return { status: res.status, text };
}

// A typed failure: a JSON error body with a reason (docs/design.md §9).
function assertTyped(r) {
  let body;
  assert.doesNotThrow(() => { body = JSON.parse(r.text); }, `a JSON body: ${r.text}`);
  assert.equal(typeof (body.reason ?? body.error?.code), 'string', `typed: ${r.text}`);
}

// Each phase: which of the two targets answers, and what the other one does. 12 phases of 10
// requests; two phases have both down, so at most 100 of 120 can succeed.
const PHASES = [
  ['up', 'up'], ['503', 'up'], ['503', 'reset'], ['up', '500'],
  ['up', 'up'], ['reset', 'up'], ['up', '503'], ['500', '503'],
  ['up', 'up'], ['up', 'reset'], ['503', 'up'], ['up', 'up'],
];
const PER_PHASE = 10;

function script(state) {
  if (state === 'up') return { script: [] };
  if (state === 'reset') return { script: [{ action: 'reset', times: 100000 }] };
  return { script: [{ action: 'status', status: Number(state), times: 100000 }] };
}

// <clients> loops share each phase's <perPhase> requests; the next phase starts when they
// are all answered.
async function flap(name, breaker, { clients = 1, perPhase = PER_PHASE, budget } = {}) {
  const s = await sim();
  const gw = await startGateway({ config: flapConfig(s.base, name, breaker, budget) });
  procs.push(gw);
  let ok = 0;
  const failures = [];
  for (const [p, e] of PHASES) {
    await s.setModel(`${name}-p`, script(p));
    await s.setModel(`${name}-e`, script(e));
    let sent = 0;
    await Promise.all(Array.from({ length: clients }, async () => {
      while (sent < perPhase) {
        sent++;
        const r = await chat(gw, 'flap');
        if (r.status === 200) ok++;
        else failures.push(r);
      }
    }));
  }
  const calls = (await s.calls(`${name}-p`)) + (await s.calls(`${name}-e`));
  return { ok, failures, calls, gw };
}

test('flapping faults: with breakers on the success rate stays within 20 % of breakers off', async (t) => {
  const off = await flap('off', OFF);
  const on = await flap('on', ON);
  const total = PHASES.length * PER_PHASE;
  t.diagnostic(`breakers off: ${off.ok}/${total} ok, ${off.calls} upstream calls; ` +
    `on: ${on.ok}/${total} ok, ${on.calls} upstream calls`);
  assert.ok(off.ok >= 90, `the control answers whenever a target is up (${off.ok})`);
  assert.ok(on.ok >= 0.8 * off.ok, `breakers on: ${on.ok} ok against ${off.ok} with them off`);
  // Breakers still spare the upstreams: no more calls than without them.
  assert.ok(on.calls <= off.calls, `upstream calls: ${on.calls} on, ${off.calls} off`);
  // A failover to an open circuit says why in the attempt log.
  const panics = on.gw.accessLog().filter((l) => l.type === 'attempt' && l.why === 'breaker_panic');
  assert.ok(panics.length >= 1, 'attempt lines name breaker_panic');
  for (const f of [...off.failures, ...on.failures]) assertTyped(f);
});

// The chaos of the issue in small: 8 clients at once, the default retry budget, breakers of
// consecutive_failures 5 with the default probes and ramp. Requests that find every probe slot
// taken must not spend the budget (they send nothing), or the budget runs dry while both are
// down and no probe is allowed when one comes back.
test('flapping faults, 8 clients at once, the default retry budget: still within 20 %', async (t) => {
  const opts = { clients: 8, perPhase: 80, budget: '{ ratio: 0.2, min_per_s: 10, window_ms: 10000 }' };
  const breaker = 'consecutive_failures: 5, open_ms: 60000, min_requests: 10';
  const off = await flap('coff', OFF, opts);
  const on = await flap('con', breaker, opts);
  const total = PHASES.length * opts.perPhase;
  t.diagnostic(`8 clients: breakers off ${off.ok}/${total} ok, ${off.calls} calls; ` +
    `on ${on.ok}/${total} ok, ${on.calls} calls`);
  assert.ok(on.ok >= 0.8 * off.ok, `breakers on: ${on.ok} ok against ${off.ok} with them off`);
  for (const f of [...off.failures, ...on.failures]) assertTyped(f);
});

test('breaker.panic: false keeps the fail-fast of an all-open route', async (t) => {
  const ff = await flap('ff', `${ON}, panic: false`);
  const total = PHASES.length * PER_PHASE;
  t.diagnostic(`breakers on, panic off: ${ff.ok}/${total} ok`);
  // Both circuits open in phase 3 and stay open for open_ms (60 s): nothing after it answers.
  assert.ok(ff.ok <= 3 * PER_PHASE, `fail-fast once both circuits are open (${ff.ok} ok)`);
  assert.ok(ff.failures.some((f) => JSON.parse(f.text).reason === 'no_eligible_fallback'));
  for (const f of ff.failures) assertTyped(f);
});

function boundConfig(simBase, budget, alone = '') {
  return `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: info, format: json }
admin: { key: "${ADMIN}" }
retry:
  budget: ${budget}
providers:
  a: { kind: openai_compatible, base_url: "${simBase}", keys: ["sk-a"], health: { probe: none } }
  b: { kind: openai_compatible, base_url: "${simBase}", keys: ["sk-b"], health: { probe: none } }
targets:
  deadp: { provider: a, model: bound-deadp, breaker: { consecutive_failures: 3, open_ms: 60000, min_requests: 100 } }
  okq: { provider: b, model: bound-okq }
${alone}routes:
  withequiv:
    primary: [deadp]
    equivalent: [okq]
    envelope: { deadline_ms: 10000, max_same_target_attempts: 1 }
${alone && `  alone:
    primary: [alone]
    envelope: { deadline_ms: 10000, max_attempts: 1 }
`}`;
}

async function targetView(gw, id) {
  const res = await fetch(`${gw.url}/admin/targets`, { headers: { authorization: `Bearer ${ADMIN}` } });
  return (await res.json()).targets.find((t) => t.id === id);
}

test('a dead primary beside a healthy equivalent still sees a bounded number of calls', async (t) => {
  const s = await sim();
  const gw = await startGateway({ config: boundConfig(s.base, '{ ratio: 0.2, min_per_s: 10, window_ms: 10000 }') });
  procs.push(gw);
  await s.setModel('bound-deadp', script('500'));
  // The equivalent serves; panic never starts while it is usable.
  for (let i = 0; i < 30; i++) assert.equal((await chat(gw, 'withequiv')).status, 200);
  const primary = await s.calls('bound-deadp');
  t.diagnostic(`dead primary: ${primary} calls of 30`);
  assert.ok(primary <= 12, `the dead primary was called ${primary} times of 30`);
});

test('a dead target alone is probed only within the retry budget, and its open time grows', async (t) => {
  const s = await sim();
  const gw = await startGateway({ config: boundConfig(s.base, '{ ratio: 0.2, min_per_s: 0, window_ms: 10000 }',
    '  alone: { provider: a, model: bound-alone, breaker: { consecutive_failures: 3, open_ms: 60000, open_backoff: 3, min_requests: 100 } }\n') });
  procs.push(gw);
  await s.setModel('bound-alone', script('503'));
  // Three calls open it; then panic probes only within the retry budget (ratio 0.2 of the 30
  // first attempts, no floor: at most 6), and each failed probe opens it for longer
  // (open_backoff 3).
  const answers = [];
  for (let i = 0; i < 30; i++) answers.push(await chat(gw, 'alone'));
  const alone = await s.calls('bound-alone');
  t.diagnostic(`dead target alone: ${alone} calls of 30`);
  assert.ok(alone <= 12, `the dead target was called ${alone} times of 30`);
  assert.ok(alone > 3, `panic probes tried it after it opened (${alone} calls)`);
  for (const r of answers) {
    assert.notEqual(r.status, 200);
    assertTyped(r);
  }
  const v = await targetView(gw, 'alone');
  assert.equal(v.circuit, 'open');
  assert.ok(v.breaker.opened >= 2, `reopened by failed probes (${v.breaker.opened})`);
  // open_ms 60 s, tripled by each failed probe: more than 60 s left now.
  assert.ok(v.retry_after_ms > 60000, `the open time grew: ${v.retry_after_ms} ms left`);
});

test('a 429 storm with breakers at their defaults: calls stay bounded by the retry budget', async (t) => {
  const s = await sim();
  const REQUESTS = 100;
  for (const m of ['st-p', 'st-e'])
    await s.setModel(m, { script: [{ action: 'status', status: 429, headers: { 'retry-after-ms': '1' }, times: 100000 }] });
  const gw = await startGateway({ config: `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: warn }
retry:
  backoff: { base_ms: 5, max_ms: 20, jitter: 0.1 }
  budget: { ratio: 0.2, min_per_s: 1, window_ms: 10000 }
providers:
  a: { kind: openai_compatible, base_url: "${s.base}", keys: ["sk-a"], health: { probe: none } }
  b: { kind: openai_compatible, base_url: "${s.base}", keys: ["sk-b"], health: { probe: none } }
targets:
  p: { provider: a, model: st-p, adaptive: false }
  e: { provider: b, model: st-e, adaptive: false }
routes:
  storm:
    primary: [p]
    equivalent: [e]
    envelope: { deadline_ms: 10000, max_attempts: 3 }
` });
  procs.push(gw);
  const answers = [];
  let next = 0;
  const worker = async () => {
    while (next < REQUESTS) {
      next++;
      answers.push(await chat(gw, 'storm'));
    }
  };
  await Promise.all(Array.from({ length: 10 }, worker));
  const upstream = (await s.calls('st-p')) + (await s.calls('st-e'));
  t.diagnostic(`429 storm: ${REQUESTS} requests -> ${upstream} upstream calls (${(upstream / REQUESTS).toFixed(2)})`);
  // ratio 0.2 x 100 first attempts + 1/s over a 10 s window = 30 retries at most (+2 for
  // the window's edges, as in storm.test.mjs).
  assert.ok(upstream <= REQUESTS + 32, `amplification ${upstream / REQUESTS}`);
  for (const r of answers) {
    assert.equal(r.status, 429, r.text);
    assertTyped(r);
  }
});
