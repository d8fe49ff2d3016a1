// SPDX-License-Identifier: MIT
// The Redis columns of `make bench` (bench/redis.mjs, bench/README.md): the bench's own
// redis-server is in the PID ledger; INFO commandstats read around a run counts exactly the
// gateway's commands (not the bench's INFO) and folds them into commands per request; the
// generated configurations are accepted; the Redis bars pass and fail as documented.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bins, freePort, startGateway, startSim, waitFor } from '../lib/harness.mjs';
import { ProcSet } from '../../bench/proc.mjs';
import {
  startRedis, commandStats, statsDelta, aggregateRedis, redisVerdicts, redisCommand,
} from '../../bench/redis.mjs';
import { chatBenchYaml, chatBenchLimitsYaml, redisStore } from '../../bench/configs.mjs';
import { printReport } from '../../bench/report.mjs';

let tmp, procs, redis, sim, gw;

before(async () => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'bascule-bench-redis-'));
  procs = new ProcSet(path.join(tmp, 'pids'));
  redis = await startRedis(procs, 'redis-server', tmp, 'bascule-redis');
  assert.equal(redis.skip, undefined, redis.skip);
  sim = await startSim();
  const yaml = chatBenchYaml({ port: await freePort(), upstreamPort: sim.port, workers: 1, store: redisStore(redis.port) });
  gw = await startGateway({ config: yaml });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
  if (redis?.rec) await procs.stop(redis.rec);
  rmSync(tmp, { recursive: true, force: true });
});

function chat(headers = {}) {
  return fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench-not-a-real-key', ...headers },
    body: JSON.stringify({ model: 'bench-chat', messages: [{ role: 'user', content: 'hi' }] }),
  });
}

/** Commands other than PING (the gateway's clock-paced liveness check) between two readings. */
const notPing = (d) => Object.entries(d).filter(([k]) => k !== 'ping').reduce((a, [, v]) => a + v.calls, 0);

test('bench redis: the server is in the PID ledger and the generated configs are accepted', () => {
  const ledger = readFileSync(path.join(tmp, 'pids'), 'utf8');
  assert.match(ledger, new RegExp(`^\\+${redis.rec.pid} \\d+ bascule-redis-redis$`, 'm'));
  const file = path.join(tmp, 'limits.yaml');
  writeFileSync(file, chatBenchLimitsYaml({
    port: 18080, upstreamPort: sim.port, workers: 2, limits: true, store: redisStore(redis.port),
  }));
  execFileSync(bins.bascule, ['--check-config', file], { stdio: 'pipe' });
});

test('bench redis: INFO commandstats around a run counts the gateway\'s commands per request', async () => {
  await waitFor(async () => /^bascule_store_up 1$/m.test(await (await fetch(`${gw.url}/metrics`)).text()),
    { timeoutMs: 15000, everyMs: 50, what: 'bascule_store_up 1' });
  // Wait until the gateway's connect-time traffic (resynchronisation, CONFIG GET) is over:
  // two readings 300 ms apart with nothing but PINGs between them.
  let last = await commandStats(redis.port);
  await waitFor(async () => {
    await new Promise((r) => setTimeout(r, 300));
    const now = await commandStats(redis.port);
    const quiet = notPing(statsDelta(last, now)) === 0;
    last = now;
    return quiet;
  }, { timeoutMs: 15000, everyMs: 0, what: 'Redis traffic of the gateway settled' });

  const own = await commandStats(redis.port);
  for (let i = 0; i < 3; i++) assert.equal(await redisCommand(redis.port, ['SET', 'bench-test', String(i)]), 'OK');
  const plain = await commandStats(redis.port);
  assert.equal(statsDelta(own, plain).set?.calls, 3);

  for (let i = 0; i < 4; i++) assert.equal((await chat()).status, 200);
  const idem = await commandStats(redis.port);
  for (let i = 0; i < 4; i++) assert.equal((await chat({ 'idempotency-key': `bench-${i}` })).status, 200);
  // The record is completed before the answer is sent; wait for the scripts all the same.
  const scriptsSince = (a, b) => (statsDelta(a, b).eval?.calls ?? 0) + (statsDelta(a, b).evalsha?.calls ?? 0);
  let end;
  await waitFor(async () => scriptsSince(idem, (end = await commandStats(redis.port))) >= 8,
    { timeoutMs: 10000, what: 'the 8 scripts of 4 Idempotency-Key requests' });

  const d1 = statsDelta(plain, idem);
  const d2 = statsDelta(idem, end);
  assert.equal(d1.info, undefined, 'the bench\'s own INFO is not counted');
  assert.equal(notPing(d1), 0, `no Redis command for a request that needs none: ${JSON.stringify(d1)}`);
  // docs/internals/redis.md: an Idempotency-Key request is 2 scripts (begin, complete). The
  // commands the scripts run (redis.call) are counted too, under their own names.
  const scripts = (d2.eval?.calls ?? 0) + (d2.evalsha?.calls ?? 0);
  assert.equal(scripts, 8, JSON.stringify(d2));
  assert.ok(notPing(d2) >= 8, JSON.stringify(d2));

  const agg = aggregateRedis([
    { w: { requests: 4 }, redis: { stats: d1, cpu: 0 } },
    { w: { requests: 4 }, redis: { stats: d2, cpu: 0.0008 } },
    { w: { requests: 1000 }, redis: null }, // a round whose INFO could not be read
  ]);
  assert.equal(agg.rounds_read, 2);
  assert.equal(agg.requests, 8);
  assert.equal(agg.commands_per_req_not_ping, notPing(d2) / 8);
  assert.equal(agg.redis_cpu_us_per_req, 100);
  const byCmd = Object.values(agg.by_command).reduce((a, v) => a + v.calls, 0);
  assert.equal(byCmd, agg.commands);
});

test('bench redis: redisCommand reports an error reply', async () => {
  await assert.rejects(redisCommand(redis.port, ['NOSUCHCOMMAND']), /redis NOSUCHCOMMAND: ERR unknown command/);
});

/** A throughput entry as bench.mjs writes it. */
const entry = (rps, errors = 0, redis) => ({
  label: 'x', rps, non_2xx: errors, socket_errors: 0, latency_ms: { p50: 1, p99: 2 }, redis,
});

test('bench redis: the bars compare each Redis column with the memory store of the same run', () => {
  const redisFig = { commands_per_req_not_ping: 0, by_command: {}, commands: 3, commands_per_req: 0.0003 };
  const run = (tp) => Object.fromEntries(redisVerdicts({ throughput: tp }).map((v) => [v.what, v.pass]));
  const pass = run({
    bascule: entry(1000), 'bascule-redis': entry(950, 0, redisFig),
    'bascule-limits': entry(1000), 'bascule-redis-limits': entry(760),
  });
  assert.deepEqual(Object.values(pass), [true, true, true]);
  const fail = run({
    bascule: entry(1000), 'bascule-redis': entry(950, 3, { ...redisFig, commands_per_req_not_ping: 2 }),
    'bascule-limits': entry(1000), 'bascule-redis-limits': entry(740),
  });
  assert.deepEqual(Object.values(fail), [false, false, false]);
  assert.deepEqual(Object.values(run({ bascule: entry(1000) })), [null, null, null]);
});

test('bench redis: the report prints the Redis columns and their commands per request', () => {
  const agg = {
    commands: 20003, commands_per_req: 2.0003, failed: 0, redis_cpu_us_per_req: 12.5,
    by_command: { evalsha: { calls: 20000, per_req: 2, usec_per_call: 3.1, failed: 0 }, ping: { calls: 3, per_req: 0.0003, usec_per_call: 1, failed: 0 } },
  };
  const r = {
    when: 'now', machine: { cpus: 2 }, settings: { seconds: 1, rounds: 1, paced_rounds: 1, warmup: 0, threads: 2, connections: 50 },
    throughput: { bascule: { ...entry(1000), label: 'bascule' }, 'bascule-redis-limits': { ...entry(900, 0, agg), label: 'redis limits' } },
    paced: {}, streams: {}, ratios: { redis_over_memory_rps: null, redis_limits_over_memory_limits_rps: 0.9 },
  };
  let text = '';
  const write = process.stdout.write;
  process.stdout.write = (s) => ((text += s), true);
  try {
    printReport(r);
  } finally {
    process.stdout.write = write;
  }
  assert.match(text, /^redis limits\s+900\s/m);
  assert.match(text, /Redis commands per request/);
  assert.match(text, /^bascule-redis-limits \(throughput\)\s+all\s+20003\s+2\.0003\s/m);
  assert.match(text, /^\s+evalsha\s+20000\s+2\.0000\s+3\.10\s+0/m);
  assert.match(text, /with limits 0\.90x/);
});
