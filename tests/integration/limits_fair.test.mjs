// SPDX-License-Identifier: MIT
// Fair sharing of a shared limit (docs/internals/limits.md, "Fair sharing"): a target at
// rpm 60 with rpm_burst 1 (one a second) and queue_ms 25000. A noisy client's 40 requests
// queue for it; a quiet client's single request then arrives and is served within a few of
// the target's intervals (round-robin across clients), not behind the forty (first come,
// first served would keep it waiting past queue_ms, then answer 429). With a short
// queue_ms the noisy client's requests, over its share, are the ones refused.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startSim, startGateway, waitFor } from '../lib/harness.mjs';

const NOISY = 'limits-fair-noisy-key-0123456789';
const QUIET = 'limits-fair-quiet-key-0123456789';
let sim, gw;

before(async () => {
  sim = await startSim();
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: warn }
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-f"], health: { probe: none } }
targets:
  t: { provider: sim, model: fair-shared, rpm: 60, rpm_burst: 1, queue_ms: 25000 }
  u: { provider: sim, model: fair-short, rpm: 60, rpm_burst: 1, queue_ms: 4000 }
routes:
  shared: { primary: [t], envelope: { deadline_ms: 30000 } }
  short: { primary: [u], envelope: { deadline_ms: 30000 } }
clients:
  noisy: { key: "${NOISY}", routes: ["*"] }
  quiet: { key: "${QUIET}", routes: ["*"] }
`,
  });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

function chat(key, signal, model = 'shared') {
  return fetch(`${gw.base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
    signal,
  });
}

async function queueDepth(target = 't') {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const m = new RegExp(`bascule_queue_depth\\{target="${target}"\\} (\\d+)`).exec(text);
  return m ? Number(m[1]) : 0;
}

test('a noisy client\'s 40 queued requests keep a quiet client\'s one waiting a few intervals, not 40', async () => {
  const abort = new AbortController();
  const noisy = Array.from({ length: 40 }, () => chat(NOISY, abort.signal).catch(() => null));
  try {
    await waitFor(async () => (await queueDepth()) >= 25, { timeoutMs: 10000, what: 'the noisy requests queued' });
    const started = Date.now();
    const res = await chat(QUIET);
    const waited = Date.now() - started;
    assert.equal(res.status, 200, await res.text());
    // One a second: its turn comes after at most one more of the noisy client's (2 s),
    // with slack for a loaded machine; first come, first served would be 25 s or more.
    assert.ok(waited < 5000, `the quiet request waited ${waited} ms`);
  } finally {
    abort.abort();
    await Promise.all(noisy);
  }
  // The cancelled requests left the queue.
  await waitFor(async () => (await queueDepth()) === 0, { timeoutMs: 10000, what: 'the queue empty' });
});

test('queue_ms 4000 at one a second: the noisy client over its share is the one refused', async () => {
  const noisy = Array.from({ length: 10 }, () => chat(NOISY, undefined, 'short').then((r) => r.status));
  await waitFor(async () => (await queueDepth('u')) >= 6, { timeoutMs: 10000, what: 'the noisy requests queued' });
  // Two quiet requests one after the other, each within its own 4 s of queue.
  const quiet = [];
  for (let i = 0; i < 2; i++) quiet.push((await chat(QUIET, undefined, 'short')).status);
  const statuses = await Promise.all(noisy);
  assert.deepEqual(quiet, [200, 200]);
  // Ten noisy requests cannot all pass at one a second within 4 s: the refusals are theirs.
  assert.ok(statuses.filter((s) => s === 429).length >= 3, JSON.stringify(statuses));
});
