// The connection cap (src/server/cap.c): the cap is derived from RLIMIT_NOFILE so that the
// gateway never runs out of fds for a new client, and at the cap idle keep-alive
// connections are closed, the longest idle first, so that a new client is served instead
// of waiting in the kernel's queue forever.
import { test, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import net from 'node:net';
import { readdirSync } from 'node:fs';
import { startGateway, waitFor, stopAll } from '../lib/harness.mjs';

after(stopAll);

const CONFIG = `
listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: info, format: json }
providers:
  p: { kind: openai_compatible, base_url: "http://127.0.0.1:9/v1", keys: ["k"], health: { probe: none } }
targets:
  t@p: { provider: p, model: m }
routes:
  r: { primary: [t@p] }
`;

const IDLE = 1100; // more than the 1024 fds the gateway gets
const BATCH = 50;

/**
 * Opens a keep-alive connection, sends one request and resolves once it was answered (the
 * socket stays open and idle), closed, or not answered within <ms>: the socket is kept in
 * <socks> either way, for the cleanup.
 */
function openIdle(port, socks, ms) {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    socks.push(s);
    const done = (what) => {
      clearTimeout(timer);
      resolve(what);
    };
    const timer = setTimeout(() => done('no answer'), ms);
    s.on('error', () => done('error')); // a connection closed to make room may be reset
    s.once('close', () => done('closed'));
    s.once('data', (d) => done(String(d).split('\r\n')[0]));
    s.once('connect', () => s.write('GET /health/live HTTP/1.1\r\nHost: localhost\r\n\r\n'));
  });
}

test('idle keep-alive connections do not starve a new client under a low fd limit', async (t) => {
  const gw = await startGateway({ config: CONFIG, prefix: ['prlimit', '--nofile=1024:1024', '--'] });
  const socks = [];
  try {
    const m = await waitFor(() => /connection cap (\d+) \(limits\.max_connections 20000, RLIMIT_NOFILE 1024\)/.exec(gw.logs()), {
      what: 'the connection cap line',
    });
    const cap = Number(m[1]);
    assert.ok(cap > 0 && cap <= 512, `cap ${cap}: each connection may need an upstream fd too`);

    const seen = {};
    for (let i = 0; i < IDLE; i += BATCH) {
      const got = await Promise.all(Array.from({ length: BATCH }, () => openIdle(gw.port, socks, 5000)));
      for (const g of got) seen[g] = (seen[g] ?? 0) + 1;
    }
    assert.ok((seen['HTTP/1.1 200 OK'] ?? 0) >= IDLE - 10, `answers: ${JSON.stringify(seen)}`);
    const open = socks.filter((s) => !s.destroyed && s.readyState === 'open').length;
    assert.ok(open > IDLE / 4, `${open} idle connections still open`);
    // The gateway kept fds free for upstream sockets, files and the store.
    const fds = readdirSync(`/proc/${gw.proc.pid}/fd`).length;
    assert.ok(fds <= cap + 128, `${fds} fds open with a cap of ${cap}`);

    // A new client is served. The bound is generous: what matters is that it completes.
    const t0 = performance.now();
    const res = await fetch(`${gw.url}/health/live`, { signal: AbortSignal.timeout(10_000) });
    assert.equal(res.status, 200);
    await res.arrayBuffer();
    t.diagnostic(`new client served in ${(performance.now() - t0).toFixed(1)} ms beside ${open} idle connections`);
    assert.match(gw.logs(), /closing idle connections, the longest idle first/);
    assert.doesNotMatch(gw.logs(), /Too many open files/);
  } finally {
    for (const s of socks) s.destroy();
  }
  await gw.stop();
});
