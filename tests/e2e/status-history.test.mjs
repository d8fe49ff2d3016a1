// SPDX-License-Identifier: MIT
// The status page shows time and events (docs/api.md "Metrics and status"), rendered by
// Debian's headless Chromium: after a forced circuit opening, /status.json's events hold the
// transition (closed -> open, with the failure) and its series get points with the
// traffic (requests/s and p95 per route and target), and the page draws both: the event in
// its feed and chart lines with points. With clients configured, a browser opening /status
// gets the page, which asks for the admin key instead of showing a 401 body; an admin
// action (a client's spend reset) is an event too.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startSim, startGateway, waitFor } from '../lib/harness.mjs';

const run = promisify(execFile);
const ADMIN = 'history-admin-key-0123456789';
let sim, gw, locked;

before(async () => {
  sim = await startSim();
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 2
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-h"], health: { probe: none } }
targets:
  good@sim: { provider: sim, model: hist-good }
  bad@sim: { provider: sim, model: hist-bad, breaker: { consecutive_failures: 2, open_ms: 60000 } }
routes:
  hist: { primary: [bad@sim], equivalent: [good@sim], envelope: { max_same_target_attempts: 1 } }
`,
  });
  locked = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 1
admin: { key: "${ADMIN}" }
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-h"], health: { probe: none } }
targets:
  t@sim: { provider: sim, model: hist-good }
routes:
  r: { primary: [t@sim] }
clients:
  app: { key: "history-client-key-0123456789", routes: ["*"] }
`,
  });
});

after(async () => {
  await gw?.stop();
  await locked?.stop();
  await sim?.stop();
});

async function renderedDom(url) {
  const profile = mkdtempSync(join(tmpdir(), 'bascule-chromium-'));
  try {
    const { stdout } = await run('chromium', [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      `--user-data-dir=${profile}`, '--virtual-time-budget=4000', '--dump-dom', url,
    ], { timeout: 60000, maxBuffer: 8 << 20 });
    return stdout;
  } finally {
    rmSync(profile, { recursive: true, force: true });
  }
}

const statusJson = async () => (await fetch(`${gw.url}/status.json`)).json();

test('a forced circuit opening is an event, the traffic makes series points, the page draws both', async () => {
  await sim.setModel('hist-bad', { script: [{ action: 'status', status: 500, times: 1000 }] });
  for (let i = 0; i < 6; i++) {
    const res = await fetch(`${gw.base}/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'hist', messages: [{ role: 'user', content: 'x' }] }) });
    assert.equal(res.status, 200, 'served by the equivalent target');
    await res.arrayBuffer();
  }
  let json = await statusJson();
  const opened = json.events.find((e) => e.kind === 'circuit' && e.subject === 'bad@sim');
  assert.ok(opened, `a circuit event for bad@sim in ${JSON.stringify(json.events)}`);
  assert.equal(opened.from, 'closed');
  assert.equal(opened.to, 'open');
  assert.ok(Math.abs(opened.t - Date.now()) < 60_000, 'the event has a wall-clock time');
  assert.equal(json.series.interval_s, 10);
  // The sampler adds a point every 10 s: wait for the one that holds this traffic.
  json = await waitFor(async () => {
    const s = await statusJson();
    return s.series.points.some((p) => p.routes.hist?.rps > 0) ? s : null;
  }, { timeoutMs: 30_000, everyMs: 500, what: 'a series point with the route\'s traffic' });
  const point = json.series.points.find((p) => p.routes.hist?.rps > 0);
  assert.ok(point.routes.hist.p95_ms > 0, 'a p95 latency');
  assert.ok(point.routes.hist.failovers >= 1, 'the failovers of the interval');
  assert.ok(point.targets['bad@sim'].errors_ps > 0, 'the failing target\'s errors/s');
  assert.ok(point.targets['good@sim'].rps > 0);

  const dom = await renderedDom(`${gw.url}/status`);
  assert.match(dom, /<li><time>[^<]+<\/time> <span class="k">circuit<\/span> bad@sim closed → open/);
  const line = /<polyline [^>]*data-series="hist"[^>]*points="([^"]+)"/.exec(dom);
  assert.ok(line, 'the requests/s chart has a line for the route');
  assert.ok(line[1].trim().split(/\s+/).length >= 1, 'with points');
  assert.match(dom, /id="state">live/);
});

test('clients configured: a browser gets the page, and the page asks for the admin key', async () => {
  const api = await fetch(`${locked.url}/status.json`);
  assert.equal(api.status, 401, 'the data still needs the key');
  await api.arrayBuffer();
  const plain = await fetch(`${locked.url}/status`);
  assert.equal(plain.status, 401, 'a non-browser caller without a key: 401 as before');
  await plain.arrayBuffer();
  const dom = await renderedDom(`${locked.url}/status`);
  assert.match(dom, /<form id="login">/, 'the key prompt is shown (not hidden)');
  assert.match(dom, /type="password"/);
  assert.match(dom, /id="state">admin key needed/);
  const reset = await fetch(`${locked.url}/admin/clients/app/reset-spend`, {
    method: 'POST', headers: { authorization: `Bearer ${ADMIN}` } });
  assert.equal(reset.status, 200);
  await reset.arrayBuffer();
  const keyed = await fetch(`${locked.url}/status.json`, { headers: { authorization: `Bearer ${ADMIN}` } });
  assert.equal(keyed.status, 200);
  const ev = (await keyed.json()).events.find((e) => e.kind === 'admin' && e.subject === 'app');
  assert.equal(ev?.to, 'spend reset', 'an admin action is an event');
});
