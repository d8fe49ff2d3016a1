// SPDX-License-Identifier: MIT
// cache.mjs -- part "cache" of bench/run: what a response-cache hit costs. The bench request
// (bench/request.json) through bascule with `cache: { mode: exact }` on its route, warmed by
// one miss (the static nginx upstream answers it once), so every measured request is a hit
// answered from the cache, against nginx answering the same POST with the same bytes from
// its config (`return 200 '<the hit's body>'`: a static answer of the same size), as many
// workers each. With redis-server on PATH a third column keeps the answers in Redis
// (`cache.store: redis`): one MGET per hit. wrk, closed loop, the same connections and
// seconds, the columns in interleaved rounds of one run. Reported: requests/s, p50/p99,
// the ratio to nginx, CPU per request; the hits are checked on bascule's /metrics (every
// request but the warming miss must be one). See bench/README.md.
import { freePort, httpRequest, sleep } from './proc.mjs';
import { closedLoopRounds } from './rounds.mjs';
import { RESPONSE, chatBenchYaml, nginxQuote, redisStore } from './configs.mjs';
import { startRedis } from './redis.mjs';

const ROUTE = 'bench-chat';

/** chatBenchYaml with an exact cache on the bench route (answers shared by every client). */
function cacheYaml(opts, shared) {
  let yaml = chatBenchYaml(opts).replace(
    `  ${ROUTE}:\n    primary: [bench-model@bench-upstream]\n`,
    `  ${ROUTE}:\n    primary: [bench-model@bench-upstream]\n    cache: { mode: exact, scope: route, ttl_s: 3600 }\n`);
  if (!yaml.includes('cache: { mode: exact')) throw new Error('cache.mjs: the bench route was not found in the YAML');
  if (shared) yaml += 'cache: { store: redis }\n';
  return yaml;
}

/** The bench request's answer from <url>: { status, cache, body }. */
async function ask(url, body) {
  const r = await httpRequest(`${url}/v1/chat/completions`, {
    method: 'POST', body, timeoutMs: 3000,
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench-not-a-real-key' },
  });
  return { status: r.status, cache: r.headers?.['x-bascule-cache'] ?? null, body: r.body };
}

/** bascule_cache_requests_total{route="bench-chat",result=<result>} from /metrics. */
async function cacheCount(url, result) {
  const r = await httpRequest(`${url}/metrics`, { timeoutMs: 3000 });
  const re = new RegExp(`^bascule_cache_requests_total\\{[^}]*route="${ROUTE}"[^}]*result="${result}"[^}]*\\} (\\d+)`, 'm');
  const m = re.exec(r.body);
  return m ? Number(m[1]) : 0;
}

/**
 * Runs part "cache". <h> holds bench.mjs's helpers: C, log, procs, which, startNginx,
 * startBascule, runWrk, measureRound, aggregate, stop(rec), maxGatewayConnections, request
 * (the body).
 */
export async function cachePart(results, h) {
  const { C, log } = h;
  if (!C.parts.has('cache')) return;
  const part = (reason, target) => results.skipped.push({ part: 'cache', ...(target ? { target } : {}), reason });
  if (!h.which('wrk')) return part('wrk not found (apt-get install wrk)');
  const up = await h.startNginx('nginx-cache-upstream', 'nginx-static.conf.in', { RESPONSE: nginxQuote(RESPONSE) });
  if (up.skip) return part(up.skip);
  const live = [];
  const stops = [];
  try {
    const gw = async (extra = {}) => ({
      port: await freePort(), upstreamPort: up.port, workers: C.workers, maxConnections: h.maxGatewayConnections(), ...extra,
    });
    const cols = [{
      key: 'bascule', label: `bascule, cache hit in memory (${C.workers} workers)`,
      start: async () => h.startBascule('bascule-cache', cacheYaml(await gw(), false), async (url) => (await ask(url, h.request)).status === 200),
    }];
    if (h.which('redis-server')) {
      cols.push({
        key: 'bascule-redis', label: `bascule, cache hit in Redis (${C.workers} workers)`,
        start: async () => {
          const redis = await startRedis(h.procs, h.which('redis-server'), C.tmp, 'redis-cache');
          if (redis.skip) return redis;
          stops.push(redis.rec);
          return h.startBascule('bascule-cache-redis', cacheYaml(await gw({ store: redisStore(redis.port) }), true),
            async (url) => (await ask(url, h.request)).status === 200);
        },
      });
    }
    let hitBody = null;
    for (const c of cols) {
      if (!C.targets.has(c.key)) continue;
      log(`cache: ${c.key}: starting`);
      const t = await c.start();
      if (t.skip) {
        part(t.skip, c.key);
        continue;
      }
      stops.push(t.rec);
      // The ready probe's request was the miss that stored the answer; a store in Redis is
      // written after the answer went out: poll until the hit, bounded.
      let hit = null;
      for (let i = 0; i < 100 && hit?.cache !== 'hit'; i++) {
        hit = await ask(t.url, h.request);
        if (hit.cache !== 'hit') await sleep(20);
      }
      if (hit?.cache !== 'hit') {
        part(`no cache hit after the warming miss (x-bascule-cache: ${hit?.cache})`, c.key);
        continue;
      }
      hitBody ??= hit.body;
      live.push({ ...c, t, rounds: [], failed: null, misses0: await cacheCount(t.url, 'miss') });
    }
    if (!live.length) return part('no bascule column came up');
    // nginx answering the hit's very bytes (a static answer of the same size).
    let quoted;
    try {
      quoted = nginxQuote(hitBody);
    } catch {
      quoted = nginxQuote(RESPONSE);
      results.notes.push('cache: the hit\'s body cannot be an nginx string; nginx serves the upstream answer instead');
    }
    const ng = await h.startNginx('nginx-cache-static', 'nginx-cache-static.conf.in', { WORKERS: C.workers, RESPONSE: quoted });
    if (ng.skip) return part(ng.skip, 'nginx');
    stops.push(ng.rec);
    live.unshift({ key: 'nginx', label: `nginx static answer (${C.workers} workers)`, t: ng, rounds: [], failed: null });
    const seconds = await closedLoopRounds(live, h, 'cache', (x, per, closed) => h.measureRound(x.t, null, per, closed));
    const out = {};
    for (const x of live) {
      if (x.failed || !x.rounds.length) {
        part(`failed: ${x.failed}`, x.key);
        continue;
      }
      out[x.key] = h.aggregate(x.rounds, x.label, x.t.pids());
      if (x.key !== 'nginx') {
        out[x.key].misses_during_run = (await cacheCount(x.t.url, 'miss')) - x.misses0;
        out[x.key].hits_total = await cacheCount(x.t.url, 'hit');
      }
    }
    const div = (a, b) => (a && b ? Math.round((a / b) * 1000) / 1000 : null);
    results.cache = {
      connections: C.connections,
      threads: C.threads,
      seconds_per_column: seconds,
      answer_bytes: Buffer.byteLength(hitBody),
      columns: out,
    };
    for (const k of ['bascule', 'bascule-redis']) {
      if (!out[k] || !out.nginx) continue;
      results.cache[`${k}_over_nginx_rps`] = div(out[k].rps, out.nginx.rps);
      results.cache[`${k}_p50_added_ms`] = Math.round((out[k].latency_ms.p50 - out.nginx.latency_ms.p50) * 1000) / 1000;
      results.cache[`${k}_p99_added_ms`] = Math.round((out[k].latency_ms.p99 - out.nginx.latency_ms.p99) * 1000) / 1000;
    }
  } finally {
    for (const rec of stops.reverse()) await h.stop(rec);
    await h.stop(up.rec);
  }
}

/** The report's lines for part "cache". */
export function cacheSection(r) {
  const c = r.cache;
  if (!c || !Object.keys(c.columns).length) return [];
  const out = ['', `Cache hit vs a static answer (closed loop, ${c.threads} threads x ${c.connections} connections, ` +
    `${c.seconds_per_column} s per column in interleaved rounds, answer ${c.answer_bytes} bytes)`];
  out.push('  column                                      req/s   p50 ms   p99 ms  CPU us/req  ratio req/s  misses');
  for (const k of ['nginx', 'bascule', 'bascule-redis']) {
    const x = c.columns[k];
    if (!x) continue;
    const ratio = k === 'nginx' ? 1 : c[`${k}_over_nginx_rps`];
    const misses = k === 'nginx' ? '-' : x.misses_during_run;
    out.push(`  ${x.label.padEnd(40)} ${String(x.rps).padStart(9)} ${String(x.latency_ms.p50).padStart(8)} ` +
      `${String(x.latency_ms.p99).padStart(8)} ${String(x.cpu_us_per_req).padStart(11)} ${String(ratio ?? '-').padStart(12)} ${String(misses).padStart(7)}`);
  }
  return out;
}
