// The live status page, rendered by a real browser (Debian's headless Chromium): the
// page fetches /status.json and draws every target's circuit; an open circuit shows.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startSim, startGateway } from '../lib/harness.mjs';

const run = promisify(execFile);
let sim, gw;

before(async () => {
  sim = await startSim();
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 2
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-st"], health: { probe: none } }
targets:
  good@sim: { provider: sim, model: page-good }
  bad@sim: { provider: sim, model: page-bad, breaker: { consecutive_failures: 2, open_ms: 60000 } }
routes:
  page: { primary: [bad@sim], equivalent: [good@sim], envelope: { max_same_target_attempts: 1 } }
`,
  });
});

after(async () => {
  await gw?.stop();
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

test('status.json writes "no measurement yet" as null, and the page shows a dash', async () => {
  const json = await (await fetch(`${gw.url}/status.json`)).json();
  const fresh = json.targets.find((t) => t.id === 'good@sim');
  assert.equal(fresh.ewma_latency_ms, null);
  assert.equal(fresh.ewma_ttft_ms, null);
});

test('the status page shows targets, circuits and routes live', async () => {
  await sim.setModel('page-bad', { script: [{ action: 'status', status: 500, times: 10 }] });
  for (let i = 0; i < 3; i++) await (await fetch(`${gw.base}/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'page', messages: [{ role: 'user', content: 'x' }] }) })).text();
  const json = await (await fetch(`${gw.url}/status.json`)).json();
  assert.equal(json.targets.find((t) => t.id === 'bad@sim').circuit, 'open');
  assert.deepEqual(json.routes[0].equivalent, ['good@sim']);
  const dom = await renderedDom(`${gw.url}/status`);
  assert.match(dom, /<td>bad@sim<\/td>.*?<span class="pill open">open<\/span>/s);
  assert.match(dom, /<td>good@sim<\/td>.*?<span class="pill closed">closed<\/span>/s);
  assert.match(dom, /<td>page<\/td><td>bad@sim<\/td><td>good@sim<\/td>/);
  assert.match(dom, /id="state">live/);
});
