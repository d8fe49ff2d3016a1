// SPDX-License-Identifier: MIT
// The fleet holds a client's rate for minutes, through a gateway killed and Redis restarted
// (docs/internals/limits.md, "Rates"; docs/internals/redis.md, "Slices"): two gateway
// processes on one private redis-server (store.instances 2), one client at rpm 1200 with the
// default burst (100; one admission every 60 s / 1101), and a load well above the rate
// through both for 120 s: 240 requests at once at the start, six senders each at most one
// request every 30 ms, a pause of 7 s (the burst comes back) and 240 at once again. During
// the run one gateway is killed with SIGKILL by its PID and started again on its port, and
// redis-server is killed by its PID and restarted on its append-only file. bascule-sim logs
// the arrival of every call (GET /_sim/arrivals), and every window starting at a logged
// arrival is counted:
//
// * any 60 s holds at most rpm + the slices the instances may hold early
//   (2 x max(1, 1200 / 32) = 74 <= rpm / 16),
// * any window shorter than one interval (54 ms) at most the burst + the same 74,
//
// plus what the documented fallback admits while an instance decides alone (the caps divided
// by store.instances: rpm 600, burst 50, one every 60 s / 551) in the periods its log says it
// may have: from its start until it reached Redis; from "decided locally" to a second after
// Redis was back (a failed ask keeps the local caps that long); a second after an overdue ask.
// And plus the admissions a window of arrivals may gain because a call reaches the sim after
// the gateway admitted it: at most ceil(d / interval), d the longest PICK + ATTEMPT of an
// answered request in the gateways' access lines.
// Bounded: 120 s, at most MAX_SENT requests.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startGateway, startSim, waitFor } from '../lib/harness.mjs';
import { startRedis } from '../lib/redis.mjs';

const KEY = 'fleet-two-minutes-key-0123456789abc';
const MODEL = 'fleet-2min';
const RPM = 1200;
const BURST = RPM / 12; // the default burst
const INSTANCES = 2;
const SLICE = Math.max(1, Math.floor(RPM / (INSTANCES * 16))); // at most the burst
const OVERSHOOT = INSTANCES * SLICE; // 74, within rpm / 16 = 75
const INTERVAL_MS = 60000 / (RPM - BURST + 1);
const LOCAL_RPM = RPM / INSTANCES;
const LOCAL_BURST = BURST / INSTANCES;
const LOCAL_INTERVAL_MS = 60000 / (LOCAL_RPM - LOCAL_BURST + 1);
const LIM_LOCAL_MS = 1000; // a failed ask: local caps this long (src/limits/limits_fleet.c)
const SHORT_MS = Math.floor(INTERVAL_MS); // windows of 54 ms, shorter than one interval

const RUN_MS = 120000;
const SENDERS = 6; // three per gateway
const SEND_EVERY_MS = 30; // at most ~200 requests a second in all, 10x the rate
const MAX_SENT = 30000;
const SPIKE = 240; // concurrent requests at the start and after the pause
const KILL_GATEWAY_AT_MS = 40000;
const RESTART_REDIS_AT_MS = 75000;
const PAUSE_AT_MS = 96000; // no load for 7 s, more than the 5.5 s a burst takes to come back
const PAUSE_MS = 7000;

const UP = 'shared limits: decided with the other instances through Redis';
const DOWN = 'shared limits: decided locally';
const LATE = 'did not answer an ask within';

const LOG_MARGIN_MS = 20; // a log line's time (ms, wall clock) placed on the monotonic clock
const ADMIT_TAIL_MS = 10;

let redis, sim;
const gws = []; // the two gateways now
const everyGateway = []; // and the one killed

const nowMs = () => Number(process.hrtime.bigint() / 1000000n); // CLOCK_MONOTONIC, as the sim's

function config(port) {
  return `listen: "127.0.0.1:${port ?? '{{PORT}}'}"
workers: 2
log: { level: info }
store: { kind: redis, url: "${redis.url}", prefix: "f2:", timeout_ms: 10000, instances: ${INSTANCES} }
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-s"], health: { probe: none } }
targets:
  t1: { provider: sim, model: ${MODEL} }
routes:
  fleet: { primary: [t1] }
clients:
  one: { key: "${KEY}", routes: ["fleet"], rpm: ${RPM} }
`;
}

/** Starts a gateway (on <port> when given) and resolves once it decides through Redis. */
async function start(port) {
  const spawned = nowMs();
  const gw = await startGateway({ config: config(port) });
  gw.spawned = spawned;
  everyGateway.push(gw);
  await waitFor(() => gw.logs().includes(UP), { timeoutMs: 20000, what: 'limits shared through redis' });
  return gw;
}

/** Resolves once <gw> logged Redis going away and then back, after offset <from> of its log. */
function waitRedisBack(gw, from) {
  return waitFor(() => {
    const text = gw.logs().slice(from);
    const down = text.indexOf(DOWN);
    return down >= 0 && text.indexOf(UP, down) >= 0;
  }, { timeoutMs: 30000, what: 'the gateway deciding through Redis again' });
}

/** <gw>'s log lines (JSON) whose msg includes <text>, with their time on the monotonic clock. */
function logged(gw, text, wallToMono) {
  return gw.logs().split('\n').filter((l) => l.startsWith('{"ts"') && l.includes(text))
    .map((l) => Date.parse(JSON.parse(l).ts) - wallToMono);
}

/**
 * The periods in which <gw> decided its limits alone, at the caps divided by store.instances,
 * from its log: from its start until it first reached Redis; from each "decided
 * locally" to a second after the next "decided with the other instances" (a failed ask keeps
 * the local caps a second, LIM_LOCAL_MS); a second after each overdue ask. <end>: still local.
 */
function localPeriods(gw, wallToMono, end) {
  const ups = logged(gw, UP, wallToMono);
  const after = (t) => ups.find((u) => u >= t) ?? end;
  const periods = [{ from: gw.spawned, to: after(gw.spawned) }];
  for (const t of logged(gw, DOWN, wallToMono)) periods.push({ from: t, to: after(t) + LIM_LOCAL_MS });
  for (const t of logged(gw, LATE, wallToMono)) periods.push({ from: t, to: t + LIM_LOCAL_MS });
  return periods.map((p) => ({ port: gw.port, from: p.from - LOG_MARGIN_MS, to: p.to + LOG_MARGIN_MS }));
}

/**
 * The longest a request admitted by <gw> may have taken from its admission to the sim: its
 * PICK and ATTEMPT states (the access line's `states`), plus ADMIT_TAIL_MS for what ADMIT
 * does after the client's limit is taken (no waits).
 */
function slowestToSim(gw) {
  return gw.accessLog().filter((l) => l.type === 'access' && l.status === 200)
    .reduce((m, l) => Math.max(m, (l.states?.pick ?? 0) + (l.states?.attempt ?? 0)), 0) + ADMIT_TAIL_MS;
}

before(async () => {
  redis = await startRedis();
  sim = await startSim();
  gws.push(await start(), await start());
});

after(async () => {
  for (const gw of gws) await gw.stop().catch(() => {});
  await sim?.stop();
  await redis?.stop();
});

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** One request to gws[<slot>] (whichever process holds it now), counted in <run>. */
async function send(slot, run) {
  run.sent++;
  try {
    const res = await fetch(`${gws[slot].url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
      body: JSON.stringify({ model: 'fleet', messages: [{ role: 'user', content: 'hi' }] }),
      signal: AbortSignal.timeout(30000),
    });
    await res.arrayBuffer();
    if (res.status === 200) run.ok++;
    else if (res.status === 429) run.limited++;
    else run.other[res.status] = (run.other[res.status] ?? 0) + 1;
  } catch {
    run.failed++; // the gateway killed, or not listening yet
  }
}

/** SPIKE requests at once, half through each gateway: what a burst admits at once. */
const spike = (run) => Promise.all(Array.from({ length: SPIKE }, (_, i) => send(i % 2, run)));

/** One sender: a request at most every SEND_EVERY_MS to gws[<slot>] until the run ends,
 * silent during the pause. */
async function sender(slot, run) {
  while (nowMs() < run.end && run.sent < MAX_SENT) {
    const began = nowMs();
    if (began >= run.pauseFrom && began < run.pauseTo) {
      await sleep(run.pauseTo - began);
      continue;
    }
    await send(slot, run);
    await sleep(Math.max(1, SEND_EVERY_MS - (nowMs() - began)));
  }
}

/** Kills gws[<slot>] with SIGKILL by its PID and starts it again on the same port. */
async function killAndRestartGateway(slot) {
  const old = gws[slot];
  process.kill(old.proc.pid, 'SIGKILL');
  await old.exited;
  old.died = nowMs();
  gws[slot] = await start(old.port);
}

/** Kills redis-server with SIGKILL by its PID, restarts it on its port and AOF. */
async function restartRedis() {
  const offsets = gws.map((gw) => gw.logs().length);
  await redis.kill9();
  await redis.restart();
  await Promise.all(gws.map((gw, i) => waitRedisBack(gw, offsets[i])));
}

/** The most arrivals in a window [a_i, a_i + <ms>) over every arrival a_i, and where. */
function worstWindow(arrivals, ms, bound) {
  let worst = { count: 0, at: 0, bound: 0, over: -Infinity };
  for (let i = 0, j = 0; i < arrivals.length; i++) {
    while (j < arrivals.length && arrivals[j] < arrivals[i] + ms) j++;
    const count = j - i;
    const b = bound(arrivals[i], arrivals[i] + ms);
    if (count - b > worst.over) worst = { count, at: arrivals[i], bound: b, over: count - b };
  }
  return worst;
}

test('rpm 1200 on two instances for 120 s, a gateway killed and Redis restarted: every 60 s '
  + 'window within rpm + 1/16, every short window within the burst + 1/16', { timeout: 240000 }, async () => {
  const started = nowMs();
  const run = { end: started + RUN_MS, sent: 0, ok: 0, limited: 0, failed: 0, other: {},
    pauseFrom: started + PAUSE_AT_MS, pauseTo: started + PAUSE_AT_MS + PAUSE_MS };
  const load = Promise.all([spike(run), ...Array.from({ length: SENDERS }, (_, i) => sender(i % 2, run))]);
  await sleep(KILL_GATEWAY_AT_MS);
  await killAndRestartGateway(1);
  await sleep(Math.max(0, started + RESTART_REDIS_AT_MS - nowMs()));
  await restartRedis();
  await sleep(Math.max(0, run.pauseTo - nowMs()));
  await Promise.all([spike(run), load]);
  const wallToMono = Date.now() - nowMs();
  const local = everyGateway.flatMap((gw) => localPeriods(gw, wallToMono, gw.died ?? run.end));
  const toSim = Math.max(...everyGateway.map(slowestToSim));

  const seen = await sim.arrivals(MODEL);
  const arrivals = seen.arrivals_ms;
  assert.equal(seen.dropped, 0);
  assert.equal(arrivals.length, (await sim.stats()).models[MODEL].calls);

  // Arrivals in [s, e) were admitted in [s - toSim, e): toSim / interval more at most.
  const late = Math.ceil(toSim / INTERVAL_MS);
  const localIn = (s, e, perPeriod) => local
    .filter((p) => p.from < e && p.to > s - toSim)
    .reduce((sum, p) => sum + perPeriod(p), 0);
  const minute = worstWindow(arrivals, 60000, (s, e) => RPM + OVERSHOOT + late
    + localIn(s, e, (p) => Math.ceil((p.to - p.from) / LOCAL_INTERVAL_MS) + LOCAL_BURST));
  const short = worstWindow(arrivals, SHORT_MS, (s, e) => BURST + OVERSHOOT + late
    + localIn(s, e, () => 1 + LOCAL_BURST));
  // The same, counted only over windows no period of local decisions can touch.
  const clear = (s, e) => localIn(s, e, () => 1) === 0;
  const minuteClear = worstWindow(arrivals, 60000, (s, e) => (clear(s, e) ? RPM + OVERSHOOT + late : Infinity));
  const shortClear = worstWindow(arrivals, SHORT_MS, (s, e) => (clear(s, e) ? BURST + OVERSHOOT + late : Infinity));
  const figures = JSON.stringify({
    sent: run.sent, ok: run.ok, limited: run.limited, failed: run.failed, other: run.other,
    arrivals: arrivals.length, toSimMs: Math.round(toSim), late,
    local: local.filter((p) => p.to > started)
      .map((p) => ({ port: p.port, fromS: (p.from - started) / 1000, ms: p.to - p.from })),
    worst60s: { count: minute.count, bound: minute.bound, atS: (minute.at - started) / 1000 },
    worstShort: { count: short.count, bound: short.bound, atS: (short.at - started) / 1000 },
    worst60sNoLocal: { count: minuteClear.count, atS: (minuteClear.at - started) / 1000 },
    worstShortNoLocal: { count: shortClear.count, atS: (shortClear.at - started) / 1000 },
  });
  console.log(`fleet two minutes: ${figures}`);

  assert.ok(minute.over <= 0, `a 60 s window over its bound: ${figures}`);
  assert.ok(short.over <= 0, `a ${SHORT_MS} ms window over its bound: ${figures}`);
  // The load was above the rate, and the limiter admitted about the rate, not nothing.
  assert.ok(run.limited >= run.ok / 2, `not enough 429s: ${figures}`);
  assert.ok(arrivals.length >= RPM * 2 * 0.6, `too few admitted: ${figures}`);
});
