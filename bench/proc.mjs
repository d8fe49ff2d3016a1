// SPDX-License-Identifier: MIT
// proc.mjs -- the processes a benchmark run starts: spawn, wait for readiness, measure
// (CPU time and peak RSS from /proc), and stop. Every PID started is written to a ledger
// file ("+PID STARTTIME NAME" when started, "-PID" when reaped) so that bench/run's EXIT
// trap can end exactly those processes even if this Node process dies hard. Nothing
// here ever signals a process it did not start.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import http from 'node:http';

const CLK_TCK = 100; // getconf CLK_TCK on Linux (USER_HZ is fixed at 100 for /proc)

/** Fields of /proc/PID/stat after the command name, or null when the process is gone. */
function statFields(pid) {
  let s;
  try {
    s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // comm may contain spaces and parentheses: cut after the last ')'.
  return s.slice(s.lastIndexOf(')') + 2).split(' ');
}

/** The kernel's start time of PID (clock ticks since boot), or null. Guards PID reuse. */
export function startTime(pid) {
  const f = statFields(pid);
  return f ? f[19] : null; // field 22 of stat
}

/** utime + stime of PID (all its threads) in seconds; 0 when it is gone. */
export function cpuSeconds(pid) {
  const f = statFields(pid);
  return f ? (Number(f[11]) + Number(f[12])) / CLK_TCK : 0; // fields 14 and 15
}

/** Direct children of PID (nginx's workers), found by scanning /proc for the parent id. */
export function childrenOf(pid) {
  const out = [];
  for (const ent of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(ent)) continue;
    const f = statFields(ent);
    if (f && Number(f[1]) === pid) out.push(Number(ent));
  }
  return out;
}

/** One "Vm..." line of /proc/PID/status in KiB; 0 when absent. */
export function statusKiB(pid, key) {
  let s;
  try {
    s = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return 0;
  }
  const m = s.match(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm'));
  return m ? Number(m[1]) : 0;
}

/** Open descriptors of PID (needs the same user or root); -1 when unreadable. */
export function fdCount(pid) {
  try {
    return fs.readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return -1;
  }
}

/** A free TCP port on 127.0.0.1 (bound to :0, then released). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * The processes of one run. `ledger` is the file bench/run reads in its EXIT trap.
 */
export class ProcSet {
  constructor(ledger) {
    this.ledger = ledger;
    this.procs = new Map(); // pid -> { name, child, exited, code, signal }
  }

  note(line) {
    if (this.ledger) fs.appendFileSync(this.ledger, line + '\n');
  }

  /** Records PIDs started by a child of ours (nginx workers) so the trap covers them. */
  adopt(pids, name) {
    for (const pid of pids) this.note(`+${pid} ${startTime(pid)} ${name}`);
  }

  /**
   * Starts `cmd args` with stdout/stderr to the given file paths (or 'ignore'/'pipe').
   * Returns { pid, child, name, exited: Promise<{code, signal}> }.
   */
  start(name, cmd, args, { stdout = 'ignore', stderr = 'ignore', env, cwd } = {}) {
    const out = typeof stdout === 'string' && stdout.startsWith('/') ? fs.openSync(stdout, 'a') : stdout;
    const err = typeof stderr === 'string' && stderr.startsWith('/') ? fs.openSync(stderr, 'a') : stderr;
    const child = spawn(cmd, args, { stdio: ['ignore', out, err], env: env ?? process.env, cwd });
    if (typeof out === 'number') fs.closeSync(out);
    if (typeof err === 'number') fs.closeSync(err);
    const rec = { name, child, pid: child.pid, state: 'running', code: null, signal: null };
    rec.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        rec.state = 'exited';
        rec.code = code;
        rec.signal = signal;
        this.note(`-${rec.pid}`);
        resolve({ code, signal });
      });
      child.once('error', (e) => {
        rec.state = 'exited';
        rec.error = e;
        resolve({ code: -1, signal: null, error: e });
      });
    });
    if (child.pid) {
      this.note(`+${child.pid} ${startTime(child.pid)} ${name}`);
      this.procs.set(child.pid, rec);
    }
    return rec;
  }

  /** SIGTERM, then SIGKILL after `graceMs`; resolves with how it ended. */
  async stop(rec, graceMs = 3000) {
    if (!rec || rec.state !== 'running') return rec ? { code: rec.code, signal: rec.signal } : null;
    try {
      process.kill(rec.pid, 'SIGTERM');
    } catch {
      /* already gone */
    }
    const t = setTimeout(() => {
      if (rec.state === 'running') {
        rec.killed = true;
        try {
          process.kill(rec.pid, 'SIGKILL');
        } catch {
          /* gone */
        }
      }
    }, graceMs);
    const r = await rec.exited;
    clearTimeout(t);
    return r;
  }

  /** Synchronous last resort for process.on('exit'): SIGKILL whatever is still running. */
  killAllSync() {
    for (const rec of this.procs.values()) {
      if (rec.state === 'running') {
        try {
          process.kill(rec.pid, 'SIGKILL');
        } catch {
          /* gone */
        }
      }
    }
  }
}

/**
 * Measures a set of PIDs (a process and, for nginx, its workers): CPU seconds and the sum
 * of their VmHWM. Workers share pages with their master, so the sum overstates a little.
 */
export function snapshot(pids) {
  let cpu = 0;
  let hwm = 0;
  let rss = 0;
  for (const pid of pids) {
    cpu += cpuSeconds(pid);
    hwm += statusKiB(pid, 'VmHWM');
    rss += statusKiB(pid, 'VmRSS');
  }
  return { cpu, hwmKiB: hwm, rssKiB: rss };
}

/** One HTTP request; resolves { status, headers, body } or rejects. Loopback only. */
export function httpRequest(url, { method = 'GET', headers = {}, body, timeoutMs = 5000 } = {}) {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    if (u.hostname !== '127.0.0.1' && u.hostname !== 'localhost') {
      reject(new Error(`refusing non-loopback URL ${url}`));
      return;
    }
    const req = http.request(
      { host: u.hostname, port: u.port, path: u.pathname + u.search, method, headers, agent: false },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`timeout after ${timeoutMs} ms: ${method} ${url}`)));
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

/**
 * Polls `probe()` (an async function returning true when ready) every 100 ms until it
 * succeeds, `rec` exits, or `timeoutMs` passes. Resolves null when ready, else a reason.
 */
export async function waitReady(rec, probe, timeoutMs) {
  const until = Date.now() + timeoutMs;
  let last = 'not ready';
  while (Date.now() < until) {
    if (rec && rec.state !== 'running') return `exited (code ${rec.code}, signal ${rec.signal})`;
    try {
      if (await probe()) return null;
    } catch (e) {
      last = e.message;
    }
    await sleep(100);
  }
  return `not ready after ${timeoutMs} ms: ${last}`;
}
