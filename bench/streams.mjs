// SPDX-License-Identifier: MIT
// streams.mjs -- the streaming load of bench/run: N concurrent SSE chat streams held open
// through a gateway, plus paired probe streams (direct to the upstream vs through the
// gateway, interleaved, while the N are held; sent from a worker thread, probes.mjs) to
// measure the time to first token the gateway adds under that load.
//
//   node bench/streams.mjs '{"gateway": "http://127.0.0.1:P/v1/chat/completions", ...}'
//
// Options (JSON, first argument):
//   gateway, direct        chat-completions URLs (loopback only): the held streams go to
//                          gateway, the direct probes to direct
//   gatewayProbe           the probes' URL through the gateway (default: gateway); bench.mjs
//                          gives the probes an upstream of their own, idle but for them
//   holdModel              "model" sent to the gateway for the N held streams
//   probeModelGateway      "model" for probes through the gateway
//   probeModelDirect       "model" for probes sent straight to the upstream
//   streams                N held streams (default 5000)
//   openConcurrency        at most this many held streams waiting for their first token
//   probes                 probe pairs (default 1000)
//   probeIntervalMs        a new pair every this many ms (default 20)
//   holdMs                 keep the N open at least this long once all are open (default 2000)
//   pids                   gateway PIDs whose VmRSS is sampled every 100 ms
//   rampTimeoutMs          stop waiting for all N to be open after this long (default
//                          30000); streams still waiting count as not open. The probes,
//                          the hold and the close that follow are bounded too.
// Prints one JSON object on stdout. Held streams are closed by the client at the end (the
// gateway must cancel their upstream transfers); fd counts before and after show whether
// it did.

import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { statusKiB, fdCount, cpuSeconds, sleep } from './proc.mjs';
import { openStream } from './sse-stream.mjs';
import { added, summary } from './summary.mjs';

const opts = {
  streams: 5000,
  openConcurrency: 500,
  probes: 1000,
  probeIntervalMs: 20,
  holdMs: 2000,
  pids: [],
  rampTimeoutMs: 30000,
  ...JSON.parse(process.argv[2] ?? '{}'),
};

opts.gatewayProbe ??= opts.gateway;
for (const u of [opts.gateway, opts.gatewayProbe, opts.direct]) {
  if (u && new URL(u).hostname !== '127.0.0.1') throw new Error(`streams.mjs: loopback only, got ${u}`);
}

/** Token events relayed to the held streams (after their first), for CPU per event. */
let heldEvents = 0;
const countHeld = (n) => {
  heldEvents += n;
};

/** A timer that does not keep the process alive: for bounding a wait in Promise.race. */
function idle(ms) {
  return new Promise((r) => setTimeout(r, ms).unref());
}

/** Open descriptors of all the gateway's processes; null when there are none to look at. */
function fds() {
  if (!opts.pids.length) return null;
  return opts.pids.reduce((a, pid) => a + Math.max(0, fdCount(pid)), 0);
}

/**
 * The upstream connections the gateway keeps alive idle in its pools (bascule's /metrics
 * `bascule_upstream_idle_connections`), which are fds it holds on purpose, not leaks; 0 for a
 * gateway without that metric (nginx).
 */
async function upstreamIdle() {
  try {
    const res = await fetch(new URL('/metrics', opts.gateway), { signal: AbortSignal.timeout(2000) });
    const m = /^bascule_upstream_idle_connections (\d+)/m.exec(await res.text());
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

function rssKiB() {
  return opts.pids.reduce((a, pid) => a + statusKiB(pid, 'VmRSS'), 0);
}

async function main() {
  const started = performance.now();
  const out = { options: { ...opts }, errors: [] };
  let rampTimedOut = false;
  const rampTimer = setTimeout(() => {
    rampTimedOut = true;
  }, opts.rampTimeoutMs);
  const timeLeft = () => !rampTimedOut;

  out.rss_idle_kib = rssKiB();
  out.fds_idle = fds();
  let peakRss = out.rss_idle_kib;
  let peakHeld = 0;
  let allOpen = false;
  const progress = (what) => process.stderr.write(`streams: ${Math.round(performance.now() - started)} ms: ${what}\n`);
  const sampler = setInterval(() => {
    const r = rssKiB();
    if (r > peakRss) peakRss = r;
    if (allOpen && r > peakHeld) peakHeld = r;
  }, 100);

  // ---- ramp up N held streams, at most openConcurrency waiting for a first token ----
  const holdAgent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
  const held = [];
  const heldTtft = [];
  let failed = 0;
  let inFlight = 0;
  let next = 0;
  const errorSamples = new Map();
  const noteError = (msg) => errorSamples.set(msg, (errorSamples.get(msg) ?? 0) + 1);
  const rampStart = performance.now();
  await new Promise((resolve) => {
    const launch = () => {
      while (inFlight < opts.openConcurrency && next < opts.streams && timeLeft()) {
        const s = openStream(opts.gateway, opts.holdModel, holdAgent, false, countHeld);
        held.push(s);
        next++;
        inFlight++;
        s.first.then((ttft) => {
          inFlight--;
          if (ttft === null) {
            failed++;
            noteError(s.st.error);
          } else heldTtft.push(ttft);
          if (heldTtft.length + failed >= opts.streams) resolve();
          else launch();
        });
      }
      if (!timeLeft() && inFlight === 0) resolve();
    };
    launch();
    let ticks = 0;
    const guard = setInterval(() => {
      if (++ticks % 25 === 0) progress(`ramp: ${heldTtft.length} with a first token, ${failed} failed, ${inFlight} waiting`);
      if (!timeLeft()) {
        clearInterval(guard);
        resolve();
      }
      if (heldTtft.length + failed >= opts.streams) clearInterval(guard);
    }, 200);
  });
  const rampMs = performance.now() - rampStart;
  progress(`ramp done: ${heldTtft.length} with a first token, ${failed} failed, ${inFlight} waiting`);
  // Streams that already ended (completed or failed after their first token) are not held.
  const openNow = () => held.filter((s) => s.st.ttft !== null && !s.st.ended && !s.st.error).length;
  allOpen = true;
  out.ramp_ms = Math.round(rampMs);
  out.held_open = openNow();
  out.rss_all_open_kib = rssKiB();
  peakHeld = out.rss_all_open_kib;
  out.fds_all_open = fds();
  const cpuAt = () => opts.pids.reduce((a, pid) => a + cpuSeconds(pid), 0);
  const holdCpu0 = cpuAt();
  const holdT0 = performance.now();
  const holdEvents0 = heldEvents;

  // ---- probe pairs while the N are held (in a worker thread: probes.mjs says why) ----
  const holdUntil = performance.now() + opts.holdMs;
  clearTimeout(rampTimer);
  const probeRun = await new Promise((resolve) => {
    const w = new Worker(new URL('./probes.mjs', import.meta.url), {
      workerData: {
        direct: opts.direct, gateway: opts.gatewayProbe,
        probeModelDirect: opts.probeModelDirect, probeModelGateway: opts.probeModelGateway,
        probes: opts.probes, probeIntervalMs: opts.probeIntervalMs,
      },
    });
    w.once('message', resolve);
    w.once('error', (e) => resolve({ fatal: e.stack ?? String(e) }));
    w.once('exit', (code) => resolve({ fatal: `probe worker exited (${code}) without a result` }));
  });
  if (probeRun.fatal) throw new Error(`probes: ${probeRun.fatal}`);
  const probe = { direct: probeRun.direct, gateway: probeRun.gateway };
  const probeBad = probeRun.bad;
  out.probe_new_sockets = probeRun.newSockets;
  for (const e of probeRun.errors) noteError(e);
  progress(`probes: ${probeRun.sent} sent, ${probe.direct.length} + ${probe.gateway.length} ok`);
  while (performance.now() < holdUntil) await sleep(50);
  out.held_open_at_end = openNow();
  // CPU the gateway spent while holding the N (relaying their tokens) and serving probes.
  const holdCpu = cpuAt() - holdCpu0;
  out.cpu_hold_pct = Math.round((holdCpu / ((performance.now() - holdT0) / 1000)) * 1000) / 10;
  out.hold_events = heldEvents - holdEvents0;
  out.cpu_us_per_event = out.hold_events > 0 ? Math.round((holdCpu / out.hold_events) * 1e7) / 10 : null;
  out.rss_peak_held_kib = Math.max(peakHeld, rssKiB());
  out.rss_peak_kib = Math.max(peakRss, out.rss_peak_held_kib);
  out.hwm_kib = opts.pids.reduce((a, pid) => a + statusKiB(pid, 'VmHWM'), 0);

  // ---- close the held streams; the gateway must cancel their upstream transfers ----
  allOpen = false;
  for (const s of held) s.close();
  progress('closing the held streams');
  await Promise.race([Promise.all(held.map((s) => s.done)), idle(5000)]);
  progress('closed');
  holdAgent.destroy();
  let fdsAfter = null;
  if (opts.pids.length) {
    // Give the gateway up to 5 s to notice the closes and release both sides.
    for (let i = 0; i < 50; i++) {
      fdsAfter = fds();
      if (out.fds_idle !== null && fdsAfter <= out.fds_idle + 16) break;
      await sleep(100);
    }
    out.upstream_idle_after_close = await upstreamIdle();
  }
  out.fds_after_close = fdsAfter;
  clearInterval(sampler);

  out.streams_requested = opts.streams;
  out.streams_started = next;
  out.streams_first_token = heldTtft.length;
  out.streams_failed = failed;
  out.ttft_held_ms = summary(heldTtft);
  out.ttft_probe_direct_ms = summary(probe.direct);
  out.ttft_probe_gateway_ms = summary(probe.gateway);
  out.probe_failed = probeBad;
  out.ttft_added_ms = added(out.ttft_probe_gateway_ms, out.ttft_probe_direct_ms);
  // The samples themselves, for a driver that pools several runs (bench.mjs drops them).
  out.raw = { held: heldTtft, direct: probe.direct, gateway: probe.gateway };
  out.rss_per_stream_kib =
    out.held_open > 0 ? Math.round(((out.rss_peak_held_kib - out.rss_idle_kib) / out.held_open) * 100) / 100 : null;
  out.errors = [...errorSamples.entries()].slice(0, 10).map(([msg, n]) => ({ msg, n }));
  out.ramp_timed_out = rampTimedOut;
  // Why a held stream is not open: still waiting for its first token when the ramp gave
  // up, or ended / failed after its first token (before the client closed it).
  out.held_waiting = held.filter((s) => s.st.ttft === null && !s.st.error).length;
  out.held_ended_early = held.filter((s) => s.st.ttft !== null && s.st.endedBeforeClose).length;
  out.held_error_after_first = held.filter((s) => s.st.ttft !== null && s.st.error).length;
  out.ttft_held_over_1s = heldTtft.filter((t) => t > 1000).length;
  out.elapsed_ms = Math.round(performance.now() - started);
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch((e) => {
  process.stdout.write(JSON.stringify({ fatal: e.stack ?? String(e) }) + '\n');
  process.exitCode = 1;
});
