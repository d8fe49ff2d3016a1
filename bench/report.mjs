// SPDX-License-Identifier: MIT
// report.mjs -- prints the benchmark results as plain-text tables. Used by bench.mjs at
// the end of a run, and on its own to re-print a saved run:
//   node bench/report.mjs build/bench/results.json

import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { tlsSection } from './tls.mjs';
import { cacheSection } from './cache.mjs';

const ORDER = [
  'direct', 'nginx', 'bascule', 'bascule-key', 'bascule-limits', 'bascule-redis', 'bascule-redis-limits', 'bascule-b', 'portkey',
];

function fmt(v, d = 2) {
  if (v === null || v === undefined || Number.isNaN(v)) return '-';
  if (typeof v !== 'number') return String(v);
  return v.toFixed(d);
}

function table(head, rows) {
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells) => cells.map((c, i) => (i === 0 ? String(c).padEnd(w[i]) : String(c).padStart(w[i]))).join('  ');
  return [line(head), w.map((n) => '-'.repeat(n)).join('  '), ...rows.map(line)].join('\n');
}

const mib = (kib) => (kib ? kib / 1024 : null);

/**
 * Redis commands per request of the Redis columns, from INFO commandstats read around each
 * measured run: one row per column and phase, then one per command it sent.
 */
function redisSection(r) {
  const rows = [];
  for (const phase of ['throughput', 'paced']) {
    for (const k of ORDER.filter((key) => r[phase]?.[key]?.redis)) {
      const x = r[phase][k].redis;
      rows.push([`${k} (${phase})`, 'all', x.commands, fmt(x.commands_per_req, 4), '-', x.failed,
        fmt(x.redis_cpu_us_per_req, 1)]);
      for (const [cmd, v] of Object.entries(x.by_command)) {
        rows.push(['', cmd, v.calls, fmt(v.per_req, 4), fmt(v.usec_per_call, 2), v.failed, '']);
      }
    }
  }
  if (!rows.length) return [];
  return [
    '', 'Redis commands per request (INFO commandstats around each measured run; each Redis column has its own redis-server)',
    table(['column', 'command', 'calls', 'per request', 'Redis us/call', 'failed', 'redis-server CPU us/req'], rows),
    'Commands run by scripts (redis.call in EVAL) are counted too, under their own names. The bench\'s own INFO',
    'calls are left out; PINGs are the gateway\'s liveness checks (1/s on each command connection).',
  ];
}

/** Part 1: the closed-loop throughput table. */
function throughputSection(r) {
  const s = r.settings;
  const out = [];
  const tp = r.throughput;
  if (!Object.keys(tp).length) return out;
  const base = tp.nginx?.rps;
  const direct = tp.direct;
  out.push('', `1. Throughput, closed loop: wrk ${s.threads} threads x ${s.connections} connections`);
  out.push(table(
    ['target', 'req/s', 'x nginx', 'p50 ms', 'p99 ms', '+p99 ms', 'CPU us/req', 'upstream us/req', 'peak RSS MiB', 'errors'],
    ORDER.filter((k) => tp[k]).map((k) => {
      const t = tp[k];
      return [
        t.label, fmt(t.rps, 0), base ? fmt(t.rps / base) : '-', fmt(t.latency_ms.p50), fmt(t.latency_ms.p99),
        k === 'direct' || !direct ? '-' : fmt(t.latency_ms.p99 - direct.latency_ms.p99),
        fmt(t.cpu_us_per_req, 1), fmt(t.upstream_cpu_us_per_req, 1), fmt(mib(t.peak_rss_kib), 1),
        t.non_2xx + t.socket_errors,
      ];
    }),
  ));
  out.push('CPU us/req: user+system time of the process(es) under test (all nginx workers, all bascule threads) per request.');
  return out;
}

/** Part 2: the paced-load table. */
function pacedSection(r) {
  const s = r.settings;
  const out = [];
  const pc = r.paced;
  if (!Object.keys(pc).length) return out;
  const d = pc.direct;
  out.push('', `2. Paced load: ${s.paced_connections} connections x ~${s.paced_rate_per_connection} req/s each (wrk with a per-request delay)`);
  out.push(table(
    ['target', 'req/s', 'p50 ms', 'p99 ms', 'p99.9 ms', 'max ms', '+p50 ms', '+p99 ms', 'CPU us/req', 'errors'],
    ORDER.filter((k) => pc[k]).map((k) => {
      const t = pc[k];
      const add = (p) => (k === 'direct' || !d ? '-' : fmt(t.latency_ms[p] - d.latency_ms[p], 3));
      return [
        t.label, fmt(t.rps, 0), fmt(t.latency_ms.p50, 3), fmt(t.latency_ms.p99, 3), fmt(t.latency_ms.p999, 3),
        fmt(t.latency_ms.max, 2), add('p50'), add('p99'), fmt(t.cpu_us_per_req, 1), t.non_2xx + t.socket_errors,
      ];
    }),
  ));
  return out;
}

/** Part 3: the streaming figures, one column per gateway. */
function streamsSection(r) {
  const s = r.settings;
  const out = [];
  const gws = ['nginx', 'bascule', 'bascule-b'].filter((k) => r.streams?.[k]);
  if (!gws.length) return out;
  const g = gws.map((k) => r.streams[k]);
  const row = (name, f) => [name, ...g.map((st) => f(st))];
  out.push('', `3. Streaming: ${s.streams} concurrent SSE streams from bascule-sim (${s.stream_token_ms} ms/token), held open, then ` +
    `${s.stream_probes} probe pairs (direct vs through the gateway, interleaved) while they are held; ` +
    `${s.stream_rounds ?? 1} rounds per gateway, taking turns, samples pooled`);
  out.push(table(['figure', ...g.map((st) => st.label)], [
    row('streams with a first token / failed', (st) => `${st.streams_first_token} / ${st.streams_failed}`),
    row('held open at once (after ramp / at end)', (st) => `${st.held_open} / ${st.held_open_at_end}`),
    row('ramp to all open', (st) => `${fmt(st.ramp_ms / 1000, 1)} s${st.ramp_timed_out ? ' (gave up waiting)' : ''}`),
    row('held streams whose first token took > 1 s', (st) => st.ttft_held_over_1s),
    row('RSS idle -> all open (peak), MiB', (st) => `${fmt(mib(st.rss_idle_kib), 1)} -> ${fmt(mib(st.rss_all_open_kib), 1)} (${fmt(mib(st.rss_peak_held_kib), 1)})`),
    row('RSS per held stream', (st) => `${fmt(st.rss_per_stream_kib, 1)} KiB`),
    row('gateway CPU while holding them', (st) => (st.cpu_hold_pct === undefined ? '-' : `${fmt(st.cpu_hold_pct, 1)} % of a core`)),
    row('gateway CPU per token event relayed', (st) => (st.cpu_us_per_event == null ? '-' : `${fmt(st.cpu_us_per_event, 1)} us (${st.hold_events} events)`)),
    row('fds idle / all open / after close', (st) => `${st.fds_idle} / ${st.fds_all_open} / ${st.fds_after_close}` +
      (st.upstream_idle_after_close ? ` (${st.upstream_idle_after_close} pooled upstream)` : '')),
    row('TTFT of the held streams p50 / p99', (st) => `${fmt(st.ttft_held_ms.p50)} / ${fmt(st.ttft_held_ms.p99)} ms`),
    row('probe TTFT direct p50 / p99', (st) => `${fmt(st.ttft_probe_direct_ms.p50, 3)} / ${fmt(st.ttft_probe_direct_ms.p99, 3)} ms`),
    row('probe TTFT via gateway p50 / p99', (st) => `${fmt(st.ttft_probe_gateway_ms.p50, 3)} / ${fmt(st.ttft_probe_gateway_ms.p99, 3)} ms`),
    row('TTFT added p50 / p99', (st) => `${fmt(st.ttft_added_ms.p50, 3)} / ${fmt(st.ttft_added_ms.p99, 3)} ms`),
    row('probe failures direct / via gateway', (st) => `${st.probe_failed.direct} / ${st.probe_failed.gateway}`),
  ]));
  out.push('RSS: all processes of the gateway (nginx: master + workers). Held streams are closed by the client at the end;');
  out.push('"after close" is the gateway\'s fd count once it has noticed (both sides should be released).');
  for (const st of g) if (st.errors?.length) out.push(`errors (${st.label}): ` + st.errors.map((e) => `${e.n}x ${e.msg}`).join('; '));
  return out;
}

/** The ratios worth reading first. */
function sideBySide(r) {
  const out = [];
  const q = r.ratios;
  if (!q) return out;
  const x = (v) => (v === null || v === undefined ? '-' : `${fmt(v)}x`);
  const ms = (v) => (v === null || v === undefined ? '-' : `${fmt(v, 3)} ms`);
  out.push('', 'Side by side');
  out.push(table(['', 'nginx proxy', 'bascule', 'Portkey'], [
    ['throughput vs nginx proxy', x(1), x(q.bascule_over_nginx_rps), x(q.portkey_over_nginx_rps)],
    ['p99 added over direct, closed loop', ms(q.nginx_added_p99_closed_ms), ms(q.bascule_added_p99_closed_ms), ms(q.portkey_added_p99_closed_ms)],
    ['p50 added over direct, paced', ms(q.nginx_added_p50_paced_ms), ms(q.bascule_added_p50_paced_ms), ms(q.portkey_added_p50_paced_ms)],
    ['p99 added over direct, paced', ms(q.nginx_added_p99_paced_ms), ms(q.bascule_added_p99_paced_ms), ms(q.portkey_added_p99_paced_ms)],
    ['TTFT added p50 / p99, streams', `${ms(q.nginx_ttft_added_p50_ms)} / ${ms(q.nginx_ttft_added_p99_ms)}`,
      `${ms(q.bascule_ttft_added_p50_ms)} / ${ms(q.bascule_ttft_added_p99_ms)}`, '-'],
    ['RSS per held stream', q.nginx_rss_per_stream_kib === null ? '-' : `${fmt(q.nginx_rss_per_stream_kib, 1)} KiB`,
      q.bascule_rss_per_stream_kib === null ? '-' : `${fmt(q.bascule_rss_per_stream_kib, 1)} KiB`, '-'],
  ]));
  if (q.bascule_over_portkey_rps !== null) out.push(`bascule / Portkey throughput: ${x(q.bascule_over_portkey_rps)}`);
  if (q.redis_over_memory_rps != null || q.redis_limits_over_memory_limits_rps != null) {
    out.push(`store redis / memory throughput: no limits ${x(q.redis_over_memory_rps)}, ` +
      `with limits ${x(q.redis_limits_over_memory_limits_rps)}`);
  }
  return out;
}

/** The bars, then what was skipped and the notes. */
function barsSection(r) {
  const out = [];
  if (r.verdicts?.length) {
    out.push('', 'Bars');
    out.push(table(['what', 'value', 'bar', 'result'], r.verdicts.map((v) => [
      v.what, v.value === null ? '-' : `${v.value} ${v.unit}`.trim(), v.bar, v.pass === null ? 'not measured' : v.pass ? 'PASS' : 'FAIL',
    ])));
  }
  for (const k of r.skipped ?? []) {
    out.push(`SKIPPED ${k.part}${k.target ? ` / ${k.target}` : ''}: ${k.reason}`);
  }
  for (const n of r.notes ?? []) out.push(`note: ${n}`);
  return out;
}

export function printReport(r) {
  const s = r.settings;
  const out = [];
  out.push(`bascule benchmarks  ${r.when}  (${r.machine.cpus} cores, ${r.machine.model ?? '?'}; a shared box: compare ratios, not absolutes)`);
  out.push(`request ${s.request_bytes} B POST /v1/chat/completions, response ${s.response_bytes} B; ${s.seconds} s per target and load, ` +
    `in ${s.rounds} (paced: ${s.paced_rounds}) interleaved rounds (latencies: median over rounds), after ${s.warmup} s warm-up`);
  out.push(...throughputSection(r), ...pacedSection(r), ...tlsSection(r), ...cacheSection(r), ...streamsSection(r), ...sideBySide(r), ...redisSection(r));
  out.push(...barsSection(r));
  process.stdout.write(out.join('\n') + '\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  printReport(JSON.parse(fs.readFileSync(process.argv[2] ?? 'build/bench/results.json', 'utf8')));
}
