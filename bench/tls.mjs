// SPDX-License-Identifier: MIT
// tls.mjs -- part "tls" of bench/run: the https:// upstream path. For each of two
// upstream modes -- HTTP/2 offered (bascule negotiates h2 through libcurl) and HTTP/1.1
// only -- a static nginx answers the bench request over TLS with a self-signed
// certificate made here with openssl (into build/bench/tls/), and two columns run in
// interleaved rounds in front of it: nginx proxy_pass https:// with a keep-alive pool
// (the floor) and bascule with an https:// provider that trusts the bench CA through
// `tls: { ca_file }`. Columns: closed-loop throughput (as part 1), CPU per request, and
// the upstream connections each column held (peak of its ESTABLISHED sockets to the
// upstream's port, sampled every 100 ms while wrk runs). See bench/README.md.
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { freePort, sleep } from './proc.mjs';
import { nginxQuote, RESPONSE, tlsBenchYaml } from './configs.mjs';
import { closedLoopRounds } from './rounds.mjs';

export const TLS_MODES = [
  { key: 'h2', http2: 'http2', label: 'HTTPS, HTTP/2 offered' },
  { key: 'h1', http2: '', label: 'HTTPS, HTTP/1.1 only' },
];

/** A self-signed P-256 certificate for 127.0.0.1 and localhost, its own CA; null if openssl fails. */
export function makeCert(dir) {
  fs.mkdirSync(dir, { recursive: true });
  const cert = path.join(dir, 'bench-ca.pem');
  const key = path.join(dir, 'bench-key.pem');
  const r = spawnSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2',
    '-subj', '/CN=bascule bench', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-keyout', key, '-out', cert,
  ], { encoding: 'utf8', timeout: 10000 });
  if (r.status !== 0) return { skip: `openssl req failed: ${(r.stderr || r.error || '').toString().trim()}` };
  return { cert, key };
}

/** GET <url> over TLS, trusting <ca>: true on a 200. */
export function httpsOk(url, ca, timeoutMs = 2000) {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    if (u.hostname !== '127.0.0.1') return reject(new Error(`refusing non-loopback URL ${url}`));
    const req = https.get({ host: u.hostname, port: u.port, path: u.pathname, ca, agent: false }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve(true) : reject(new Error(`HTTP ${res.statusCode}`))));
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}

/** The inodes of the ESTABLISHED TCP sockets whose remote port is <port> (/proc/net/tcp{,6}). */
function establishedTo(port) {
  const out = new Set();
  const hex = port.toString(16).toUpperCase().padStart(4, '0');
  for (const f of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = fs.readFileSync(f, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const c = line.trim().split(/\s+/);
      if (c.length < 10 || c[3] !== '01') continue;
      if (c[2].endsWith(`:${hex}`)) out.add(c[9]);
    }
  }
  return out;
}

/** How many of <pids>' sockets are ESTABLISHED connections to 127.0.0.1:<port>. */
export function upstreamConnections(pids, port) {
  const to = establishedTo(port);
  const seen = new Set();
  for (const pid of pids) {
    let fds = [];
    try {
      fds = fs.readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      let l = '';
      try {
        l = fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      const m = /^socket:\[(\d+)\]$/.exec(l);
      if (m && to.has(m[1])) seen.add(m[1]);
    }
  }
  return seen.size;
}

/** Samples upstreamConnections every 100 ms until stop() is called; stop() resolves the peak. */
export function connectionSampler(pidsFn, port) {
  let peak = 0;
  let last = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      last = upstreamConnections(pidsFn(), port);
      peak = Math.max(peak, last);
      await sleep(100);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { peak, last };
    },
  };
}

/**
 * Runs part "tls". <h> holds bench.mjs's helpers: C, log, startNginx, startBascule, chatOk,
 * runWrk, measureRound, aggregate, stop(rec), maxGatewayConnections, outDir.
 */
export async function tlsPart(results, h) {
  const { C } = h;
  results.tls = {};
  if (!C.parts.has('tls')) return;
  const cert = makeCert(path.join(h.outDir, 'tls'));
  if (cert.skip) {
    results.skipped.push({ part: 'tls', reason: cert.skip });
    return;
  }
  const ca = fs.readFileSync(cert.cert);
  for (const mode of TLS_MODES) {
    const up = await h.startNginx(`nginx-tls-${mode.key}`, 'nginx-tls-static.conf.in', {
      RESPONSE: nginxQuote(RESPONSE), LISTEN_OPTS: mode.http2, CERT: cert.cert, KEY: cert.key, ANSWER_PORT: await freePort(),
    }, (u) => httpsOk(`${u.replace('http:', 'https:')}/v1/models`, ca));
    if (up.skip) {
      results.skipped.push({ part: `tls ${mode.key}`, reason: up.skip });
      continue;
    }
    const cols = [
      {
        key: 'nginx', label: `nginx proxy_pass https (${C.workers} workers)`,
        start: () => h.startNginx(`nginx-tls-proxy-${mode.key}`, 'nginx-tls-proxy.conf.in', {
          WORKERS: C.workers, UPSTREAM_PORT: up.port, CA: cert.cert,
        }),
      },
      {
        key: 'bascule', label: `bascule (${C.workers} workers)`,
        start: async () => h.startBascule(`bascule-tls-${mode.key}`, tlsBenchYaml({
          port: await freePort(), upstreamPort: up.port, workers: C.workers,
          maxConnections: h.maxGatewayConnections(), ca: cert.cert,
        }), (url) => h.chatOk(url)),
      },
      // The same binary with http_client: curl (libcurl: HTTP/2 when offered); BENCH_TLS_CURL=0 skips it.
      {
        key: 'curl', target: 'bascule', label: `bascule http_client: curl (${C.workers} workers)`,
        start: async () => h.startBascule(`bascule-tls-curl-${mode.key}`, tlsBenchYaml({
          port: await freePort(), upstreamPort: up.port, workers: C.workers,
          maxConnections: h.maxGatewayConnections(), ca: cert.cert, client: 'curl',
        }), (url) => h.chatOk(url)),
      },
    ];
    const live = [];
    for (const c of cols) {
      if (!C.targets.has(c.target ?? c.key)) continue;
      if (c.key === 'curl' && process.env.BENCH_TLS_CURL === '0') continue;
      const t = await c.start();
      if (t.skip) {
        results.skipped.push({ part: `tls ${mode.key}`, target: c.key, reason: t.skip });
        continue;
      }
      try {
        await h.chatOk(t.url);
        live.push({ ...c, t, rounds: [], conns: [], failed: null });
      } catch (e) {
        results.skipped.push({ part: `tls ${mode.key}`, target: c.key, reason: `wrong answer: ${e.message}` });
        await h.stop(t.rec);
      }
    }
    await closedLoopRounds(live, h, `tls ${mode.key}`, async (x, per, closed) => {
      const s = connectionSampler(() => x.t.pids(), up.port);
      try {
        return await h.measureRound(x.t, up, per, closed);
      } finally {
        x.conns.push((await s.stop()).peak);
      }
    });
    const out = {};
    for (const x of live) {
      if (x.failed || !x.rounds.length) {
        results.skipped.push({ part: `tls ${mode.key}`, target: x.key, reason: `failed: ${x.failed}` });
      } else {
        out[x.key] = { ...h.aggregate(x.rounds, x.label, x.t.pids()), upstream_connections_peak: Math.max(...x.conns) };
      }
      await h.stop(x.t.rec);
    }
    await h.stop(up.rec);
    const div = (a, b) => (a && b ? Math.round((a / b) * 1000) / 1000 : null);
    results.tls[mode.key] = {
      label: mode.label,
      client_connections: C.connections,
      columns: out,
      bascule_over_nginx_rps: div(out.bascule?.rps, out.nginx?.rps),
      bascule_over_nginx_cpu_per_req: div(out.bascule?.cpu_us_per_req, out.nginx?.cpu_us_per_req),
      curl_over_nginx_rps: div(out.curl?.rps, out.nginx?.rps),
      curl_over_nginx_cpu_per_req: div(out.curl?.cpu_us_per_req, out.nginx?.cpu_us_per_req),
    };
  }
}

/** The report's lines for part "tls". */
export function tlsSection(r) {
  const modes = Object.values(r.tls ?? {});
  if (!modes.length) return [];
  const out = ['', `TLS upstream (closed loop, ${modes[0].client_connections} client connections)`];
  out.push('  upstream                 column    req/s      p50 ms  p99 ms  CPU us/req  upstream conns  ratio req/s  ratio CPU');
  for (const m of modes) {
    for (const k of ['nginx', 'bascule', 'curl']) {
      const c = m.columns[k];
      if (!c) continue;
      const ratio = k === 'bascule' ? [m.bascule_over_nginx_rps, m.bascule_over_nginx_cpu_per_req]
        : k === 'curl' ? [m.curl_over_nginx_rps, m.curl_over_nginx_cpu_per_req] : [1, 1];
      out.push(`  ${m.label.padEnd(24)} ${k.padEnd(8)} ${String(c.rps).padStart(9)} ${String(c.latency_ms.p50).padStart(8)} ` +
        `${String(c.latency_ms.p99).padStart(7)} ${String(c.cpu_us_per_req).padStart(11)} ${String(c.upstream_connections_peak).padStart(15)} ` +
        `${String(ratio[0] ?? '-').padStart(12)} ${String(ratio[1] ?? '-').padStart(10)}`);
    }
  }
  return out;
}

/** The bars of part "tls" (issue targets): connections held, throughput and CPU against nginx. */
export function tlsVerdicts(r) {
  const out = [];
  for (const m of Object.values(r.tls ?? {})) {
    const b = m.columns.bascule;
    const conns = b ? b.upstream_connections_peak : null;
    out.push({ what: `bascule upstream connections held, ${m.label}`, value: conns, unit: `(${m.client_connections} clients)`,
      bar: `<= ${m.client_connections}`, pass: conns === null ? null : conns <= m.client_connections });
    const tp = m.bascule_over_nginx_rps;
    out.push({ what: `bascule / nginx throughput, ${m.label}`, value: tp, unit: 'x', bar: '>= 0.8 (target)', pass: tp === null ? null : tp >= 0.8 });
    const cpu = m.bascule_over_nginx_cpu_per_req;
    out.push({ what: `bascule / nginx CPU per request, ${m.label}`, value: cpu, unit: 'x', bar: '<= 1.3 (target)', pass: cpu === null ? null : cpu <= 1.3 });
  }
  return out;
}
