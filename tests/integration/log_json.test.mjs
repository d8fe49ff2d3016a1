// SPDX-License-Identifier: MIT
// With log.format: json every line bascule writes is JSON -- the config's diagnostics at
// start and on a reload included (before, they were plain "file:line:col: warning: ..."
// text among the JSON lines, which a log shipper parsing JSON drops or mangles). Each
// diagnostic keeps its place and its words in "msg", with "level" warn or err.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startSim, startGateway, waitFor } from '../lib/harness.mjs';

let sim, gw;

// A provider without a key draws a warning (the config still loads).
const config = (simUrl, extra = '') => `listen: "127.0.0.1:{{PORT}}"
workers: 1
log: { level: info, format: json }
providers:
  sim: { kind: openai, base_url: "${simUrl}/v1", keys: ["sk-sim"], health: { probe: none } }
  spare: { kind: openai, base_url: "${simUrl}/v1", keys: [], health: { probe: none } }
targets:
  t@sim: { provider: sim, model: m }
routes:
  chat: { primary: [t@sim] }
${extra}`;

before(async () => {
  sim = await startSim();
  gw = await startGateway({ config: config(sim.url) });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

/** Every non-empty output line, parsed; fails on the first that is not a JSON object. */
function jsonLines(text) {
  return text.split('\n').filter((l) => l.trim() !== '').map((l) => {
    let v;
    assert.doesNotThrow(() => { v = JSON.parse(l); }, `not a JSON line: ${l}`);
    assert.equal(typeof v, 'object', l);
    return v;
  });
}

test('start: the config warning is a JSON line, and so is every other line', () => {
  const lines = jsonLines(gw.logs());
  const warn = lines.find((l) => /spare/.test(l.msg ?? '') && /warning/.test(l.msg));
  assert.ok(warn, `a warning about provider spare among:\n${gw.logs()}`);
  assert.equal(warn.level, 'warn');
  assert.match(warn.msg, /gateway\.yaml:\d+:\d+: warning: provider 'spare'/);
});

test('a rejected reload: its errors are JSON lines at level err', async () => {
  const from = gw.logs().length;
  await gw.reload(config(sim.url, 'bogus_key: 1\n'));
  await waitFor(() => /bogus_key/.test(gw.logs().slice(from)), { what: 'the reload error' });
  const lines = jsonLines(gw.logs());
  const err = lines.find((l) => /bogus_key/.test(l.msg ?? ''));
  assert.equal(err.level, 'err');
  assert.match(err.msg, /gateway\.yaml:\d+:\d+: error: .*bogus_key/);
  assert.ok(lines.some((l) => /rejected/.test(l.msg ?? '')), 'the rejection itself is logged');
  const res = await fetch(`${gw.base}/models`);
  assert.equal(res.status, 200, 'the old config keeps serving');
});
