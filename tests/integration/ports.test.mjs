// Ports: bascule and bascule-sim use SO_REUSEPORT among their own workers only. A second
// process started on an address already in use exits non-zero with an error naming the
// address, instead of joining the first one's group and taking half its connections; and
// `make run` (scripts/demo) fails fast, without saying the demo is up, when its port is
// taken by a listener that never answers.
import { test, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT, bins, freePort, startGateway, startSim, stopAll } from '../lib/harness.mjs';

after(stopAll);

const EXIT_BOUND_MS = 30_000; // a bound on a process that should exit at once, not a guess

const CONFIG = `
listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: info, format: json }
providers:
  p: { kind: openai_compatible, base_url: "http://127.0.0.1:9/v1", keys: ["k"] }
targets:
  t@p: { provider: p, model: m }
routes:
  r: { primary: [t@p] }
`;

/**
 * Runs <bin> <args> to its exit; resolves {code, signal, out, ms}. A process still running
 * after EXIT_BOUND_MS gets SIGTERM (scripts/demo then stops its own children by PID) and is
 * reported with code null.
 */
function runToExit(bin, args, env = {}) {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const child = spawn(bin, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { out += d; });
    const timer = setTimeout(() => child.kill('SIGTERM'), EXIT_BOUND_MS);
    child.on('error', (err) => { clearTimeout(timer); reject(err); });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, out, ms: Date.now() - t0 });
    });
  });
}

/** A listener on 127.0.0.1:<port> (0: any) that accepts and never answers. */
function silentListener(port = 0) {
  return new Promise((resolve, reject) => {
    const socks = new Set();
    const srv = net.createServer((s) => { socks.add(s); s.on('close', () => socks.delete(s)); });
    srv.on('error', reject);
    srv.listen(port, '127.0.0.1', () => resolve({
      port: srv.address().port,
      close: () => new Promise((r) => { socks.forEach((s) => s.destroy()); srv.close(r); }),
    }));
  });
}

async function live(url) {
  const res = await fetch(`${url}/health/live`, { signal: AbortSignal.timeout(5000) });
  await res.arrayBuffer();
  return res.status;
}

test('a second gateway on the same address exits non-zero, naming it; the first keeps serving', async () => {
  const gw = await startGateway({ config: CONFIG });
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bascule-ports-'));
  try {
    const file = path.join(dir, 'second.yaml');
    writeFileSync(file, CONFIG.replaceAll('{{PORT}}', String(gw.port)));
    const second = await runToExit(bins.bascule, ['--config', file]);
    assert.notEqual(second.code, 0, `second gateway: code ${second.code} signal ${second.signal}\n${second.out}`);
    assert.notEqual(second.code, null, `second gateway still running after ${EXIT_BOUND_MS} ms`);
    assert.match(second.out, new RegExp(`127\\.0\\.0\\.1:${gw.port}\\b.*in use by another process`));
    startUndone(second);
    // Every connection still reaches the first gateway: nothing joined its group.
    for (let i = 0; i < 20; i++) assert.equal(await live(gw.url), 200);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  await gw.stop();
});

test('a gateway on an address a plain listener holds exits non-zero, naming it', async () => {
  const held = await silentListener();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bascule-ports-'));
  try {
    const file = path.join(dir, 'gw.yaml');
    writeFileSync(file, CONFIG.replaceAll('{{PORT}}', String(held.port)));
    const gw = await runToExit(bins.bascule, ['--config', file]);
    assert.ok(gw.code !== 0 && gw.code !== null, `code ${gw.code} signal ${gw.signal}\n${gw.out}`);
    assert.match(gw.out, new RegExp(`127\\.0\\.0\\.1:${held.port}\\b`));
    startUndone(gw);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await held.close();
  }
});

// A start that fails exits 1 having undone what it made (under the sanitizers' build a
// leak would be reported and change the exit code).
function startUndone(run) {
  assert.equal(run.code, 1, run.out);
  assert.doesNotMatch(run.out, /Sanitizer/, run.out);
}

test('a gateway whose admin.listen address is held exits 1, naming it, having undone its start', async () => {
  const held = await silentListener();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bascule-ports-'));
  try {
    const file = path.join(dir, 'gw.yaml');
    writeFileSync(file, CONFIG.replaceAll('{{PORT}}', String(await freePort())) +
      `admin: { listen: "127.0.0.1:${held.port}" }\n`);
    const gw = await runToExit(bins.bascule, ['--config', file]);
    assert.match(gw.out, new RegExp(`127\\.0\\.0\\.1:${held.port} \\(admin\\.listen\\)`));
    startUndone(gw);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await held.close();
  }
});

test('a gateway whose store cannot be opened exits 1, naming it, having undone its start', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bascule-ports-'));
  try {
    const file = path.join(dir, 'gw.yaml');
    writeFileSync(file, CONFIG.replaceAll('{{PORT}}', String(await freePort())) +
      `store: { kind: sqlite, path: "${dir}/missing/dir/state.db" }\n`);
    const gw = await runToExit(bins.bascule, ['--config', file]);
    assert.match(gw.out, /cannot open the store/);
    startUndone(gw);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a second bascule-sim on the same address exits non-zero, naming it', async () => {
  const sim = await startSim();
  const second = await runToExit(bins.sim, ['--listen', `127.0.0.1:${sim.port}`, '--quiet']);
  assert.ok(second.code !== 0 && second.code !== null, `code ${second.code} signal ${second.signal}\n${second.out}`);
  assert.match(second.out, new RegExp(`127\\.0\\.0\\.1:${sim.port}\\b.*in use by another process`));
  assert.doesNotMatch(second.out, /listening on/);
  assert.equal(typeof (await sim.stats()).total, 'number'); // the first one still serves
  await sim.stop();
});

test('make run (scripts/demo) with its port held by a silent listener fails fast and never says it is up', async () => {
  const held = await silentListener();
  try {
    const demo = await runToExit(path.join(REPO_ROOT, 'scripts', 'demo'), [], {
      BASCULE_PORT: String(held.port),
      SIM_PORT: String(await freePort()),
      BASCULE_BIN: bins.bascule,
      BASCULE_SIM_BIN: bins.sim,
    });
    assert.notEqual(demo.code, null, `scripts/demo still running after ${EXIT_BOUND_MS} ms:\n${demo.out}`);
    assert.notEqual(demo.code, 0, demo.out);
    assert.doesNotMatch(demo.out, /is up/);
    // The demo's own check of the port, before it starts anything (scripts/demo).
    assert.match(demo.out, new RegExp(`demo: 127\\.0\\.0\\.1:${held.port} is already in use`));
  } finally {
    await held.close();
  }
});
