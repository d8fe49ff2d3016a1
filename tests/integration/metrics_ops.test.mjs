// SPDX-License-Identifier: MIT
// /metrics as an operator's Prometheus reads it (docs/internals/metrics.md): before any
// traffic, every family shows the series the config knows (routes, targets, the open
// gateway's cost) at zero; bascule_build_info names the version; the process_* family is
// there; each circuit is one series per state with exactly one at 1, and a forced opening
// moves the 1; per-target attempt duration and TTFT histograms count the attempts; the
// gateway's own time (bascule_overhead_seconds, x-bascule-overhead-ms) leaves out a 1 s
// upstream wait; and no label value is ever empty. The real binary against bascule-sim.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { execSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { startSim, startGateway, REPO_ROOT } from '../lib/harness.mjs';

let sim, gw;

const config = (simUrl) => `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: info, format: json }
providers:
  sim: { kind: openai, base_url: "${simUrl}/v1", keys: ["sk-sim"], health: { probe: none } }
targets:
  fast@sim: { provider: sim, model: ops-fast, price: { input_per_mtok: 1, output_per_mtok: 2 } }
  slow@sim: { provider: sim, model: ops-slow }
  down@sim: { provider: sim, model: ops-down }
routes:
  fast: { primary: [fast@sim] }
  slow: { primary: [slow@sim] }
  down: { primary: [down@sim], envelope: { max_attempts: 1 } }
breaker: { consecutive_failures: 2, open_ms: 60000 }
`;

before(async () => {
  sim = await startSim();
  await sim.setModel('ops-fast', { tokens: 4 });
  await sim.setModel('ops-slow', { tokens: 4, script: [{ action: 'delay', delay_ms: 1000, times: 1000 }] });
  await sim.setModel('ops-down', { script: [{ action: 'status', status: 500, times: 1000 }] });
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

/** The value of the sample <name>{<labels>} (labels in exposition order), or undefined. */
function sample(text, name, labels = '') {
  const esc = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const m = new RegExp(`^${esc(name)}${labels ? esc(`{${labels}}`) : ''} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
}

async function chat(model, extra = {}) {
  const res = await fetch(`${gw.base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], ...extra }),
  });
  await res.arrayBuffer();
  return res;
}

const CLK_TCK = Number(execSync('getconf CLK_TCK').toString().trim()) || 100;

/** utime + stime of <pid> in seconds, as /proc/<pid>/stat has them (getconf CLK_TCK ticks a second). */
function cpuSeconds(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
}

test('before any request: the series the config knows, at zero; build info; process_*', async () => {
  const text = await metrics();
  const version = readFileSync(path.join(REPO_ROOT, 'VERSION'), 'utf8').trim();
  assert.match(text, new RegExp(`^bascule_build_info\\{version="${version.replaceAll('.', '\\.')}",revision="[^"]+"\\} 1$`, 'm'));
  for (const route of ['fast', 'slow', 'down']) {
    assert.equal(sample(text, 'bascule_requests_total', `route="${route}",outcome="ok"`), 0, route);
    assert.equal(sample(text, 'bascule_requests_total', `route="${route}",outcome="error"`), 0, route);
    assert.equal(sample(text, 'bascule_failovers_total', `route="${route}"`), 0, route);
    assert.equal(sample(text, 'bascule_outcomes_total', `route="${route}",layer="transport",result="failed"`), 0, route);
    assert.equal(sample(text, 'bascule_request_duration_seconds_count', `route="${route}"`), 0, route);
    assert.equal(sample(text, 'bascule_overhead_seconds_count', `route="${route}"`), 0, route);
    assert.equal(sample(text, 'bascule_tokens_total', `route="${route}",direction="input"`), 0, route);
  }
  for (const target of ['fast@sim', 'slow@sim', 'down@sim']) {
    assert.equal(sample(text, 'bascule_attempts_total', `target="${target}",kind="ok"`), 0, target);
    assert.equal(sample(text, 'bascule_attempt_duration_seconds_count', `target="${target}"`), 0, target);
    assert.equal(sample(text, 'bascule_attempt_ttft_seconds_count', `target="${target}"`), 0, target);
    assert.equal(sample(text, 'bascule_breaker_state', `target="${target}",state="closed"`), 1, target);
    for (const s of ['open', 'half_open', 'ramping'])
      assert.equal(sample(text, 'bascule_breaker_state', `target="${target}",state="${s}"`), 0, target);
  }
  assert.equal(sample(text, 'bascule_cost_usd_total', 'client="(open)",route="fast",target="fast@sim"'), 0);
  assert.equal(sample(text, 'bascule_config_reloads_total', 'result="rejected"'), 0);
  for (const name of ['process_resident_memory_bytes', 'process_virtual_memory_bytes',
    'process_open_fds', 'process_max_fds', 'process_start_time_seconds']) {
    assert.match(text, new RegExp(`^# TYPE ${name} (counter|gauge)$`, 'm'), name);
    assert.ok(sample(text, name) > 0, `${name} > 0`);
  }
  // CPU time is counted in clock ticks: a process that has just started may not have used
  // one yet (on a busy machine). The figure lies between the kernel's before and after the scrape.
  assert.match(text, /^# TYPE process_cpu_seconds_total counter$/m);
  const cpuBefore = cpuSeconds(gw.proc.pid);
  const cpu = sample(await metrics(), 'process_cpu_seconds_total');
  const cpuAfter = cpuSeconds(gw.proc.pid);
  assert.ok(cpu >= cpuBefore - 0.005 && cpu <= cpuAfter + 0.005, `${cpuBefore} <= ${cpu} <= ${cpuAfter}`);
  const start = sample(text, 'process_start_time_seconds');
  assert.ok(Math.abs(start - Date.now() / 1000) < 600, 'the start time is now-ish, in seconds');
  assert.doesNotMatch(text, /=""/, 'no empty label value');
});

test('attempt histograms per target, overhead without the upstream wait, cost of an open gateway', async () => {
  const t0 = Date.now();
  const slow = await chat('slow');
  const elapsed = Date.now() - t0;
  assert.equal(slow.status, 200);
  assert.ok(elapsed >= 1000, `the upstream held the answer 1 s (took ${elapsed} ms)`);
  const overhead = slow.headers.get('x-bascule-overhead-ms');
  assert.match(overhead ?? '', /^\d+\.\d{3}$/, 'x-bascule-overhead-ms is milliseconds with 3 decimals');
  assert.ok(Number(overhead) < 500, `the 1 s upstream wait is not overhead (said ${overhead} ms)`);

  const fast = await chat('fast', { stream: true, stream_options: { include_usage: true } });
  assert.equal(fast.status, 200);
  assert.match(fast.headers.get('x-bascule-overhead-ms') ?? '', /^\d+\.\d{3}$/, 'a stream head carries it too');

  const text = await metrics();
  assert.equal(sample(text, 'bascule_attempt_duration_seconds_count', 'target="slow@sim"'), 1);
  assert.ok(sample(text, 'bascule_attempt_duration_seconds_sum', 'target="slow@sim"') >= 1, 'the attempt took 1 s');
  assert.equal(sample(text, 'bascule_attempt_duration_seconds_bucket', 'target="slow@sim",le="0.5"'), 0);
  assert.equal(sample(text, 'bascule_attempt_ttft_seconds_count', 'target="fast@sim"'), 1, 'the stream attempt has a TTFT');
  assert.equal(sample(text, 'bascule_attempt_ttft_seconds_count', 'target="slow@sim"'), 0, 'a non-stream one has none');
  assert.equal(sample(text, 'bascule_overhead_seconds_count', 'route="slow"'), 1);
  assert.ok(sample(text, 'bascule_overhead_seconds_sum', 'route="slow"') < 0.5, 'the histogram leaves the wait out too');
  assert.ok(sample(text, 'bascule_cost_usd_total', 'client="(open)",route="fast",target="fast@sim"') > 0,
    'an open gateway\'s cost is client="(open)"');
  assert.doesNotMatch(text, /=""/, 'no empty label value');
});

test('a circuit that opens moves its 1 to state="open"', async () => {
  for (let i = 0; i < 2; i++) assert.ok((await chat('down')).status >= 500);
  const text = await metrics();
  assert.equal(sample(text, 'bascule_breaker_state', 'target="down@sim",state="open"'), 1);
  assert.equal(sample(text, 'bascule_breaker_state', 'target="down@sim",state="closed"'), 0);
  assert.equal(sample(text, 'bascule_breaker_state', 'target="fast@sim",state="closed"'), 1);
  assert.ok(sample(text, 'bascule_attempt_duration_seconds_count', 'target="down@sim"') >= 2, 'failed attempts are timed too');
});
