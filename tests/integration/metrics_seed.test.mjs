// SPDX-License-Identifier: MIT
// /metrics before any traffic (docs/internals/metrics.md "Present at zero"): every labelled
// family has a series at 0 for each label combination the config knows -- per-target and
// per-workflow outcomes, limit decisions for the limits configured, the shadow families of
// each shadowed route and candidate, key cooldowns and re-verifications of each provider
// with keys, stream continuations, response-cache results, stream pauses, breaker
// transitions to each state -- and `promtool check metrics` accepts the scrape. A reload
// (SIGHUP) adds the new config's series at zero, once each. The seeded zeros take none of
// the status history's bounded names, and a config past the seed bound (6000 a scrape)
// drops no update. The real binary against bascule-sim; no request is sent.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { startSim, startGateway } from '../lib/harness.mjs';

let sim, gw;

const config = (simUrl, extra = '') => `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: info, format: json }
providers:
  sim: { kind: openai, base_url: "${simUrl}/v1", keys: ["sk-seed-a", "sk-seed-b"], rpm: 6000, health: { probe: none } }
  open: { kind: openai_compatible, base_url: "${simUrl}/v1", health: { probe: none } }
targets:
  main@sim: { provider: sim, model: seed-main, max_concurrency: 8, queue_ms: 1000 }
  alt@sim: { provider: sim, model: seed-alt, tpm: 100000 }
  cand@sim: { provider: sim, model: seed-cand }
  free@open: { provider: open, model: seed-free }
${extra ? `  ${extra.target}\n` : ''}routes:
  chat: { primary: [main@sim], equivalent: [alt@sim], shadow: { targets: [cand@sim] } }
  stream: { primary: [alt@sim], envelope: { on_stream_failure: continue } }
  cached: { primary: [free@open], cache: { mode: exact, ttl_s: 60 } }
${extra ? `  ${extra.route}\n` : ''}clients:
  app: { key: "sk-client-seed-app", routes: ["*"], rpm: 600, budget: { usd: 5, period: day } }
  batch: { key: "sk-client-seed-batch", routes: [chat] }
`;

before(async () => {
  sim = await startSim();
  gw = await startGateway({ config: config(sim.url) });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

async function metrics() {
  const res = await fetch(`${gw.url}/metrics`);
  assert.equal(res.status, 200);
  return res.text();
}

/** Every sample line as { name, labels (the raw text in braces), value }. */
function samples(text) {
  return text.split('\n').filter((l) => l && !l.startsWith('#')).map((l) => {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(l);
    assert.ok(m, `a sample line: ${l}`);
    return { name: m[1], labels: m[2] ?? '', value: Number(m[3]) };
  });
}

/** Asserts <name>{<labels>} (label text as exposed, in order) is present with value 0. */
function assertZero(all, name, labels) {
  const hit = all.filter((s) => s.name === name && s.labels === labels);
  assert.equal(hit.length, 1, `${name}{${labels}} present once`);
  assert.equal(hit[0].value, 0, `${name}{${labels}} is 0`);
}

const product = (...lists) => lists.reduce((acc, l) => acc.flatMap((a) => l.map((b) => [...a, b])), [[]]);

/** The series this config knows for the families the seed covers, as [name, labels]. */
function expected({ routes, targets, shadows, continued, cached, keyed, limits }) {
  const out = [];
  const add = (name, keys, rows) => rows.forEach((r) => out.push([name, keys.map((k, i) => `${k}="${r[i]}"`).join(',')]));
  const layers = product(['transport', 'contract', 'task'], ['ok', 'failed']);
  add('bascule_target_outcomes_total', ['target', 'layer', 'result'],
    product(targets, ['transport', 'contract', 'task'], ['ok', 'failed']));
  add('bascule_workflow_outcomes_total', ['workflow', 'layer', 'result'],
    product(['primary', 'retry', 'equivalent_failover', 'cross_model_fallback'], ['transport', 'contract', 'task'], ['ok', 'failed']));
  add('bascule_outcomes_total', ['route', 'layer', 'result'], routes.flatMap((r) => layers.map((l) => [r, ...l])));
  add('bascule_outcomes_total', ['route', 'layer', 'result'],
    product(routes, ['transport'], ['partial_output', 'side_effect_uncertain']));
  add('bascule_limit_decisions_total', ['limit', 'outcome'], limits);
  add('bascule_shadow_requests_total', ['route', 'target', 'outcome'], shadows.flatMap(([r, t]) => [[r, t, 'ok'], [r, t, 'skipped']]));
  add('bascule_shadow_agreement_total', ['route', 'target', 'result'],
    shadows.flatMap(([r, t]) => ['agree', 'disagree', 'unknown'].map((x) => [r, t, x])));
  add('bascule_shadow_tokens_total', ['route', 'target', 'direction'], shadows.flatMap(([r, t]) => [[r, t, 'input'], [r, t, 'output']]));
  add('bascule_shadow_cost_usd_total', ['route', 'target'], shadows);
  add('bascule_shadow_latency_seconds_count', ['route', 'target'], shadows);
  add('bascule_key_cooldowns_total', ['provider', 'reason'], product(keyed, ['auth', 'quota', 'rate_limited']));
  add('bascule_key_reverifications_total', ['provider', 'result'], product(keyed, ['inconclusive', 'refused', 'restored']));
  add('bascule_stream_continuations_total', ['route', 'target', 'how', 'result'],
    continued.flatMap(([r, t]) => product(['prefill', 'replay'], ['diverged', 'failed', 'ok', 'refused']).map((x) => [r, t, ...x])));
  add('bascule_cache_requests_total', ['route', 'result'], product(cached, ['bypass', 'hit', 'miss']));
  add('bascule_stream_pauses_total', ['route'], routes.map((r) => [r]));
  add('bascule_breaker_transitions_total', ['target', 'to'], product(targets, ['closed', 'half_open', 'open']));
  add('bascule_requests_total', ['route', 'outcome'], product(routes, ['client_abort', 'client_error', 'error', 'ok', 'partial']));
  add('bascule_tokens_total', ['route', 'direction'], product(routes, ['cache_write', 'cached_input', 'input', 'output', 'reasoning']));
  return out;
}

const START = {
  routes: ['chat', 'stream', 'cached'],
  targets: ['main@sim', 'alt@sim', 'cand@sim', 'free@open'],
  shadows: [['chat', 'cand@sim']],
  continued: [['stream', 'alt@sim']],
  cached: ['cached'],
  keyed: ['sim'],
  // client rpm (app); target max_concurrency (main@sim) and tpm (alt@sim); provider rpm and
  // the default max_concurrency (both providers). Client and team limits refuse or allow;
  // a target's or provider's also move a request on or queue it.
  limits: [
    ...product(['client_rpm'], ['allowed', 'rejected']),
    ...product(['target_concurrency', 'target_tpm', 'provider_rpm', 'provider_concurrency'],
      ['allowed', 'moved_on', 'queued', 'rejected']),
  ],
};

function promtoolCheck(text) {
  try {
    return execFileSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  } catch (err) {
    if (err.code === 'ENOENT') assert.fail('promtool is not installed (scripts/install-deps installs prometheus)');
    assert.fail(`promtool check metrics failed:\n${err.stdout ?? ''}${err.stderr ?? ''}`);
  }
}

/** No (name, labels) twice: a reload must not duplicate a series. */
function assertNoDuplicates(all) {
  const seen = new Set();
  for (const s of all) {
    const key = `${s.name}{${s.labels}}`;
    assert.ok(!seen.has(key), `${key} appears once`);
    seen.add(key);
  }
}

test('before any request: every config-known series of every labelled family at 0; promtool accepts it', async () => {
  const text = await metrics();
  const all = samples(text);
  for (const [name, labels] of expected(START)) assertZero(all, name, labels);

  // Every family declared has at least one sample: none waits for its first event.
  const families = [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1], m[2]]);
  const empty = families.filter(([f, type]) => !all.some((s) => (type === 'histogram' ? s.name === `${f}_count` : s.name === f)));
  assert.deepEqual(empty, [], 'families without a sample before any traffic');

  // Only config-known values: no series for a provider without keys, a route without a
  // shadow, cache or continuation, or a limit nobody configured.
  assert.ok(!all.some((s) => s.name === 'bascule_key_cooldowns_total' && s.labels.includes('provider="open"')));
  assert.ok(!all.some((s) => s.name.startsWith('bascule_shadow_') && !s.labels.startsWith('route="chat",target="cand@sim"')));
  assert.ok(!all.some((s) => s.name === 'bascule_cache_requests_total' && !s.labels.startsWith('route="cached"')));
  assert.ok(!all.some((s) => s.name === 'bascule_stream_continuations_total' && !s.labels.startsWith('route="stream",target="alt@sim"')));
  assert.ok(!all.some((s) => s.name === 'bascule_limit_decisions_total' && /limit="(client_tpm|client_concurrency|team_|target_rpm|provider_tpm)/.test(s.labels)));
  assert.doesNotMatch(text, /=""/, 'no empty label value');
  assertNoDuplicates(all);
  assert.match(promtoolCheck(text), /^$/, 'promtool reports no problem');
});

test('a reload adds the new config\'s series at zero, once each; a scrape again duplicates nothing', async () => {
  await gw.reload(config(sim.url, {
    target: 'late@sim: { provider: sim, model: seed-late, rpm: 60 }',
    route: 'late: { primary: [late@sim], shadow: { targets: [cand@sim] }, cache: { mode: exact }, envelope: { on_stream_failure: continue } }',
  }));
  await metrics(); // a second scrape touches the same series again
  const text = await metrics();
  const all = samples(text);
  const late = {
    routes: ['late'],
    targets: ['late@sim'],
    shadows: [['late', 'cand@sim']],
    continued: [['late', 'late@sim']],
    cached: ['late'],
    keyed: ['sim'],
    limits: product(['target_rpm'], ['allowed', 'moved_on', 'queued', 'rejected']),
  };
  for (const [name, labels] of [...expected(START), ...expected(late)]) assertZero(all, name, labels);
  assertZero(all, 'bascule_config_reloads_total', 'result="rejected"');
  assert.equal(all.find((s) => s.name === 'bascule_config_reloads_total' && s.labels === 'result="ok"')?.value, 1,
    'the reload was taken');
  assertNoDuplicates(all);
  assert.match(promtoolCheck(text), /^$/, 'promtool reports no problem');
});

test('the seeded zeros take none of the status page\'s bounded names: a reload after them is still an event', async () => {
  // 90 providers with keys seed 540 key-cooldown and re-verification counters at 0, more
  // than the status history follows (512 names); a counter is followed from its first
  // increment, so the reload's counter still finds a name.
  const providers = Array.from({ length: 90 }, (_, i) =>
    `  p${i}: { kind: openai, base_url: "${sim.url}/v1", keys: ["sk-many-${i}"], health: { probe: none } }`).join('\n');
  const yaml = (route) => `listen: "127.0.0.1:{{PORT}}"
workers: 1
log: { level: info, format: json }
providers:
${providers}
targets:
  t@p0: { provider: p0, model: seed-many }
routes:
  ${route}: { primary: [t@p0] }
`;
  const many = await startGateway({ config: yaml('before') });
  try {
    const text = await (await fetch(`${many.url}/metrics`)).text();
    assert.match(text, /^bascule_key_reverifications_total\{provider="p89",result="restored"\} 0$/m);
    assert.equal((await fetch(`${many.url}/status.json`)).status, 200); // the history's baseline
    await many.reload(yaml('after'));
    const json = await (await fetch(`${many.url}/status.json`)).json();
    const reloads = json.events.filter((e) => e.kind === 'reload');
    assert.deepEqual(reloads.map((e) => e.to), ['ok'], 'the reload is in the event feed');
  } finally {
    await many.stop();
  }
});

test('a config past the seed bound: every route\'s and target\'s core series, no update dropped', async () => {
  // 300 routes and 300 targets would seed some 12 000 series in the shared shard, with the
  // 2100 gauges a scrape sets there past its 10 000: the core series of every route and
  // target are made, the rest only while the shard holds fewer than 6000, so no scrape
  // drops an update.
  const n = 300;
  const targets = Array.from({ length: n }, (_, i) => `  t${i}: { provider: sim, model: seed-big-${i} }`).join('\n');
  const routes = Array.from({ length: n }, (_, i) => `  r${i}: { primary: [t${i}] }`).join('\n');
  const big = await startGateway({ config: `listen: "127.0.0.1:{{PORT}}"
workers: 1
log: { level: info, format: json }
providers:
  sim: { kind: openai, base_url: "${sim.url}/v1", keys: ["sk-big"], health: { probe: none } }
targets:
${targets}
routes:
${routes}
` });
  try {
    await (await fetch(`${big.url}/metrics`)).text();
    const all = samples(await (await fetch(`${big.url}/metrics`)).text());
    assertZero(all, 'bascule_metrics_dropped_total', '');
    for (const i of [0, n - 1]) {
      assertZero(all, 'bascule_requests_total', `route="r${i}",outcome="ok"`);
      assertZero(all, 'bascule_request_duration_seconds_count', `route="r${i}"`);
      assertZero(all, 'bascule_attempts_total', `target="t${i}",kind="ok"`);
      assertZero(all, 'bascule_cost_usd_total', `client="(open)",route="r${i}",target="t${i}"`);
    }
    assertNoDuplicates(all);
  } finally {
    await big.stop();
  }
});
