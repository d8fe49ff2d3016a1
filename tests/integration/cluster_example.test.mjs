// SPDX-License-Identifier: MIT
// cluster_example.test.mjs -- `make run-cluster` (scripts/run-cluster, examples/cluster/) works
// as the README says: on free loopback ports it starts Redis, the sim, two gateways and nginx,
// shows a circuit opened through instance A open on instance B, answers through nginx from
// both instances, and stops everything it started, after its one-shot run and on Ctrl-C.
// nginx and redis-server are required (scripts/install-deps installs them): without them the
// test fails saying so, it does not skip.
import { test } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { REPO_ROOT, bins, freePort, waitFor } from '../lib/harness.mjs';

const SCRIPT = path.join(REPO_ROOT, 'scripts/run-cluster');
const RUN_BOUND_MS = 90_000; // start five processes and demonstrate, on a loaded machine

/** The path of <name> on PATH or in /usr/sbin, or null. */
function which(name) {
  const dirs = [...(process.env.PATH || '').split(':'), '/usr/sbin'];
  for (const d of dirs) if (d && existsSync(path.join(d, name))) return path.join(d, name);
  return null;
}

function requireTools() {
  for (const [tool, pkg] of [['nginx', 'nginx-light'], ['redis-server', 'redis-server'], ['redis-cli', 'redis-tools']]) {
    assert.ok(which(tool), `${tool} is not installed: this test needs it (scripts/install-deps, apt-get install ${pkg})`);
  }
}

async function ports() {
  const names = ['NGINX_PORT', 'GATEWAY_A_PORT', 'GATEWAY_B_PORT', 'SIM_PORT', 'REDIS_PORT'];
  const env = {};
  for (const n of names) {
    let p;
    do p = String(await freePort()); while (Object.values(env).includes(p));
    env[n] = p;
  }
  return env;
}

/**
 * Starts the script; .out collects stdout and stderr, .exited resolves {code, signal}. Still
 * running after RUN_BOUND_MS it gets SIGTERM, on which it stops its own children by PID.
 */
function startScript(env) {
  const child = spawn(SCRIPT, [], {
    env: { ...process.env, BASCULE_BIN: bins.bascule, BASCULE_SIM_BIN: bins.sim, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const run = { child, out: '' };
  child.stdout.on('data', (d) => { run.out += d; });
  child.stderr.on('data', (d) => { run.out += d; });
  const timer = setTimeout(() => child.kill('SIGTERM'), RUN_BOUND_MS);
  run.exited = new Promise((resolve) => child.on('close', (code, signal) => {
    clearTimeout(timer);
    resolve({ code, signal });
  }));
  return run;
}

/** True when nothing listens on 127.0.0.1:<port> any more. */
function refused(port) {
  return new Promise((resolve) => {
    const s = net.connect(Number(port), '127.0.0.1');
    s.on('connect', () => { s.destroy(); resolve(false); });
    s.on('error', () => resolve(true));
  });
}

async function assertAllStopped(env, out) {
  for (const [name, port] of Object.entries(env)) {
    await waitFor(() => refused(port), { timeoutMs: 10_000, what: `${name} ${port} closed\n${out}` });
  }
}

test('the one-shot run shows the circuit open on both instances and nginx answering', async (t) => {
  requireTools();
  const env = await ports();
  const run = startScript({ ...env, CLUSTER_DEMO_ONCE: '1' });
  const { code } = await run.exited;
  for (const line of run.out.trim().split('\n')) t.diagnostic(line);
  assert.equal(code, 0, run.out);
  assert.doesNotMatch(run.out, /curl: \(/, 'no tool of the demo complained');
  assert.match(run.out, /circuit down-4o@sim-east on gateway A: open/);
  assert.match(run.out, /circuit down-4o@sim-east on gateway B: open/);
  const calls = /3 requests to gateway B: HTTP 200 .*calls to down-4o: (\d+)/.exec(run.out);
  assert.ok(calls, 'requests to gateway B reported');
  assert.equal(Number(calls[1]), 0, 'gateway B, having seen the circuit open, did not call the target');
  for (const port of [env.GATEWAY_A_PORT, env.GATEWAY_B_PORT]) {
    assert.match(run.out, new RegExp(`through nginx: HTTP 200 from gateway 127\\.0\\.0\\.1:${port}, answered by steady-4o@sim-west`),
      `nginx reached the instance on ${port}`);
  }
  await assertAllStopped(env, run.out);
});

test('left running, it serves through nginx until Ctrl-C, then stops all it started', async () => {
  requireTools();
  const env = await ports();
  const run = startScript(env);
  try {
    await waitFor(() => run.out.includes('Ctrl-C stops everything') || run.child.exitCode !== null,
      { timeoutMs: RUN_BOUND_MS, everyMs: 100, what: 'the cluster up' });
    assert.equal(run.child.exitCode, null, run.out);
    const res = await fetch(`http://127.0.0.1:${env.NGINX_PORT}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'demo', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const text = await res.text();
    assert.equal(res.status, 200);
    assert.match(text, /data: \[DONE\]/);
    const metrics = await fetch(`http://127.0.0.1:${env.NGINX_PORT}/metrics`);
    await metrics.arrayBuffer();
    assert.equal(metrics.status, 404, 'operator surfaces are not exposed through the balancer');
  } finally {
    run.child.kill('SIGINT');
  }
  const { code } = await run.exited;
  assert.equal(code, 130, run.out);
  await assertAllStopped(env, run.out);
});
