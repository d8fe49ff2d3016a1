// SPDX-License-Identifier: MIT
// redis.mjs -- the redis-server behind the bench's `store.kind: redis` columns: started per
// column (loopback, a free port, no persistence, its dir in the bench temp dir, in the PID
// ledger like every other process), and read with `INFO commandstats` around each measured
// run; the rounds' readings folded into commands per request, and the Redis store's bars.
// A minimal RESP client over node:net, so the bench needs no Redis package and no redis-cli.

import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { freePort, waitReady } from './proc.mjs';

const round = (x, d) => (x === null || x === undefined ? null : Math.round(x * 10 ** d) / 10 ** d);

/** The RESP encoding of one command (an array of bulk strings). */
function encode(args) {
  return `*${args.length}\r\n` + args.map((a) => `$${Buffer.byteLength(String(a))}\r\n${a}\r\n`).join('');
}

/**
 * The reply of a buffer holding one complete simple, error, integer or bulk reply:
 * { value } or { error }; null while incomplete. (The bench sends PING and INFO only.)
 */
function parseReply(buf) {
  const eol = buf.indexOf('\r\n');
  if (eol < 0) return null;
  const head = buf.subarray(0, eol).toString('latin1');
  const kind = head[0];
  if (kind === '+' || kind === ':') return { value: head.slice(1) };
  if (kind === '-') return { error: head.slice(1) };
  if (kind !== '$') return { error: `unexpected reply ${JSON.stringify(head.slice(0, 40))}` };
  const n = Number(head.slice(1));
  if (n < 0) return { value: null };
  if (buf.length < eol + 2 + n + 2) return null;
  return { value: buf.subarray(eol + 2, eol + 2 + n).toString('utf8') };
}

/** Sends one command to 127.0.0.1:<port> on a fresh connection; resolves its reply value. */
export function redisCommand(port, args, timeoutMs = 3000) {
  return new Promise((resolve, reject) => {
    let buf = Buffer.alloc(0);
    const sock = net.connect({ host: '127.0.0.1', port });
    const done = (err, value) => {
      sock.destroy();
      if (err) reject(err);
      else resolve(value);
    };
    sock.setTimeout(timeoutMs, () => done(new Error(`redis ${args[0]}: no answer in ${timeoutMs} ms`)));
    sock.on('error', (e) => done(e));
    sock.on('connect', () => sock.write(encode(args)));
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      const r = parseReply(buf);
      if (r) done(r.error ? new Error(`redis ${args[0]}: ${r.error}`) : null, r.value);
    });
    sock.on('end', () => done(new Error(`redis ${args[0]}: connection closed`)));
  });
}

/**
 * `INFO commandstats` as { name: { calls, usec, failed } } (failed: rejected + failed
 * calls). Subcommands keep Redis's spelling ("config|get").
 */
export async function commandStats(port) {
  const text = await redisCommand(port, ['INFO', 'commandstats']);
  const out = {};
  for (const line of text.split('\r\n')) {
    const m = line.match(/^cmdstat_([^:]+):(.*)$/);
    if (!m) continue;
    const f = Object.fromEntries(m[2].split(',').map((kv) => kv.split('=')));
    out[m[1]] = {
      calls: Number(f.calls) || 0,
      usec: Number(f.usec) || 0,
      failed: (Number(f.rejected_calls) || 0) + (Number(f.failed_calls) || 0),
    };
  }
  return out;
}

/**
 * What happened between two commandStats readings, without the bench's own INFO (the
 * first reading's INFO is counted in the second).
 */
export function statsDelta(before, after) {
  const out = {};
  for (const [cmd, a] of Object.entries(after)) {
    if (cmd === 'info') continue;
    const b = before[cmd] ?? { calls: 0, usec: 0, failed: 0 };
    const d = { calls: a.calls - b.calls, usec: a.usec - b.usec, failed: a.failed - b.failed };
    if (d.calls > 0 || d.failed > 0) out[cmd] = d;
  }
  return out;
}

/** Adds delta <d> into the running sum <sum> (both statsDelta shapes). */
export function addStats(sum, d) {
  for (const [cmd, v] of Object.entries(d)) {
    const s = (sum[cmd] ??= { calls: 0, usec: 0, failed: 0 });
    s.calls += v.calls;
    s.usec += v.usec;
    s.failed += v.failed;
  }
  return sum;
}

/**
 * Starts redis-server for column <name> under <tmp>/<name>-redis, through ProcSet <procs>.
 * Resolves { rec, port, pids, log } once it answers PING, or { skip } with the reason.
 */
export async function startRedis(procs, bin, tmp, name) {
  if (!bin) return { skip: 'redis-server not found (apt-get install redis-server)' };
  const dir = path.join(tmp, `${name}-redis`);
  fs.mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const log = path.join(dir, 'redis.log');
  // No persistence: the bench measures the request path, not the disk. No daemonizing:
  // the ledger holds the PID we spawned.
  const rec = procs.start(`${name}-redis`, bin, [
    '--bind', '127.0.0.1', '--port', String(port), '--dir', dir, '--save', '', '--appendonly', 'no',
    '--daemonize', 'no', '--protected-mode', 'yes', '--logfile', log,
  ], { stdout: path.join(dir, 'stdout.log'), stderr: path.join(dir, 'stdout.log') });
  const why = await waitReady(rec, async () => (await redisCommand(port, ['PING'], 1000)) === 'PONG', 10000);
  if (why) {
    await procs.stop(rec);
    return { skip: `redis-server did not start: ${why}` };
  }
  return { rec, port, pids: () => [rec.pid], log };
}

/**
 * A Redis column's commands over its measured rounds (the rounds whose INFO could be read;
 * each round { w: wrk result, redis: { stats: statsDelta, cpu: seconds } or null}): in total
 * and by command, per request, with Redis's own time per call and its CPU per request.
 */
export function aggregateRedis(rounds) {
  const read = rounds.filter((r) => r.redis);
  if (!read.length) return null;
  const req = read.reduce((a, r) => a + r.w.requests, 0);
  const stats = read.reduce((s, r) => addStats(s, r.redis.stats), {});
  const cpu = read.reduce((a, r) => a + r.redis.cpu, 0);
  const per = (n) => (req > 0 ? round(n / req, 5) : null);
  const all = Object.values(stats);
  const calls = all.reduce((a, v) => a + v.calls, 0);
  const sorted = Object.entries(stats).sort((a, b) => b[1].calls - a[1].calls);
  return {
    rounds_read: read.length,
    requests: req,
    commands: calls,
    commands_per_req: per(calls),
    // PING is the gateway's liveness check, paced by the clock, not by requests.
    commands_per_req_not_ping: per(calls - (stats.ping?.calls ?? 0)),
    failed: all.reduce((a, v) => a + v.failed, 0),
    redis_cpu_us_per_req: req > 0 ? round((cpu / req) * 1e6, 1) : null,
    by_command: Object.fromEntries(sorted.map(([k, v]) => [k, {
      calls: v.calls, per_req: per(v.calls), usec_per_call: v.calls ? round(v.usec / v.calls, 2) : null, failed: v.failed,
    }])),
  };
}

/** Highest Redis commands per request (PING aside) for the no-limits column to pass. */
export const NO_LIMITS_MAX_COMMANDS_PER_REQ = 0.01;

/**
 * The bars of the Redis store, from a run's results: its throughput against the memory store
 * of the same run, without limits and with them (a column that answered errors fails: a fast
 * 503 would pass for throughput), and no Redis command on the request path when no limit
 * needs one. Each { what, value, unit, bar, pass } (pass null when not measured).
 */
export function redisVerdicts(r) {
  const tp = r.throughput ?? {};
  const out = [['bascule-redis', 'bascule', 0.9], ['bascule-redis-limits', 'bascule-limits', 0.75]].map(([k, base, bar]) => {
    const a = tp[k];
    const b = tp[base];
    const ratio = a && b ? a.rps / b.rps : null;
    const errs = a ? a.non_2xx + a.socket_errors : 0;
    return {
      what: `${k} / ${base} throughput`, value: round(ratio, 2), unit: errs ? `x, ${errs} errors` : 'x',
      bar: `>= ${bar}, no errors`, pass: ratio === null ? null : ratio >= bar && errs === 0,
    };
  });
  const n = tp['bascule-redis']?.redis?.commands_per_req_not_ping ?? null;
  out.push({
    what: 'bascule-redis Redis commands per request (not PING)', value: n, unit: '',
    bar: `<= ${NO_LIMITS_MAX_COMMANDS_PER_REQ}`, pass: n === null ? null : n <= NO_LIMITS_MAX_COMMANDS_PER_REQ,
  });
  return out;
}
