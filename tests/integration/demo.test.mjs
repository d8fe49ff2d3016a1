// SPDX-License-Identifier: MIT
// `make run` (scripts/demo) as a newcomer meets it: on a port another HTTP server already
// answers on (an earlier demo, say), it stops at once with a message naming the port and a
// non-zero status, and never says the demo is up (before, the readiness check took the other
// server's 200 for the gateway's); on free ports it comes up and serves what the README
// advertises, chat and embeddings (route "embed").
import { test, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { REPO_ROOT, bins, freePort, waitFor } from '../lib/harness.mjs';

const BOUND_MS = 30_000; // a bound on what should happen at once, not a guess
const children = new Set();
after(() => { for (const c of children) c.kill('SIGTERM'); });

/** Starts scripts/demo; its output accumulates in .out, .done resolves with its exit code. */
function startDemo(env) {
  const child = spawn(path.join(REPO_ROOT, 'scripts', 'demo'), [], {
    env: { ...process.env, BASCULE_BIN: bins.bascule, BASCULE_SIM_BIN: bins.sim, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  const demo = { child, out: '' };
  child.stdout.on('data', (d) => { demo.out += d; });
  child.stderr.on('data', (d) => { demo.out += d; });
  demo.done = new Promise((resolve) => child.on('close', (code) => { children.delete(child); resolve(code); }));
  return demo;
}

test('a port where another server answers 200: the demo stops with a clear message, never "up"', async () => {
  const other = http.createServer((req, res) => res.end('{"status":"ok"}'));
  await new Promise((r) => other.listen(0, '127.0.0.1', r));
  const port = other.address().port;
  try {
    const demo = startDemo({ BASCULE_PORT: String(port), SIM_PORT: String(await freePort()) });
    const timer = setTimeout(() => demo.child.kill('SIGTERM'), BOUND_MS);
    const code = await demo.done;
    clearTimeout(timer);
    assert.notEqual(code, null, `scripts/demo still running after ${BOUND_MS} ms:\n${demo.out}`);
    assert.notEqual(code, 0, demo.out);
    assert.doesNotMatch(demo.out, /is up/);
    assert.match(demo.out, new RegExp(`127\\.0\\.0\\.1:${port} is already in use`));
  } finally {
    await new Promise((r) => other.close(r));
  }
});

test('on free ports the demo comes up and serves chat and embeddings', async () => {
  const port = await freePort();
  const demo = startDemo({ BASCULE_PORT: String(port), SIM_PORT: String(await freePort()) });
  try {
    await waitFor(() => /bascule demo is up/.test(demo.out) || demo.child.exitCode !== null,
      { timeoutMs: BOUND_MS, what: 'the demo to say it is up' });
    assert.match(demo.out, /bascule demo is up/, demo.out);
    assert.match(demo.out, /\/v1\/embeddings/, 'the banner shows how to call embeddings');
    const emb = await fetch(`http://127.0.0.1:${port}/v1/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'embed', input: ['Hello', 'world'] }),
    });
    assert.equal(emb.status, 200);
    const body = await emb.json();
    assert.equal(body.object, 'list');
    assert.equal(body.data.length, 2);
    assert.ok(Array.isArray(body.data[0].embedding) && body.data[0].embedding.length > 0);
    const chat = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'steady', messages: [{ role: 'user', content: 'Hello' }] }),
    });
    assert.equal(chat.status, 200);
    await chat.arrayBuffer();
  } finally {
    demo.child.kill('SIGTERM');
    await demo.done;
  }
});
