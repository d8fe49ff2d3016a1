// SPDX-License-Identifier: MIT
// bench.mjs -- the benchmark driver behind bench/run (which sets the temp dir, the fd
// limit and the PID ledger, and cleans up on exit). Three parts, one table:
//   1. throughput: wrk, closed loop, the same chat request direct to a static nginx
//      upstream, through nginx proxy_pass, through bascule and through the Portkey gateway;
//      bascule with the Redis store, with INFO commandstats around each run (redis.mjs);
//   2. paced: the same targets at a moderate constant load, added latency over direct;
//   3. streams: N concurrent SSE streams through bascule from bascule-sim (streams.mjs);
//   tls: nginx proxy_pass https:// and bascule with an https:// provider in front of a TLS
//      nginx upstream, HTTP/2 offered and HTTP/1.1 only (tls.mjs);
//   cache: a response-cache hit against nginx answering the same bytes (cache.mjs; only
//      with BENCH_PARTS naming it).
// A column whose binary is missing or does not come up is skipped with the reason.
// Results: stdout table (report.mjs) and build/bench/results.json.

import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import {
  ProcSet, freePort, snapshot, childrenOf, httpRequest, waitReady, sleep, statusKiB, cpuSeconds,
} from './proc.mjs';
import { startRedis, commandStats, statsDelta, aggregateRedis, redisVerdicts } from './redis.mjs';
import { printReport } from './report.mjs';
import { added, summary } from './summary.mjs';
import {
  RESPONSE, basculeYaml, chatBenchYaml, chatBenchLimitsYaml, nginxConf, nginxQuote, redisStore,
} from './configs.mjs';
import { tlsPart, tlsVerdicts } from './tls.mjs';
import { cachePart } from './cache.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..');

function envNum(name, dflt) {
  const v = process.env[name];
  if (v === undefined || v === '') return dflt;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name}=${v}: not a non-negative number`);
  return n;
}

const C = {
  seconds: envNum('BENCH_SECONDS', 10),
  rounds: envNum('BENCH_ROUNDS', 3),
  pacedRounds: envNum('BENCH_PACED_ROUNDS', 5),
  settleMs: envNum('BENCH_SETTLE_MS', 500),
  warmup: envNum('BENCH_WARMUP', 2),
  connections: envNum('BENCH_CONNECTIONS', 50),
  threads: envNum('BENCH_THREADS', 2),
  workers: envNum('BENCH_WORKERS', 2),
  pacedConnections: envNum('BENCH_PACED_CONNECTIONS', 10),
  pacedRate: envNum('BENCH_PACED_RATE', 100), // requests/s per connection
  streams: envNum('BENCH_STREAMS', 5000),
  streamProbes: envNum('BENCH_STREAM_PROBES', 1000),
  streamTokenMs: envNum('BENCH_STREAM_TOKEN_MS', 200),
  streamOpenConcurrency: envNum('BENCH_STREAM_OPEN_CONCURRENCY', 500),
  streamRampSeconds: envNum('BENCH_STREAM_RAMP_S', 30),
  streamRounds: envNum('BENCH_STREAM_ROUNDS', 2),
  nofile: envNum('BENCH_NOFILE', 1024),
  strict: process.env.BENCH_STRICT === '1',
  parts: new Set((process.env.BENCH_PARTS || 'throughput,paced,tls,streams').split(',').map((s) => s.trim())),
  // BENCH_BASCULE_B set: its target is one of the defaults (an A/B without listing them all).
  targets: new Set((process.env.BENCH_TARGETS ||
    'direct,nginx,bascule,bascule-key,bascule-limits,portkey,bascule-redis,bascule-redis-limits' +
    (process.env.BENCH_BASCULE_B ? ',bascule-b' : ''))
    .split(',').map((s) => s.trim())),
  tmp: process.env.BENCH_TMP || fs.mkdtempSync(path.join(os.tmpdir(), 'bascule-bench-')),
  out: process.env.BENCH_OUT || path.join(ROOT, 'build', 'bench'),
  bascule: process.env.BASCULE_BIN || path.join(ROOT, 'build', 'bascule'),
  // A second bascule binary measured beside the first, in the same interleaved rounds
  // (target "bascule-b"): the way to judge a change on a noisy machine.
  basculeB: process.env.BENCH_BASCULE_B || '',
  sim: process.env.BASCULE_SIM_BIN || path.join(ROOT, 'build', 'bascule-sim'),
  simApiPrefix: process.env.BENCH_SIM_PREFIX || '/v1', // where bascule-sim serves the OpenAI API
};

const REQUEST = path.join(HERE, 'request.json');
const REQUEST_BODY = fs.readFileSync(REQUEST, 'utf8');
const EXPECTED_CONTENT = JSON.parse(RESPONSE).choices[0].message.content;
const PORTKEY_ENTRY = path.join(HERE, 'node_modules', '@portkey-ai', 'gateway', 'build', 'start-server.js');

const procs = new ProcSet(process.env.BENCH_LEDGER);
process.on('exit', () => procs.killAllSync());
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(sig, () => {
    procs.killAllSync();
    process.exit(130);
  });
}

const log = (msg) => process.stderr.write(`bench: ${msg}\n`);
const round = (x, d = 3) => (x === null || x === undefined ? null : Math.round(x * 10 ** d) / 10 ** d);

function tail(file, n = 15) {
  try {
    return fs.readFileSync(file, 'utf8').trimEnd().split('\n').slice(-n).join('\n');
  } catch {
    return '';
  }
}

function isExecutable(p) {
  try {
    fs.accessSync(p, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** A path as the user thinks of it: relative inside the repository, absolute outside. */
function shown(p) {
  const abs = path.resolve(ROOT, p);
  return abs.startsWith(ROOT + path.sep) ? path.relative(ROOT, abs) : abs;
}

/** The path of a command on PATH (or in /usr/sbin, where Debian puts nginx), or null. */
function which(cmd) {
  const dirs = [...(process.env.PATH || '').split(':').filter(Boolean), '/usr/sbin', '/sbin'];
  return dirs.map((d) => path.join(d, cmd)).find(isExecutable) ?? null;
}

/**
 * Runs a command to completion with a time bound; resolves { code, stdout, stderr }.
 * With `stderrFile`, its stderr is also appended there as it comes (progress lines).
 */
function runBounded(name, cmd, args, timeoutMs, stderrFile = null) {
  return new Promise((resolve) => {
    const rec = procs.start(name, cmd, args, { stdout: 'pipe', stderr: 'pipe' });
    let stdout = '';
    let stderr = '';
    rec.child.stdout?.on('data', (d) => (stdout += d));
    rec.child.stderr?.on('data', (d) => {
      stderr += d;
      if (stderrFile) fs.appendFileSync(stderrFile, d);
    });
    const t = setTimeout(() => {
      stderr += `\n(killed after ${timeoutMs} ms)`;
      procs.stop(rec, 1000);
    }, timeoutMs);
    rec.exited.then(({ code, signal, error }) => {
      clearTimeout(t);
      resolve({ code: error ? -1 : code, signal, stdout, stderr: error ? String(error) : stderr });
    });
  });
}

// ---------------------------------------------------------------- the processes under test

async function startNginx(name, templateFile, vars, readyProbe = null) {
  const nginx = which('nginx');
  if (!nginx) return { skip: 'nginx not found (apt-get install nginx-light)' };
  const dir = path.join(C.tmp, name);
  fs.mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const conf = path.join(dir, 'nginx.conf');
  const workerConnections = Math.max(1024, Math.min(C.nofile - 64, 65536));
  fs.writeFileSync(conf, nginxConf(templateFile, { dir, port, nofile: C.nofile, workerConnections, ...vars }));
  const errlog = path.join(dir, 'error.log');
  const rec = procs.start(name, nginx, ['-p', dir, '-c', conf, '-e', errlog], { stderr: path.join(dir, 'stderr.log') });
  const url = `http://127.0.0.1:${port}`;
  const probe = readyProbe ?? (async (u) => (await httpRequest(`${u}/v1/models`, { timeoutMs: 1000 })).status === 200);
  const why = await waitReady(rec, () => probe(url), 10000);
  if (why) {
    await procs.stop(rec);
    return { skip: `${name} did not start: ${why}\n${tail(errlog)}${tail(path.join(dir, 'stderr.log'))}` };
  }
  const workers = childrenOf(rec.pid);
  procs.adopt(workers, `${name}-worker`);
  return { rec, port, url, pids: () => [rec.pid, ...childrenOf(rec.pid)], log: errlog };
}

/** Connections bascule must admit: every held stream on both of its sides, and then some. */
function maxGatewayConnections() {
  return Math.max(20000, C.streams * 2 + 1000);
}

async function startBascule(name, yaml, readyProbe, bin = C.bascule) {
  if (!isExecutable(bin)) return { skip: `${shown(bin)} not built (make)` };
  const dir = path.join(C.tmp, name);
  fs.mkdirSync(dir, { recursive: true });
  const conf = path.join(dir, 'bascule.yaml');
  fs.writeFileSync(conf, yaml);
  const check = await runBounded(`${name}-check`, bin, ['--check-config', conf], 10000);
  if (check.code !== 0) {
    return { skip: `bascule --check-config rejected the generated config (${conf}):\n${(check.stdout + check.stderr).trim()}` };
  }
  const port = Number(yaml.match(/listen: "127\.0\.0\.1:(\d+)"/)[1]);
  const errlog = path.join(dir, 'stderr.log');
  // The access log goes to stdout: discarded, so that writing it is not what we measure
  // (BENCH_ACCESS_LOG=1 keeps it in access.log beside stderr.log, for looking into a run).
  const stdout = process.env.BENCH_ACCESS_LOG === '1' ? path.join(dir, 'access.log') : 'ignore';
  const rec = procs.start(name, bin, ['--config', conf], { stdout, stderr: errlog });
  const url = `http://127.0.0.1:${port}`;
  const why = await waitReady(rec, () => readyProbe(url), 10000);
  if (why) {
    await procs.stop(rec);
    return { skip: `bascule did not come up: ${why}\n${tail(errlog)}` };
  }
  return { rec, port, url, pids: () => [rec.pid], log: errlog };
}

/**
 * bascule with `store.kind: redis` on a redis-server of its own, so that the server's INFO
 * commandstats counts this column's commands only. <makeYaml>(storeValue) resolves the YAML.
 */
async function startBasculeRedis(name, makeYaml) {
  const redis = await startRedis(procs, which('redis-server'), C.tmp, name);
  if (redis.skip) return redis;
  const t = await startBascule(name, await makeYaml(redisStore(redis.port)), (url) => chatOk(url));
  if (t.skip) {
    await procs.stop(redis.rec);
    return t;
  }
  return { ...t, redis };
}

async function startPortkey(upstreamPort) {
  if (!fs.existsSync(PORTKEY_ENTRY)) return { skip: 'Portkey gateway not installed (cd bench && npm ci)' };
  const dir = path.join(C.tmp, 'portkey');
  fs.mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const errlog = path.join(dir, 'output.log');
  const rec = procs.start('portkey', process.execPath, [
    '--import', path.join(HERE, 'portkey-loopback.mjs'), PORTKEY_ENTRY, `--port=${port}`, '--headless',
  ], { stdout: errlog, stderr: errlog, env: { ...process.env, NODE_ENV: 'production' } });
  const url = `http://127.0.0.1:${port}`;
  const headers = portkeyHeaders(upstreamPort);
  const why = await waitReady(rec, () => chatOk(url, headers), 15000);
  if (why) {
    await procs.stop(rec);
    return { skip: `Portkey did not come up: ${why}\n${tail(errlog)}` };
  }
  return { rec, port, url, pids: () => [rec.pid], headers, log: errlog };
}

function portkeyHeaders(upstreamPort) {
  // Portkey routes by headers: provider "openai" at a custom host (its base URL, to which
  // it appends /chat/completions); the Authorization header is passed on as the key.
  return { 'x-portkey-provider': 'openai', 'x-portkey-custom-host': `http://127.0.0.1:${upstreamPort}/v1` };
}

/** True when a POST of the benchmark request returns the static upstream's answer. */
async function chatOk(url, extraHeaders = {}) {
  const r = await httpRequest(`${url}/v1/chat/completions`, {
    method: 'POST',
    body: REQUEST_BODY,
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench-not-a-real-key', ...extraHeaders },
    timeoutMs: 3000,
  });
  if (r.status !== 200) throw new Error(`HTTP ${r.status}: ${r.body.slice(0, 300)}`);
  const content = JSON.parse(r.body)?.choices?.[0]?.message?.content;
  if (content !== EXPECTED_CONTENT) throw new Error(`unexpected answer: ${r.body.slice(0, 300)}`);
  return true;
}

// ---------------------------------------------------------------- wrk

async function runWrk(url, seconds, { connections, threads, delayMs = 0, headers = {} }) {
  const args = [
    '-t', String(threads), '-c', String(connections), '-d', `${seconds}s`, '--latency', '--timeout', '5s',
    '-s', path.join(HERE, 'chat.lua'), `${url}/v1/chat/completions`, '--', REQUEST,
  ];
  if (delayMs > 0) args.push(String(delayMs));
  for (const [k, v] of Object.entries(headers)) args.push(`${k}: ${v}`);
  const r = await runBounded('wrk', which('wrk'), args, (seconds + 20) * 1000);
  const line = r.stdout.split('\n').find((l) => l.startsWith('BENCH_RESULT '));
  if (r.code !== 0 || !line) throw new Error(`wrk failed (code ${r.code}): ${r.stderr.trim()} ${r.stdout.trim()}`);
  return JSON.parse(line.slice('BENCH_RESULT '.length));
}

/** A Redis column's server: its INFO commandstats and CPU seconds; null when unreadable. */
async function redisReading(redis) {
  try {
    return { stats: await commandStats(redis.port), cpu: cpuSeconds(redis.rec.pid) };
  } catch (e) {
    log(`redis INFO commandstats: ${e.message}`);
    return null;
  }
}

/**
 * One measured wrk run, with the CPU time of the measured processes around it and, for a
 * Redis column, what its redis-server did meanwhile.
 */
async function measureRound(target, upstream, seconds, wrkOpts) {
  const upPids = upstream && upstream !== target ? upstream.pids() : [];
  const rBefore = target.redis ? await redisReading(target.redis) : null;
  const before = snapshot(target.pids());
  const upBefore = snapshot(upPids);
  const w = await runWrk(target.url, seconds, { ...wrkOpts, headers: target.headers ?? {} });
  const after = snapshot(target.pids());
  const upAfter = snapshot(upPids);
  const rAfter = rBefore ? await redisReading(target.redis) : null;
  const redis = rAfter ? { stats: statsDelta(rBefore.stats, rAfter.stats), cpu: rAfter.cpu - rBefore.cpu } : null;
  return {
    w, cpu: after.cpu - before.cpu, upCpu: upPids.length ? upAfter.cpu - upBefore.cpu : null, hwmKiB: after.hwmKiB, redis,
  };
}

const median = (xs) => {
  const v = xs.filter((x) => x !== null && x !== undefined).sort((a, b) => a - b);
  if (!v.length) return null;
  return v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
};

/**
 * Folds the rounds of one target into one entry: totals for requests, errors and CPU;
 * the median over rounds for each latency percentile (a burst of noise from the shared
 * machine in one round does not decide the figure); the worst round's max.
 */
function aggregate(rounds, label, pids) {
  const req = rounds.reduce((a, r) => a + r.w.requests, 0);
  const dur = rounds.reduce((a, r) => a + r.w.duration_us, 0) / 1e6;
  const cpu = rounds.reduce((a, r) => a + r.cpu, 0);
  const up = rounds.every((r) => r.upCpu !== null) ? rounds.reduce((a, r) => a + r.upCpu, 0) : null;
  const lat = (k) => round(median(rounds.map((r) => r.w.latency_us[k])) / 1000);
  return {
    label,
    rounds: rounds.length,
    requests: req,
    duration_s: round(dur),
    rps: round(req / dur, 1),
    non_2xx: rounds.reduce((a, r) => a + r.w.errors.status, 0),
    socket_errors: rounds.reduce((a, r) => a + r.w.errors.connect + r.w.errors.read + r.w.errors.write + r.w.errors.timeout, 0),
    latency_ms: {
      mean: lat('mean'), p50: lat('p50'), p90: lat('p90'), p99: lat('p99'), p999: lat('p999'),
      max: round(Math.max(...rounds.map((r) => r.w.latency_us.max)) / 1000),
    },
    p99_by_round_ms: rounds.map((r) => round(r.w.latency_us.p99 / 1000)),
    cpu_s: round(cpu, 2),
    cpu_us_per_req: req > 0 ? round((cpu / req) * 1e6, 1) : null,
    upstream_cpu_us_per_req: up !== null && req > 0 ? round((up / req) * 1e6, 1) : null,
    peak_rss_kib: Math.max(...rounds.map((r) => r.hwmKiB)),
    processes: pids.length,
  };
}

// ---------------------------------------------------------------- parts 1 and 2

/** The columns of parts 1 and 2, in start order: { key, label, start() -> target or { skip } }. */
function targetDefs(upstream) {
  const gw = async (extra = {}) => ({
    port: await freePort(), upstreamPort: upstream.port, workers: C.workers, maxConnections: maxGatewayConnections(), ...extra,
  });
  const defs = [
    { key: 'direct', label: 'direct (static nginx, 1 worker)', start: async () => upstream },
    {
      key: 'nginx', label: `nginx proxy_pass (${C.workers} workers)`,
      start: () => startNginx('nginx-proxy', 'nginx-proxy.conf.in', {
        WORKERS: C.workers, UPSTREAM_PORT: upstream.port, PROBE_PORT: upstream.port, BUFFERING: 'on',
      }),
    },
    {
      key: 'bascule', label: `bascule (${C.workers} workers)`,
      start: async () => startBascule('bascule', chatBenchYaml(await gw()), (url) => chatOk(url)),
    },
    // The local limits' cost: the same client key with and without limits that never bind.
    ...[['bascule-key', 'client key, no limits', false], ['bascule-limits', 'client rpm + target limits', true]]
      .map(([key, what, limits]) => ({
        key, label: `bascule, ${what}`,
        start: async () => startBascule(key, chatBenchLimitsYaml(await gw({ limits })), (url) => chatOk(url)),
      })),
    { key: 'portkey', label: 'Portkey gateway 1.15 (Node, 1 process)', start: () => startPortkey(upstream.port) },
    // The Redis store's cost: the bascule and bascule-limits configurations with
    // `store.kind: redis`, each column with a redis-server of its own.
    {
      key: 'bascule-redis', label: 'bascule, store redis, no limits',
      start: () => startBasculeRedis('bascule-redis', async (store) => chatBenchYaml(await gw({ store }))),
    },
    {
      key: 'bascule-redis-limits', label: 'bascule, store redis, client rpm + target limits',
      start: () => startBasculeRedis('bascule-redis-limits',
        async (store) => chatBenchLimitsYaml(await gw({ limits: true, store }))),
    },
  ];
  if (C.basculeB) {
    defs.splice(5, 0, {
      key: 'bascule-b', label: `bascule B: ${shown(C.basculeB)}`,
      start: async () => startBascule('bascule-b', chatBenchYaml(await gw()), (url) => chatOk(url), C.basculeB),
    });
    C.targets.add('bascule-b');
  }
  return defs;
}

/** Stops a column's processes (not the upstream's): the gateway, then its redis-server. */
async function stopTarget(t) {
  const how = await procs.stop(t.rec);
  if (t.redis) await procs.stop(t.redis.rec);
  return how;
}

/**
 * Starts every selected column; the ones that come up and answer the upstream's completion
 * are returned, the others are recorded as skipped with the reason.
 */
async function startTargets(defs, upstream, results) {
  const live = [];
  for (const d of defs) {
    if (!C.targets.has(d.key)) continue;
    log(`${d.key}: starting`);
    const t = await d.start();
    if (t.skip) {
      log(`${d.key}: SKIPPED: ${t.skip}`);
      results.skipped.push({ part: 'throughput+paced', target: d.key, reason: t.skip });
      continue;
    }
    try {
      await chatOk(t.url, t.headers);
      live.push({ ...d, t, rounds: { throughput: [], paced: [] }, failed: null });
    } catch (e) {
      log(`${d.key}: SKIPPED: wrong answer: ${e.message}`);
      results.skipped.push({ part: 'throughput+paced', target: d.key, reason: `wrong answer: ${e.message}` });
      if (t !== upstream) await stopTarget(t);
    }
  }
  return live;
}

/** The warm-up, then each phase's rounds, interleaved over the live columns. */
async function runPhases(live, upstream, phases, closed) {
  if (C.warmup > 0) {
    for (const x of live) {
      log(`${x.key}: warm-up, ${C.warmup} s`);
      try {
        await runWrk(x.t.url, C.warmup, { ...closed, headers: x.t.headers ?? {} });
      } catch (e) {
        x.failed = e.message;
      }
    }
  }
  for (const [phase, wrkOpts, R] of phases) {
    const per = Math.max(1, Math.round(C.seconds / R));
    for (let r = 0; r < R; r++) {
      // Rotate the order each round so no target always runs right after another.
      const order = live.map((_, i) => live[(i + r) % live.length]);
      for (const x of order) {
        if (x.failed) continue;
        log(`${phase} round ${r + 1}/${R}: ${x.key}, ${per} s`);
        try {
          x.rounds[phase].push(await measureRound(x.t, upstream, per, wrkOpts));
        } catch (e) {
          log(`${x.key}: FAILED: ${e.message}`);
          x.failed = e.message;
        }
        // A saturated proxy (Portkey) may still be draining its queue when wrk stops:
        // let it finish before the next target is measured.
        await sleep(C.settleMs);
      }
    }
  }
}

/** Folds a column's rounds into the results, keeps its log's last errors, and stops it. */
async function finishTarget(x, upstream, results, pacedDelay) {
  if (x.failed) {
    results.skipped.push({ part: 'throughput+paced', target: x.key, reason: `failed: ${x.failed}` });
  } else {
    for (const phase of ['throughput', 'paced']) {
      if (!x.rounds[phase].length) continue;
      const a = aggregate(x.rounds[phase], x.label, x.t.pids());
      if (x.t.redis) a.redis = aggregateRedis(x.rounds[phase]);
      if (phase === 'paced') a.target_rps = C.pacedConnections * (1000 / pacedDelay);
      results[phase][x.key] = a;
    }
  }
  if (x.t === upstream) return;
  // What a proxy logged during the runs is worth knowing (Portkey's log also has its
  // banner: only its error lines are kept).
  let errs = tail(x.t.log, 200).split('\n');
  if (x.key === 'portkey') errs = errs.filter((l) => /error|exception|rejection/i.test(l));
  // The bench's Redis keeps nothing on disk on purpose: bascule's warning about it is known.
  if (x.t.redis) errs = errs.filter((l) => !/redis appendfsync is/.test(l));
  errs = errs.filter((l) => l.trim()).slice(-5).join('\n');
  if (errs) results.notes.push(`${x.key} log tail:\n${errs}`);
  const how = await stopTarget(x.t);
  if (x.key === 'bascule') results.bascule_exit = { ...how, killed: !!x.t.rec.killed };
}

async function throughputAndPaced(results) {
  const doThroughput = C.parts.has('throughput');
  const doPaced = C.parts.has('paced');
  if (!doThroughput && !doPaced) return;
  if (!which('wrk')) {
    results.skipped.push({ part: 'throughput+paced', reason: 'wrk not found (apt-get install wrk)' });
    return;
  }
  const upstream = await startNginx('nginx-static', 'nginx-static.conf.in', { RESPONSE: nginxQuote(RESPONSE) });
  if (upstream.skip) {
    results.skipped.push({ part: 'throughput+paced', reason: upstream.skip });
    return;
  }
  // Everything is started first; the rounds then interleave the targets so that a burst
  // of load from elsewhere on the machine is spread over all of them.
  const live = await startTargets(targetDefs(upstream), upstream, results);
  const closed = { connections: C.connections, threads: C.threads };
  const pacedDelay = Math.max(1, Math.round(1000 / C.pacedRate));
  const paced = { connections: C.pacedConnections, threads: Math.min(C.threads, C.pacedConnections), delayMs: pacedDelay };
  const phases = [];
  if (doThroughput) phases.push(['throughput', closed, Math.max(1, Math.round(C.rounds))]);
  if (doPaced) phases.push(['paced', paced, Math.max(1, Math.round(C.pacedRounds))]);
  await runPhases(live, upstream, phases, closed);
  for (const x of live) await finishTarget(x, upstream, results, pacedDelay);
  await procs.stop(upstream.rec);
}

// ---------------------------------------------------------------- part 3

async function startSim(name = 'sim') {
  if (!isExecutable(C.sim)) return { skip: `${shown(C.sim)} not built (make)` };
  const dir = path.join(C.tmp, name);
  fs.mkdirSync(dir, { recursive: true });
  const outLog = fs.createWriteStream(path.join(dir, 'stdout.log'));
  const errlog = path.join(dir, 'stderr.log');
  // --quiet: no log line per request (thousands of streams).
  const rec = procs.start('bascule-sim', C.sim, ['--listen', '127.0.0.1:0', '--quiet'], { stdout: 'pipe', stderr: errlog });
  const port = await new Promise((resolve) => {
    let buf = '';
    let found = false;
    const t = setTimeout(() => resolve(null), 10000);
    rec.child.stdout.on('data', (d) => {
      outLog.write(d); // keep draining: a full pipe would stall the sim
      if (found) return;
      buf += d;
      const m = buf.match(/bascule-sim listening on 127\.0\.0\.1:(\d+)/);
      if (m) {
        found = true;
        clearTimeout(t);
        resolve(Number(m[1]));
      }
    });
    rec.exited.then(() => resolve(null));
  });
  if (!port) {
    await procs.stop(rec);
    return { skip: `bascule-sim did not print its port: ${tail(errlog)}` };
  }
  return { rec, port, url: `http://127.0.0.1:${port}`, pids: () => [rec.pid], log: errlog };
}

async function simModel(sim, model, spec) {
  const r = await httpRequest(`${sim.url}/_sim/models/${model}`, {
    method: 'PUT', body: JSON.stringify(spec), headers: { 'content-type': 'application/json' },
  });
  if (r.status < 200 || r.status > 299) throw new Error(`PUT /_sim/models/${model}: HTTP ${r.status} ${r.body.slice(0, 200)}`);
}

async function streamOk(url, model) {
  const r = await httpRequest(`${url}/chat/completions`, {
    method: 'POST',
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], stream: true }),
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench-not-a-real-key' },
    timeoutMs: 5000,
  });
  if (r.status !== 200 || !r.body.includes('[DONE]')) throw new Error(`HTTP ${r.status}: ${r.body.slice(0, 300)}`);
  return true;
}

/**
 * One gateway's streams figures from its rounds: the TTFT samples pooled (percentiles of
 * all of them), counts summed, per-stream and per-event figures averaged, a held count the
 * worst round's; the fd figures are the last round's. The raw samples are dropped.
 */
function poolStreamRuns(list) {
  const last = list[list.length - 1];
  const sum = (f) => list.reduce((a, s) => a + (f(s) ?? 0), 0);
  const mean = (f) => {
    const v = list.map(f).filter((x) => x !== null && x !== undefined);
    return v.length ? Math.round((v.reduce((a, x) => a + x, 0) / v.length) * 100) / 100 : null;
  };
  const cat = (k) => list.flatMap((s) => s.raw?.[k] ?? []);
  const out = { ...last, rounds: list.length };
  delete out.raw;
  out.ttft_held_ms = summary(cat('held'));
  out.ttft_probe_direct_ms = summary(cat('direct'));
  out.ttft_probe_gateway_ms = summary(cat('gateway'));
  out.ttft_added_ms = added(out.ttft_probe_gateway_ms, out.ttft_probe_direct_ms);
  for (const k of ['held_open', 'held_open_at_end', 'streams_first_token']) out[k] = Math.min(...list.map((s) => s[k]));
  for (const k of ['streams_failed', 'hold_events', 'ttft_held_over_1s', 'probe_new_sockets', 'held_waiting', 'held_ended_early', 'held_error_after_first']) {
    out[k] = sum((s) => s[k]);
  }
  out.probe_failed = { direct: sum((s) => s.probe_failed?.direct), gateway: sum((s) => s.probe_failed?.gateway) };
  for (const k of ['cpu_hold_pct', 'rss_per_stream_kib']) out[k] = mean((s) => s[k]);
  // CPU per event over all the rounds' events, not a mean of the rounds' ratios.
  out.cpu_us_per_event = out.hold_events
    ? Math.round((sum((s) => (s.cpu_us_per_event ?? 0) * s.hold_events) / out.hold_events) * 10) / 10 : null;
  out.ramp_ms = Math.max(...list.map((s) => s.ramp_ms));
  out.ramp_timed_out = list.some((s) => s.ramp_timed_out);
  out.errors = list.flatMap((s) => s.errors ?? []).slice(0, 10);
  return out;
}

/** Runs streams.mjs against one gateway; resolves its result object. */
async function streamRun(gw, probeApi, n, holdModel, probeModel, probes, probePrefix) {
  const rampTimeoutMs = C.streamRampSeconds * 1000;
  const arg = JSON.stringify({
    gateway: `${gw.url}/v1/chat/completions`,
    gatewayProbe: `${gw.url}${probePrefix}/v1/chat/completions`,
    direct: `${probeApi}/chat/completions`,
    holdModel,
    probeModelGateway: probeModel,
    probeModelDirect: 'sim-probe',
    streams: n,
    openConcurrency: C.streamOpenConcurrency,
    probes,
    pids: gw.pids(),
    rampTimeoutMs,
  });
  // After the ramp: sending probes (at most probes x 20 ms + 10 s), waiting for them (at
  // most 15 s), the hold (2 s), the close and the fd check (at most 5 + 5 s).
  const boundMs = rampTimeoutMs + probes * 20 + 45000;
  const progress = path.join(C.tmp, `streams-${gw.name}.log`);
  const r = await runBounded('streams-client', process.execPath, [path.join(HERE, 'streams.mjs'), arg], boundMs, progress);
  const line = r.stdout.trim().split('\n').pop();
  let s;
  try {
    s = JSON.parse(line);
  } catch {
    throw new Error(`streams client: exit ${r.code}\n${r.stderr.trim().split('\n').slice(-8).join('\n')}\n${r.stdout.trim().slice(-500)}`);
  }
  if (s.fatal) throw new Error(`streams client: ${s.fatal}`);
  delete s.options;
  return s;
}

async function streams(results) {
  if (!C.parts.has('streams') || C.streams === 0) return;
  let n = C.streams;
  // A gateway holds a client and an upstream socket per stream; the sim and the client one.
  const maxByFd = Math.floor((C.nofile - 1000) / 2);
  if (n > maxByFd) {
    results.notes.push(`streams: fd limit ${C.nofile} allows ${maxByFd} streams, not ${n}; raise the hard limit (ulimit -Hn; bench/run raises it itself with CAP_SYS_RESOURCE)`);
    n = maxByFd;
  }
  results.settings.streams = n;
  // The probes have an upstream of their own, idle but for them: the held streams keep
  // their sim's one thread busy (tens of thousands of token events a second), and probes
  // queued behind those events measured that queue -- hundreds of ms, different between
  // the direct and the gateway probe of a pair -- instead of what the gateway adds.
  const sim = await startSim();
  const probeSim = sim.skip ? sim : await startSim('sim-probes');
  if (sim.skip || probeSim.skip) {
    const why = sim.skip ?? probeSim.skip;
    log(`streams: SKIPPED: ${why}`);
    results.skipped.push({ part: 'streams', reason: why });
    if (!sim.skip) await procs.stop(sim.rec);
    return;
  }
  const simApi = `${sim.url}${C.simApiPrefix}`;
  const probeApi = `${probeSim.url}${C.simApiPrefix}`;
  try {
    // Held streams outlast the ramp, the probes and the hold; the client closes them.
    const holdMs = C.streamRampSeconds * 1000 + C.streamProbes * 20 + 30000;
    const tokens = Math.min(4096, Math.ceil(holdMs / Math.max(1, C.streamTokenMs))); // the sim caps at 4096
    await simModel(sim, 'sim-hold', { tokens, token_delay_ms: C.streamTokenMs });
    await simModel(probeSim, 'sim-probe', { tokens: 5, token_delay_ms: 10 });
    await streamOk(probeApi, 'sim-probe');
  } catch (e) {
    log(`streams: SKIPPED: ${e.message}`);
    results.skipped.push({ part: 'streams', reason: `bascule-sim: ${e.message}` });
    await procs.stop(sim.rec);
    await procs.stop(probeSim.rec);
    return;
  }
  const streamsYaml = async () => basculeYaml({
    port: await freePort(), workers: C.workers, maxConnections: maxGatewayConnections(),
    providers: [{ id: 'sim', baseUrl: simApi }, { id: 'probes', baseUrl: probeApi }],
    targets: [{ id: 'hold@sim', provider: 'sim', model: 'sim-hold' }, { id: 'probe@probes', provider: 'probes', model: 'sim-probe' }],
    routes: [{ id: 'bench-hold', target: 'hold@sim' }, { id: 'bench-probe', target: 'probe@probes' }],
  });
  const gateways = [
    {
      key: 'nginx', label: `nginx proxy_pass (${C.workers} workers, proxy_buffering off)`, hold: 'sim-hold', probe: 'sim-probe', probePrefix: '/probe',
      start: () => startNginx('nginx-stream', 'nginx-proxy.conf.in', {
        WORKERS: C.workers, UPSTREAM_PORT: sim.port, PROBE_PORT: probeSim.port, BUFFERING: 'off',
      }, (url) => streamOk(`${url}/probe/v1`, 'sim-probe')),
    },
    {
      key: 'bascule', label: `bascule (${C.workers} workers)`, hold: 'bench-hold', probe: 'bench-probe',
      start: async () => startBascule('bascule-streams', await streamsYaml(),
      (url) => streamOk(`${url}/v1`, 'bench-probe')),
    },
  ];
  if (C.basculeB) {
    // The same held streams and probes through a second build, for a same-run A/B.
    const b = gateways[1];
    gateways.push({
      ...b, key: 'bascule-b', label: `bascule B (${C.workers} workers)`,
      start: async () => startBascule('bascule-b-streams', await streamsYaml(), (url) => streamOk(`${url}/v1`, 'bench-probe'), C.basculeB),
    });
  }
  // The gateways take turns, in rounds whose order alternates (A B, B A, ...), each round
  // with its share of the probes: the load of a shared machine drifts over minutes, and
  // one gateway measured wholly after the other would carry the drift into the comparison.
  const rounds = Math.max(1, Math.round(C.streamRounds));
  const probes = Math.ceil(C.streamProbes / rounds);
  const runs = {};
  const dead = new Set();
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? gateways : [...gateways].reverse();
    for (const g of order) {
      if (!C.targets.has(g.key) || dead.has(g.key)) continue;
      log(`streams: round ${round + 1}/${rounds}: ${g.key}: starting`);
      const gw = await g.start();
      if (gw.skip) {
        log(`streams: ${g.key}: SKIPPED: ${gw.skip}`);
        results.skipped.push({ part: 'streams', target: g.key, reason: gw.skip });
        dead.add(g.key);
        continue;
      }
      try {
        log(`streams: round ${round + 1}/${rounds}: ${g.key}: ${n} streams, ${probes} probe pairs`);
        (runs[g.key] ??= []).push(await streamRun({ ...gw, name: g.key }, probeApi, n, g.hold, g.probe, probes, g.probePrefix ?? ''));
      } catch (e) {
        log(`streams: ${g.key}: FAILED: ${e.message}`);
        results.skipped.push({ part: 'streams', target: g.key, reason: `failed: ${e.message}` });
        dead.add(g.key);
      }
      const how = await procs.stop(gw.rec, 12000);
      if (g.key === 'bascule' && (!results.bascule_streams_exit || gw.rec.killed)) {
        results.bascule_streams_exit = { ...how, killed: !!gw.rec.killed };
      }
    }
  }
  for (const g of gateways) {
    if (!runs[g.key] || dead.has(g.key)) continue;
    results.streams[g.key] = { ...poolStreamRuns(runs[g.key]), label: g.label };
  }
  results.sim_peak_rss_kib = statusKiB(sim.rec.pid, 'VmHWM');
  await procs.stop(sim.rec);
  await procs.stop(probeSim.rec);
}

// ---------------------------------------------------------------- main

async function main() {
  const t0 = Date.now();
  fs.mkdirSync(C.out, { recursive: true });
  const results = {
    when: new Date().toISOString(),
    machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, kernel: os.release(), node: process.version },
    settings: {
      seconds: C.seconds, rounds: C.rounds, paced_rounds: C.pacedRounds, warmup: C.warmup, connections: C.connections, threads: C.threads, workers: C.workers,
      paced_connections: C.pacedConnections, paced_rate_per_connection: C.pacedRate,
      streams: C.streams, stream_probes: C.streamProbes, stream_rounds: Math.max(1, Math.round(C.streamRounds)), stream_token_ms: C.streamTokenMs,
      request_bytes: Buffer.byteLength(REQUEST_BODY), response_bytes: Buffer.byteLength(RESPONSE), nofile: C.nofile,
    },
    throughput: {},
    paced: {},
    streams: {},
    skipped: [],
    notes: [],
  };
  await throughputAndPaced(results);
  await tlsPart(results, {
    C, log, startNginx, startBascule, chatOk, runWrk, measureRound, aggregate, maxGatewayConnections,
    stop: (rec) => procs.stop(rec), outDir: C.out,
  });
  await cachePart(results, {
    C, log, procs, which, startNginx, startBascule, runWrk, measureRound, aggregate, maxGatewayConnections,
    stop: (rec) => procs.stop(rec), request: REQUEST_BODY,
  });
  await streams(results);
  results.elapsed_s = Math.round((Date.now() - t0) / 1000);
  results.ratios = ratios(results);
  results.verdicts = verdicts(results);
  const file = path.join(C.out, 'results.json');
  fs.writeFileSync(file, JSON.stringify(results, null, 2) + '\n');
  printReport(results);
  process.stdout.write(`\nresults: ${path.relative(process.cwd(), file) || file}  (${results.elapsed_s} s)\n`);
  if (C.strict && results.verdicts.some((v) => v.pass === false)) process.exitCode = 1;
}

/** The side-by-side figures worth reading first (null when a column is missing). */
function ratios(r) {
  const tp = r.throughput;
  const pc = r.paced;
  const div = (a, b) => (a && b ? round(a / b, 3) : null);
  const sub = (a, b) => (a !== undefined && b !== undefined && a !== null && b !== null ? round(a - b) : null);
  const out = {
    bascule_over_nginx_rps: div(tp.bascule?.rps, tp.nginx?.rps),
    portkey_over_nginx_rps: div(tp.portkey?.rps, tp.nginx?.rps),
    bascule_over_portkey_rps: div(tp.bascule?.rps, tp.portkey?.rps),
    bascule_over_nginx_cpu_per_req: div(tp.bascule?.cpu_us_per_req, tp.nginx?.cpu_us_per_req),
    redis_over_memory_rps: div(tp['bascule-redis']?.rps, tp.bascule?.rps),
    redis_limits_over_memory_limits_rps: div(tp['bascule-redis-limits']?.rps, tp['bascule-limits']?.rps),
  };
  for (const k of ['nginx', 'bascule', 'portkey']) {
    out[`${k}_added_p99_closed_ms`] = sub(tp[k]?.latency_ms.p99, tp.direct?.latency_ms.p99);
    out[`${k}_added_p50_paced_ms`] = sub(pc[k]?.latency_ms.p50, pc.direct?.latency_ms.p50);
    out[`${k}_added_p99_paced_ms`] = sub(pc[k]?.latency_ms.p99, pc.direct?.latency_ms.p99);
  }
  for (const k of ['nginx', 'bascule']) {
    out[`${k}_ttft_added_p50_ms`] = r.streams[k]?.ttft_added_ms.p50 ?? null;
    out[`${k}_ttft_added_p99_ms`] = r.streams[k]?.ttft_added_ms.p99 ?? null;
    out[`${k}_rss_per_stream_kib`] = r.streams[k]?.rss_per_stream_kib ?? null;
    out[`${k}_cpu_us_per_event`] = r.streams[k]?.cpu_us_per_event ?? null;
  }
  return out;
}

/** The bars of the brief, each { what, value, bar, pass } (pass null when not measured). */
function verdicts(r) {
  const out = [];
  const tb = r.throughput.bascule;
  const tn = r.throughput.nginx;
  const ratio = tb && tn ? tb.rps / tn.rps : null;
  out.push({ what: 'bascule / nginx-proxy throughput', value: round(ratio, 2), unit: 'x', bar: '>= 0.5 (aim 0.8)', pass: ratio === null ? null : ratio >= 0.5 });
  const pb = r.paced.bascule;
  const pd = r.paced.direct;
  const added = pb && pd ? pb.latency_ms.p99 - pd.latency_ms.p99 : null;
  out.push({ what: 'bascule added p99 at paced load', value: round(added), unit: 'ms', bar: '<= 0.5', pass: added === null ? null : added <= 0.5 });
  out.push(...redisVerdicts(r));
  const s = r.streams.bascule;
  if (s) {
    const all = s.streams_failed === 0 && s.held_open === s.streams_requested;
    out.push({ what: 'streams held open through bascule', value: `${s.held_open}/${s.streams_requested}`, unit: '', bar: 'all, 0 failed', pass: all });
    // Kept-alive upstream connections idle in the pools are held on purpose: not counted.
    const leak = s.fds_after_close !== null && s.fds_idle !== null
      ? s.fds_after_close - s.fds_idle - (s.upstream_idle_after_close ?? 0) : null;
    out.push({ what: 'bascule fds released after clients close', value: leak, unit: 'fds over idle (pooled upstream ones apart)', bar: '<= 16', pass: leak === null ? null : leak <= 16 });
  } else {
    out.push({ what: 'streams held open through bascule', value: null, unit: '', bar: 'all, 0 failed', pass: null });
  }
  out.push(...againstNginx(r));
  out.push(...tlsVerdicts(r));
  return out;
}

/**
 * The same-run targets against nginx proxy_pass (docs/internals/streams-memory.md): the
 * gateway is to be within these of the floor any HTTP proxy pays, on this machine, now.
 */
function againstNginx(r) {
  const q = r.ratios;
  const out = [];
  const bar = (what, value, unit, text, ok) =>
    out.push({ what, value: value === null ? null : round(value, 3), unit, bar: text, pass: value === null ? null : ok });
  const tp = q.bascule_over_nginx_rps;
  bar('bascule / nginx throughput, closed loop', tp, 'x', '>= 0.65', tp >= 0.65);
  const pb = q.bascule_added_p99_paced_ms;
  const pn = q.nginx_added_p99_paced_ms;
  const paced = pb === null || pn === null ? null : pb;
  bar('bascule paced p99 added vs nginx\'s', paced, `ms (nginx ${round(pn)})`, '<= 1.5x nginx', paced !== null && pb <= 1.5 * Math.max(pn, 0));
  const sb = r.streams.bascule;
  const sn = r.streams.nginx;
  const both = sb && sn;
  const t50 = both ? q.bascule_ttft_added_p50_ms : null;
  const lim50 = both ? Math.max(2 * q.nginx_ttft_added_p50_ms, 2) : null;
  bar('bascule TTFT added p50, held streams', t50, `ms (nginx ${round(q.nginx_ttft_added_p50_ms)})`, `<= max(2x nginx, 2 ms) = ${round(lim50, 3)}`, t50 <= lim50);
  const t99 = both ? q.bascule_ttft_added_p99_ms : null;
  const lim99 = both ? Math.max(2 * q.nginx_ttft_added_p99_ms, 6) : null;
  bar('bascule TTFT added p99, held streams', t99, `ms (nginx ${round(q.nginx_ttft_added_p99_ms)})`, `<= max(2x nginx, 6 ms) = ${round(lim99, 3)}`, t99 <= lim99);
  const rss = both && sn.rss_per_stream_kib ? sb.rss_per_stream_kib / sn.rss_per_stream_kib : null;
  bar('bascule / nginx RSS per held stream', rss, 'x', '<= 1.1', rss <= 1.1);
  const cpu = both && sn.cpu_hold_pct ? sb.cpu_hold_pct / sn.cpu_hold_pct : null;
  bar('bascule / nginx CPU while holding the streams', cpu, 'x', '<= 1.3', cpu <= 1.3);
  return out;
}

main().catch((e) => {
  log(`fatal: ${e.stack ?? e}`);
  procs.killAllSync();
  process.exitCode = 2;
});
