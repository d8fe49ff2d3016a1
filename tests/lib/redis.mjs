// SPDX-License-Identifier: MIT
// A private redis-server for integration tests: loopback, a free port, no RDB snapshots, an
// append-only file fsynced on every write in its own temp dir, so that kill -9 and a
// restart on the same dir is a real durability test (startRedis({ appendonly: 'no' }) runs
// one without the file, { save: '3600 1' } one with snapshots). Killed by PID; never by name.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort, waitFor } from './harness.mjs';

function launch(port, dir, { appendonly = 'yes', save = '' } = {}) {
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', save, '--appendonly',
    appendonly, '--appendfsync', 'always', '--dir', dir, '--daemonize', 'no', '--protected-mode', 'yes'];
  const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const out = { all: '' };
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stdout.on('data', (d) => { out.all += d; });
  child.stderr.on('data', (d) => { out.all += d; });
  child.exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  return { child, out };
}

/** One RESP command; resolves with the reply (string, number, null, array) or rejects. */
export function redisCommand(port, args, { timeoutMs = 2000 } = {}) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    let buf = Buffer.alloc(0);
    const timer = setTimeout(() => { sock.destroy(); reject(new Error('redis command timed out')); }, timeoutMs);
    const done = (fn, v) => { clearTimeout(timer); sock.destroy(); fn(v); };
    sock.on('error', (e) => done(reject, e));
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      const r = parse(buf, 0);
      if (r) done(r.value instanceof Error ? reject : resolve, r.value);
    });
    let req = `*${args.length}\r\n`;
    for (const a of args) req += `$${Buffer.byteLength(String(a))}\r\n${a}\r\n`;
    sock.write(req);
  });
}

function parse(buf, at) {
  const nl = buf.indexOf('\r\n', at);
  if (nl < 0) return null;
  const line = buf.toString('utf8', at + 1, nl);
  const type = String.fromCharCode(buf[at]);
  if (type === '+') return { value: line, next: nl + 2 };
  if (type === '-') return { value: new Error(line), next: nl + 2 };
  if (type === ':') return { value: Number(line), next: nl + 2 };
  if (type === '$') {
    const n = Number(line);
    if (n < 0) return { value: null, next: nl + 2 };
    if (buf.length < nl + 2 + n + 2) return null;
    return { value: buf.toString('utf8', nl + 2, nl + 2 + n), next: nl + 2 + n + 2 };
  }
  const n = Number(line);
  if (n < 0) return { value: null, next: nl + 2 };
  const items = [];
  let next = nl + 2;
  for (let i = 0; i < n; i++) {
    const r = parse(buf, next);
    if (!r) return null;
    items.push(r.value);
    next = r.next;
  }
  return { value: items, next };
}

async function pingable(port) {
  try {
    return (await redisCommand(port, ['PING'], { timeoutMs: 500 })) === 'PONG';
  } catch {
    return false;
  }
}

/**
 * Starts redis-server (<opts>: appendonly 'yes'|'no', save rules, default '' = none);
 * resolves once it answers PING. The returned object can kill -9 it,
 * restart it on the same port and dir (reading its AOF back), pause (SIGSTOP) and resume
 * it, and stop it for good (which also removes the dir).
 */
export async function startRedis(opts = {}) {
  const port = await freePort();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bascule-redis-'));
  let cur = null;
  const up = async () => {
    cur = launch(port, dir, opts);
    await waitFor(async () => {
      if (cur.child.exitCode !== null) throw new Error(`redis-server exited:\n${cur.out.all}`);
      return pingable(port);
    }, { timeoutMs: 10000, everyMs: 50, what: `redis-server on ${port}` });
  };
  const signal = (sig) => {
    try {
      process.kill(cur.child.pid, sig);
    } catch {
      // already gone
    }
  };
  await up();
  return {
    port,
    url: `redis://127.0.0.1:${port}/0`,
    dir,
    command: (...args) => redisCommand(port, args),
    kill9: async () => { signal('SIGKILL'); await cur.child.exited; },
    restart: up,
    pause: () => signal('SIGSTOP'),
    resume: () => signal('SIGCONT'),
    stop: async () => {
      signal('SIGCONT');
      signal('SIGKILL');
      await cur.child.exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A loopback TCP proxy in front of redis-server <port> whose replies can be held back:
 * after hold(ms), every byte Redis sends reaches the client <ms> later, in order, while the
 * commands still reach Redis at once (so Redis applies a command whose answer the client has
 * not read yet). hold(0) lets them through again, still in order. sent() is the text of the
 * commands clients sent so far (the last 64 KiB).
 */
export async function startReplyDelayProxy(port) {
  let holdMs = 0;
  let sent = '';
  const socks = new Set();
  const server = net.createServer((client) => {
    const upstream = net.connect(port, '127.0.0.1');
    const queue = [];
    let timer = null;
    const pump = () => {
      timer = null;
      while (queue.length && queue[0].at <= Date.now()) client.write(queue.shift().data);
      if (queue.length) timer = setTimeout(pump, Math.max(1, queue[0].at - Date.now()));
    };
    upstream.on('data', (data) => {
      queue.push({ at: Date.now() + holdMs, data });
      if (!timer) pump();
    });
    client.on('data', (d) => {
      sent = (sent + d.toString('latin1')).slice(-65536);
      upstream.write(d);
    });
    const end = () => { clearTimeout(timer); client.destroy(); upstream.destroy(); };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    socks.add(client);
    client.on('close', () => socks.delete(client));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const proxyPort = server.address().port;
  return {
    url: `redis://127.0.0.1:${proxyPort}/0`,
    hold: (ms) => { holdMs = ms; },
    sent: () => sent,
    stop: () => new Promise((resolve) => {
      for (const s of socks) s.destroy();
      server.close(() => resolve());
    }),
  };
}

/**
 * A loopback TCP proxy in front of redis-server <port> that holds back, for <ms>, the client
 * bytes that match <pattern> (a RegExp over the latin1 text of one read) and every byte the
 * client sends after them, in order -- so Redis applies such a command <ms> late, while
 * commands of other connections (another gateway) reach it at once. Replies pass unchanged.
 * held() is how many reads matched.
 */
export async function startCommandDelayProxy(port, pattern, ms) {
  let matched = 0;
  const socks = new Set();
  const server = net.createServer((client) => {
    const upstream = net.connect(port, '127.0.0.1');
    const queue = [];
    let timer = null;
    const pump = () => {
      timer = null;
      while (queue.length && queue[0].at <= Date.now()) upstream.write(queue.shift().data);
      if (queue.length) timer = setTimeout(pump, Math.max(1, queue[0].at - Date.now()));
    };
    client.on('data', (data) => {
      const late = pattern.test(data.toString('latin1'));
      if (late) matched++;
      if (!late && !queue.length) {
        upstream.write(data);
        return;
      }
      queue.push({ at: late ? Date.now() + ms : 0, data });
      if (!timer) pump();
    });
    upstream.on('data', (d) => client.write(d));
    const end = () => { clearTimeout(timer); client.destroy(); upstream.destroy(); };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    socks.add(client);
    client.on('close', () => socks.delete(client));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `redis://127.0.0.1:${server.address().port}/0`,
    held: () => matched,
    stop: () => new Promise((resolve) => {
      for (const s of socks) s.destroy();
      server.close(() => resolve());
    }),
  };
}
