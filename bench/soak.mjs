// SPDX-License-Identifier: MIT
// soak.mjs -- bench/soak's driver: bascule's memory over a long run of mixed traffic.
//
// Two bascule-sim providers behind one route (primary + equivalent), the Redis store on a
// redis-server of its own; LOOPS client loops send plain and streamed chat requests (a
// third of them streamed, some with an Idempotency-Key, some cancelled mid-stream) while
// the sims switch faults every 0.3-1 s (ok, 500, 429, reset, cut, delay), the config is
// reloaded (SIGHUP) every RELOAD_S seconds and redis-server is restarted every REDIS_S
// seconds. Every SAMPLE_S seconds bascule's VmRSS and the request counts go to a CSV line.
// Everything listens on 127.0.0.1; the run is bounded by its duration (and every request
// by a timeout); processes go in bench/soak's ledger, which its EXIT trap cleans up.
//
//   node bench/soak.mjs SECONDS    (through bench/soak, which sets the temp dir and ledger)
import fs from 'node:fs';
import path from 'node:path';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { ProcSet, freePort, waitReady, sleep, statusKiB } from './proc.mjs';
import { startRedis, redisCommand } from './redis.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..');
const num = (k, d) => (process.env[k] ? Number(process.env[k]) : d);
const C = {
  seconds: Number(process.argv[2] || 3600),
  loops: num('SOAK_LOOPS', 16),
  sampleS: num('SOAK_SAMPLE_S', 5),
  reloadS: num('SOAK_RELOAD_S', 30),
  redisS: num('SOAK_REDIS_S', 120),
  okWeight: num('SOAK_OK_WEIGHT', 3), // 'ok' entries among the 6 fault kinds
  tmp: process.env.SOAK_TMP,
  csv: process.env.SOAK_CSV || path.join(ROOT, 'build', 'bench', 'soak.csv'),
  bascule: process.env.BASCULE_BIN || path.join(ROOT, 'build', 'bascule'),
  sim: process.env.BASCULE_SIM_BIN || path.join(ROOT, 'build', 'bascule-sim'),
};
const procs = new ProcSet(process.env.SOAK_LEDGER);
const log = (m) => process.stderr.write(`soak: ${m}\n`);
const stats = { ok: 0, failed: 0, streams: 0, cancelled: 0, reloads: 0, redis_restarts: 0 };
const until = Date.now() + C.seconds * 1000;

async function startSim(name) {
  const rec = procs.start(name, C.sim, ['--listen', '127.0.0.1:0', '--quiet', '--token-delay-ms', '2'],
    { stdout: 'pipe', stderr: path.join(C.tmp, `${name}.log`) });
  const port = await new Promise((resolve, reject) => {
    let out = '';
    rec.child.stdout.on('data', (d) => {
      out += d;
      const m = /listening on 127\.0\.0\.1:(\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    rec.exited.then(() => reject(new Error(`${name} exited`)));
  });
  rec.child.stdout.resume();
  return { rec, port };
}

function config(port, sims, redisPort, gen) {
  return `# soak, generation ${gen}
listen: "127.0.0.1:${port}"
workers: 2
log: { level: warn }
store: { kind: redis, url: "redis://127.0.0.1:${redisPort}", prefix: "soak:" }
providers:
${sims.map((s, i) => `  sim${i}: { kind: openai_compatible, base_url: "http://127.0.0.1:${s.port}/v1", keys: ["k${i}"], health: { probe: none } }`).join('\n')}
targets:
${sims.map((_, i) => `  m@sim${i}: { provider: sim${i}, model: soak-model }`).join('\n')}
routes:
  soak: { primary: [m@sim0], equivalent: [m@sim1], envelope: { deadline_ms: ${8000 + (gen % 3) * 1000} } }
`;
}

const FAULTS = [
  ...Array.from({ length: C.okWeight }, () => ({ action: 'ok' })),
  { action: 'status', status: 500 }, { action: 'status', status: 429, headers: { 'retry-after-ms': 50 } },
  { action: 'reset' }, { action: 'cut' }, { action: 'delay', delay_ms: 50 }, { action: 'error_200' },
];

function put(port, p, body) {
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, path: p, method: 'PUT', headers: { 'content-type': 'application/json' } },
      (res) => { res.resume(); res.on('end', resolve); });
    req.setTimeout(2000, () => req.destroy());
    req.on('error', resolve);
    req.end(JSON.stringify(body));
  });
}

async function faultLoop(sim) {
  while (Date.now() < until) {
    const step = FAULTS[Math.floor(Math.random() * FAULTS.length)];
    await put(sim.port, '/_sim/models/soak-model', { tokens: 20, script: [{ ...step, times: 1000 }], repeat: true });
    await sleep(300 + Math.random() * 700);
  }
}

/** One chat request through bascule: plain or streamed; a streamed one may be dropped early. */
function chat(port, i) {
  const stream = i % 3 === 0;
  const cancel = stream && i % 9 === 0;
  const headers = { 'content-type': 'application/json' };
  if (i % 5 === 0) headers['idempotency-key'] = `soak-${i}-${Date.now()}`;
  const body = JSON.stringify({ model: 'soak', stream, messages: [{ role: 'user', content: `soak request ${i}` }] });
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/v1/chat/completions', method: 'POST', headers, agent: false }, (res) => {
      let n = 0;
      res.on('data', () => {
        if (cancel && ++n === 2) {
          stats.cancelled++;
          req.destroy();
        }
      });
      res.on('end', () => resolve(res.statusCode === 200));
      res.on('error', () => resolve(false));
      res.on('close', () => resolve(res.statusCode === 200));
    });
    req.setTimeout(15000, () => req.destroy());
    req.on('error', () => resolve(false));
    req.end(body);
    if (stream) stats.streams++;
  });
}

async function clientLoop(port, k) {
  for (let i = k; Date.now() < until; i += C.loops) {
    if (await chat(port, i)) stats.ok++;
    else stats.failed++;
  }
}

async function main() {
  fs.mkdirSync(path.dirname(C.csv), { recursive: true });
  const sims = [await startSim('sim0'), await startSim('sim1')];
  let redis = await startRedis(procs, '/usr/bin/redis-server', C.tmp, 'soak');
  if (redis.skip) throw new Error(redis.skip);
  const port = await freePort();
  const conf = path.join(C.tmp, 'bascule.yaml');
  let gen = 0;
  fs.writeFileSync(conf, config(port, sims, redis.port, gen));
  const gw = procs.start('bascule', C.bascule, ['--config', conf], { stdout: 'ignore', stderr: path.join(C.tmp, 'bascule.log') });
  const why = await waitReady(gw, () => new Promise((res, rej) => {
    http.get({ host: '127.0.0.1', port, path: '/health/live', agent: false }, (r) => { r.resume(); res(r.statusCode === 200); }).on('error', rej);
  }), 10000);
  if (why) throw new Error(`bascule did not start: ${why}`);
  const csv = fs.openSync(C.csv, 'w');
  fs.writeSync(csv, 't_s,rss_kib,ok,failed,streams,cancelled,reloads,redis_restarts\n');
  const t0 = Date.now();
  const sample = () => fs.writeSync(csv, `${Math.round((Date.now() - t0) / 1000)},${statusKiB(gw.pid, 'VmRSS')},` +
    `${stats.ok},${stats.failed},${stats.streams},${stats.cancelled},${stats.reloads},${stats.redis_restarts}\n`);
  sample();
  const sampler = setInterval(sample, C.sampleS * 1000);
  const reloader = setInterval(() => {
    fs.writeFileSync(conf, config(port, sims, redis.port, ++gen));
    process.kill(gw.pid, 'SIGHUP');
    stats.reloads++;
  }, C.reloadS * 1000);
  // The Redis restart keeps the port: bascule reconnects to the same URL.
  const redisRestarts = (async () => {
    while (Date.now() + C.redisS * 1000 < until) {
      await sleep(C.redisS * 1000);
      const p = redis.port;
      await redisCommand(p, ['SHUTDOWN', 'NOSAVE']).catch(() => {});
      await procs.stop(redis.rec);
      await sleep(500);
      const rec = procs.start('soak-redis', '/usr/bin/redis-server', [
        '--bind', '127.0.0.1', '--port', String(p), '--dir', path.join(C.tmp, 'soak-redis'), '--save', '', '--appendonly', 'no',
        '--daemonize', 'no', '--logfile', path.join(C.tmp, 'soak-redis', 'redis.log'),
      ]);
      await waitReady(rec, async () => (await redisCommand(p, ['PING'], 1000)) === 'PONG', 10000);
      redis = { ...redis, rec };
      stats.redis_restarts++;
    }
  })();
  await Promise.all([...sims.map(faultLoop), ...Array.from({ length: C.loops }, (_, k) => clientLoop(port, k)), redisRestarts]);
  clearInterval(sampler);
  clearInterval(reloader);
  sample();
  fs.closeSync(csv);
  await procs.stop(gw);
  for (const s of sims) await procs.stop(s.rec);
  await procs.stop(redis.rec);
  log(`done: ${JSON.stringify(stats)}; RSS samples in ${C.csv}`);
}

main().catch((e) => {
  log(`fatal: ${e.stack ?? e}`);
  procs.killAllSync();
  process.exitCode = 2;
});
