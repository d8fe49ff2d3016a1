// SPDX-License-Identifier: MIT
// harness.mjs -- spawns bascule-sim and bascule for the integration and e2e tests, and
// talks to them: the sim's control API, the gateway's config reloads and logs, raw bytes
// for bad-HTTP tests. Node built-ins only. Every process it starts is tracked and killed
// by PID when the test process ends, however it ends.
//
//   import { startSim, startGateway, freePort, rawRequest, stopAll, bins } from '../lib/harness.mjs';
//   const sim = await startSim();
//   await sim.setModel('gpt-x', { script: [{ action: 'status', status: 429 }] });
//   const gw = await startGateway({ config: `listen: "127.0.0.1:{{PORT}}"\n...${sim.base}...` });
//
// See docs/internals/sim.md for the sim's control API.

import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

const START_TIMEOUT_MS = 10_000;
const STOP_GRACE_MS = 5_000;

/** Resolves a binary from an env var (relative to the cwd, else the repo root) or the default. */
function binary(envName, fallback) {
  const fromEnv = process.env[envName];
  if (fromEnv) {
    const here = path.resolve(process.cwd(), fromEnv);
    return existsSync(here) ? here : path.resolve(REPO_ROOT, fromEnv);
  }
  return path.resolve(REPO_ROOT, fallback);
}

export function simBinary() {
  return binary('BASCULE_SIM_BIN', 'build/bascule-sim');
}

export function gatewayBinary() {
  return binary('BASCULE_BIN', 'build/bascule');
}

/** The binaries under test, resolved when read: bins.bascule, bins.sim. */
export const bins = {
  get bascule() {
    return gatewayBinary();
  },
  get sim() {
    return simBinary();
  },
};

// ---- process tracking ---------------------------------------------------------------------

const live = new Set(); // child processes not yet seen exiting

process.on('exit', () => {
  for (const child of live) {
    try {
      process.kill(child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});

/**
 * Spawns <bin> with <args>, collecting its output; the child is tracked until it exits.
 * <prefix> is a command that execs the binary in its own process (e.g. ['prlimit',
 * '--nofile=1024:1024', '--']), so the PID is still the binary's.
 */
function spawnTracked(bin, args, env, prefix = []) {
  if (!existsSync(bin)) throw new Error(`${bin} does not exist (build it, or set the env var)`);
  if (prefix.length) [bin, args] = [prefix[0], [...prefix.slice(1), bin, ...args]];
  const child = spawn(bin, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const out = { stdout: '', stderr: '', all: '' };
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stdout.on('data', (d) => { out.stdout += d; out.all += d; });
  child.stderr.on('data', (d) => { out.stderr += d; out.all += d; });
  child.exited = new Promise((resolve) => {
    child.on('exit', (code, signal) => {
      live.delete(child);
      resolve({ code, signal });
    });
  });
  child.on('error', () => live.delete(child));
  live.add(child);
  return { child, out };
}

/** SIGTERM, then SIGKILL after <graceMs>; resolves with {code, signal}. */
async function stopChild(child, graceMs = STOP_GRACE_MS) {
  if (child.exitCode !== null || child.signalCode !== null) return child.exited;
  try {
    process.kill(child.pid, 'SIGTERM');
  } catch {
    return child.exited;
  }
  let timer;
  const killed = new Promise((resolve) => {
    timer = setTimeout(() => {
      try {
        process.kill(child.pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
      resolve();
    }, graceMs);
  });
  await Promise.race([child.exited, killed]);
  clearTimeout(timer);
  return child.exited;
}

/** Kills every process this harness started and that is still running. */
export async function stopAll() {
  await Promise.all([...live].map((c) => stopChild(c)));
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Waits until <pred>() is truthy, polling every <everyMs>, at most <timeoutMs>. */
export async function waitFor(pred, { timeoutMs = 5000, everyMs = 20, what = 'condition' } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await pred();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

// ---- ports and raw bytes ------------------------------------------------------------------

/** A TCP port on 127.0.0.1 that was free a moment ago. */
/**
 * Reads a streamed response body to its end. Resolves {text, broken}: <broken> is true when
 * the body ended without its proper end (the connection closed mid-message, as bascule
 * ends a stream broken after its commit point), false when it completed.
 */
export async function readStream(res) {
  const decoder = new TextDecoder();
  const reader = res.body.getReader();
  let text = '';
  for (;;) {
    let step;
    try {
      step = await reader.read();
    } catch {
      return { text: text + decoder.decode(), broken: true };
    }
    if (step.done) return { text: text + decoder.decode(), broken: false };
    text += decoder.decode(step.value, { stream: true });
  }
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Sends <bytes> (string or Buffer) on a fresh connection to 127.0.0.1:<port> and resolves
 * with everything received until the server closes, <until>(text) says enough, or
 * <timeoutMs> passes (then with what arrived so far). The answer is a string (UTF-8
 * decoded), or the raw Buffer with {binary: true}.
 */
export function rawRequest(port, bytes, { timeoutMs = 2000, until = null, host = '127.0.0.1', binary = false } = {}) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let done = false;
    const sock = net.connect({ port, host });
    const received = () => (binary ? Buffer.concat(chunks) : Buffer.concat(chunks).toString('utf8'));
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.destroy();
      resolve(received());
    };
    const timer = setTimeout(finish, timeoutMs);
    sock.on('connect', () => sock.write(bytes));
    sock.on('data', (d) => {
      chunks.push(d);
      if (until && until(received())) finish();
    });
    sock.on('end', finish);
    sock.on('close', finish);
    sock.on('error', (err) => {
      if (chunks.length || err.code === 'ECONNRESET') finish();
      else if (!done) {
        done = true;
        clearTimeout(timer);
        reject(err);
      }
    });
  });
}

// ---- bascule-sim --------------------------------------------------------------------------

/** Reads the first stdout line of <child>: "bascule-sim listening on HOST:PORT". */
function waitListening(child, out, re) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`no listening line within ${START_TIMEOUT_MS} ms; output:\n${out.all}`));
    }, START_TIMEOUT_MS);
    const onData = () => {
      const nl = out.stdout.indexOf('\n');
      if (nl < 0) return;
      const m = re.exec(out.stdout.slice(0, nl));
      cleanup();
      if (m) resolve(Number(m[1]));
      else reject(new Error(`unexpected first line: ${out.stdout.slice(0, nl)}`));
    };
    const onExit = (code, signal) => {
      cleanup();
      reject(new Error(`exited (${code ?? signal}) before listening; output:\n${out.all}`));
    };
    function cleanup() {
      clearTimeout(timer);
      child.stdout.off('data', onData);
      child.off('exit', onExit);
    }
    child.stdout.on('data', onData);
    child.on('exit', onExit);
    onData();
  });
}

async function json(res, what) {
  const text = await res.text();
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error(`${what}: HTTP ${res.status}, not JSON: ${text.slice(0, 200)}`);
  }
  if (!res.ok) throw new Error(`${what}: HTTP ${res.status}: ${body?.error?.message ?? text}`);
  return body;
}

/**
 * Starts bascule-sim on a free port. <args> are extra CLI arguments (e.g.
 * ['--token-delay-ms', '5'] or ['--script', file]). Resolves once it listens.
 */
export async function startSim({ args = [], env = {} } = {}) {
  const { child, out } = spawnTracked(simBinary(), ['--listen', '127.0.0.1:0', '--quiet', ...args], env);
  const port = await waitListening(child, out, /^bascule-sim listening on 127\.0\.0\.1:(\d+)$/);
  const url = `http://127.0.0.1:${port}`;
  const control = (method, p, body) =>
    fetch(url + p, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
  return {
    port,
    url,
    base: `${url}/v1`,
    proc: child,
    logs: () => out.all,
    /** Sets <model>'s spec ({tokens, token_delay_ms, script, repeat}); '*' is the default. */
    setModel: async (model, spec) =>
      json(await control('PUT', `/_sim/models/${encodeURIComponent(model)}`, spec), `setModel ${model}`),
    deleteModel: async (model) =>
      json(await control('DELETE', `/_sim/models/${encodeURIComponent(model)}`), `deleteModel ${model}`),
    /** {total, models: {m: {calls, ok, faults, completed, cancelled, in_flight}}} */
    stats: async () => json(await control('GET', '/_sim/stats'), 'stats'),
    /** The last 32 requests for <model> (all models when omitted), oldest first. */
    requests: async (model) =>
      json(
        await control('GET', `/_sim/requests${model === undefined ? '' : `?model=${encodeURIComponent(model)}`}`),
        'requests',
      ),
    /** {model, arrivals_ms: [...], dropped}: when each call of <model> arrived (monotonic ms). */
    arrivals: async (model) =>
      json(await control('GET', `/_sim/arrivals?model=${encodeURIComponent(model)}`), `arrivals ${model}`),
    reset: async () => json(await control('POST', '/_sim/reset'), 'reset'),
    /** How many requests <model> has had. */
    calls: async (model) => (await json(await control('GET', '/_sim/stats'), 'stats')).models[model]?.calls ?? 0,
    /** The last request <model> saw (it must have seen one). */
    lastRequest: async (model) => {
      const seen = await json(await control('GET', `/_sim/requests?model=${encodeURIComponent(model)}`), 'requests');
      if (!seen.length) throw new Error(`the sim saw no request for ${model}`);
      return seen[seen.length - 1];
    },
    stop: () => stopChild(child),
  };
}

// ---- bascule ------------------------------------------------------------------------------

function listenPort(yaml) {
  const m = /^\s*listen:\s*["']?(?:\[[^\]]*\]|[^:\s"']+):(\d+)/m.exec(yaml);
  return m ? Number(m[1]) : null;
}

async function healthy(url) {
  try {
    const res = await fetch(`${url}/health/live`, { signal: AbortSignal.timeout(1000) });
    await res.arrayBuffer();
    return res.status === 200;
  } catch {
    return false;
  }
}

/**
 * Starts bascule with <config> (YAML text) written to a temp file. "{{PORT}}" in the YAML is
 * replaced by a free port; otherwise the port is read from its `listen:` line. Resolves
 * once GET /health/live answers 200 (within 10 s).
 * <prefix> runs the gateway through a command that execs it (e.g. prlimit).
 */
export async function startGateway({ config, env = {}, args = [], prefix = [] } = {}) {
  const port = config.includes('{{PORT}}') ? await freePort() : listenPort(config);
  if (!port) throw new Error('startGateway: put listen: "127.0.0.1:{{PORT}}" (or a port) in the config');
  const render = (yaml) => yaml.replaceAll('{{PORT}}', String(port));
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bascule-test-'));
  const file = path.join(dir, 'gateway.yaml');
  writeFileSync(file, render(config));
  const { child, out } = spawnTracked(gatewayBinary(), ['--config', file, ...args], env, prefix);
  const url = `http://127.0.0.1:${port}`;
  child.exited.then(() => rmSync(dir, { recursive: true, force: true }));
  try {
    await waitFor(
      async () => {
        if (child.exitCode !== null || child.signalCode !== null) {
          throw new Error(`bascule exited (${child.exitCode ?? child.signalCode}); output:\n${out.all}`);
        }
        return healthy(url);
      },
      { timeoutMs: START_TIMEOUT_MS, everyMs: 50, what: `bascule /health/live on ${url}` },
    );
  } catch (err) {
    await stopChild(child);
    throw err;
  }
  const accessLog = () =>
    out.stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .flatMap((l) => {
        try {
          return [JSON.parse(l)];
        } catch {
          return [];
        }
      });
  return {
    port,
    url,
    base: `${url}/v1`,
    proc: child,
    configFile: file,
    logs: () => out.all,
    accessLog,
    /**
     * Rewrites the config file with <newYaml> ({{PORT}} replaced as at start), sends SIGHUP
     * and waits (10 s at most) for a log line saying the config was "reloaded" or
     * "rejected"; resolves with that line.
     */
    reload: async (newYaml) => {
      const from = out.all.length;
      writeFileSync(file, render(newYaml));
      process.kill(child.pid, 'SIGHUP');
      const line = await waitFor(
        () => out.all.slice(from).split('\n').find((l) => /\breloaded\b|\brejected\b/i.test(l)),
        { timeoutMs: START_TIMEOUT_MS, what: 'a "reloaded" or "rejected" log line' },
      );
      return line;
    },
    /** Resolves with {code, signal} once bascule has exited, however it exits. */
    exited: child.exited,
    /** Sends <sig> (e.g. 'SIGTERM') to bascule, without waiting. */
    signal: (sig) => process.kill(child.pid, sig),
    /**
     * Stops bascule (SIGTERM, then SIGKILL after 5 s) and resolves with its {code, signal};
     * fails when it printed a sanitizer report (ASan, LSan, UBSan).
     */
    stop: async () => {
      const exit = await stopChild(child);
      const report = /ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:/.exec(out.all);
      if (report) throw new Error(`bascule printed a sanitizer report:\n${out.all.slice(report.index, report.index + 4000)}`);
      return exit;
    },
  };
}
