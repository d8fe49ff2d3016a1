// SPDX-License-Identifier: MIT
// Clients that hold connections without a key, or by sending slowly (issue 24, item 5): with
// clients: configured a head without a valid key is answered 401 before its body is read and
// its connection closed; a body must keep limits.min_body_rate_bps; at the connection cap,
// connections still receiving a request give way to new ones. The real gateway against
// bascule-sim; the slow clients are raw sockets of the test.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { startSim, startGateway, waitFor } from '../lib/harness.mjs';

const KEY = 'alpha-key-0123456789abcdef';
const ADMIN = 'admin-key-0123456789abcdef';
const CAP = 100;
let sim, gw;

before(async () => {
  sim = await startSim();
  gw = await startGateway({
    env: { TEST_ALPHA_KEY: KEY },
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 2
admin: { key: "${ADMIN}" }
limits: { max_connections: ${CAP}, min_body_rate_bps: 1000 }
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-s"], health: { probe: none } }
targets:
  t: { provider: sim, model: slow-m }
routes:
  r: { primary: [t] }
clients:
  alpha: { key: "\${TEST_ALPHA_KEY}", routes: ["*"] }
`,
  });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

const chatBody = JSON.stringify({ model: 'r', messages: [{ role: 'user', content: 'hi' }] });

/** The head of a chat request with a body of <length> bytes still to come. */
function head({ path = '/v1/chat/completions', length = chatBody.length, extra = '' } = {}) {
  return `POST ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${length}\r\n${extra}\r\n`;
}

function parse(text) {
  const end = text.indexOf('\r\n\r\n');
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const headers = {};
  for (const l of lines) {
    const i = l.indexOf(':');
    headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body: text.slice(end + 4) };
}

/**
 * A raw connection: <send>(bytes), <until>(pred, ms) waits for the received text to satisfy
 * <pred> (or the connection to end, or <ms>), resolving with {text, ended}.
 */
function open() {
  const sock = net.connect(gw.port, '127.0.0.1');
  let text = '';
  let ended = false;
  const waiters = new Set();
  const poke = () => {
    for (const w of waiters) w();
  };
  sock.on('data', (d) => {
    text += d.toString('utf8');
    poke();
  });
  const end = () => {
    ended = true;
    poke();
  };
  sock.on('end', end);
  sock.on('close', end);
  sock.on('error', end);
  const connected = new Promise((resolve) => sock.once('connect', resolve));
  return {
    sock,
    send: async (bytes) => {
      await connected;
      if (!ended) sock.write(bytes);
    },
    until: (pred, ms) =>
      new Promise((resolve) => {
        const check = () => {
          if (!pred(text) && !ended) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve({ text, ended });
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          resolve({ text, ended });
        }, ms);
        waiters.add(check);
        check();
      }),
    close: () => sock.destroy(),
  };
}

const complete = (t) => {
  const end = t.indexOf('\r\n\r\n');
  if (end < 0) return false;
  const m = /content-length:\s*(\d+)/i.exec(t.slice(0, end));
  return m && Buffer.byteLength(t.slice(end + 4)) >= Number(m[1]);
};

test('a head without a valid key is answered 401 at once and its connection closed, body unread', async () => {
  await sim.reset();
  const cases = [
    ['no key', '', 'invalid_api_key'],
    ['a wrong key', 'Authorization: Bearer not-a-key-0123456789\r\n', 'invalid_api_key'],
    ['no key, Expect: 100-continue', 'Expect: 100-continue\r\n', 'invalid_api_key'],
  ];
  for (const [what, extra, code] of cases) {
    const c = open();
    await c.send(head({ length: 100000, extra }));
    // The body is never sent: the answer and the close must come without it.
    const { text, ended } = await c.until(() => false, 5000);
    c.close();
    assert.ok(text.startsWith('HTTP/1.1 401 '), `${what}: ${JSON.stringify(text.slice(0, 80))}`);
    assert.ok(ended, `${what}: the connection closed without the body`);
    const r = parse(text);
    assert.equal(r.headers.connection, 'close', what);
    assert.equal(JSON.parse(r.body).error.code, code, what);
    assert.doesNotMatch(text, /100 Continue/, what);
  }
  // The Anthropic surface answers in its own dialect.
  const a = open();
  await a.send(head({ path: '/v1/messages', length: 100000 }));
  const got = await a.until((t) => complete(t), 5000);
  a.close();
  const r = parse(got.text);
  assert.equal(r.status, 401);
  assert.equal(r.headers['x-should-retry'], 'false');
  assert.equal(JSON.parse(r.body).error.type, 'authentication_error');
  assert.equal(await sim.calls('slow-m'), 0);
  const early = () => gw.accessLog().filter((l) => l.type === 'access' && /before the body was read/.test(l.detail ?? ''));
  await waitFor(() => early().length >= 4, { what: 'four access lines' });
  const lines = early();
  assert.equal(lines.length, 4, JSON.stringify(lines));
  assert.ok(lines.every((l) => l.status === 401));
});

test('a head that passes is read on: a keyed request and the admin key get 100 Continue and are served', async () => {
  await sim.reset();
  const cases = [
    ['a client key', head({ extra: `Authorization: Bearer ${KEY}\r\nExpect: 100-continue\r\n` }), chatBody, 200],
    ['x-api-key', head({ extra: `x-api-key: ${KEY}\r\nExpect: 100-continue\r\n` }), chatBody, 200],
    ['the admin key on /admin', `POST /admin/targets/t/disable HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n` +
      `Authorization: Bearer ${ADMIN}\r\nExpect: 100-continue\r\n\r\n`, '{}', 200],
  ];
  for (const [what, bytes, body, status] of cases) {
    const c = open();
    await c.send(bytes);
    const cont = await c.until((t) => t.includes('\r\n\r\n'), 5000);
    assert.ok(cont.text.startsWith('HTTP/1.1 100 Continue\r\n\r\n'), `${what}: ${JSON.stringify(cont.text.slice(0, 80))}`);
    await c.send(body);
    const { text } = await c.until((t) => complete(t.slice(25)), 5000);
    c.close();
    assert.equal(parse(text.slice(25)).status, status, what);
  }
  assert.equal(await sim.calls('slow-m'), 2);
  await fetch(`${gw.url}/admin/targets/t/enable`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}` } });
});

test('a keyed body under limits.min_body_rate_bps is cut with 408 once the grace is spent', async () => {
  await sim.reset();
  const c = open();
  await c.send(head({ length: 1000, extra: `Authorization: Bearer ${KEY}\r\n` }));
  const t0 = performance.now();
  const timer = setInterval(() => c.send('x'), 100); // 10 bytes/s, the limit is 1000
  let got;
  try {
    got = await c.until((t) => complete(t), 8000);
  } finally {
    clearInterval(timer);
    c.close();
  }
  const took = performance.now() - t0;
  const r = parse(got.text);
  assert.equal(r.status, 408, JSON.stringify(got.text.slice(0, 200)));
  assert.equal(JSON.parse(r.body).error.code, 'request_timeout');
  assert.match(JSON.parse(r.body).error.message, /too slow: under 1000 bytes\/s/);
  assert.equal(r.headers.connection, 'close');
  // The grace is 2 s, and each byte received bought 1 ms more.
  assert.ok(took >= 1800, `cut after ${took.toFixed(0)} ms, within the grace`);
  assert.equal(await sim.calls('slow-m'), 0);
});

/** One keyed chat request on a connection of its own; resolves with its status. */
function probe() {
  return new Promise((resolve) => {
    const req = http.request({
      host: '127.0.0.1', port: gw.port, method: 'POST', path: '/v1/chat/completions', agent: false,
      headers: {
        'content-type': 'application/json', 'content-length': Buffer.byteLength(chatBody),
        authorization: `Bearer ${KEY}`,
      },
    }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
      res.on('error', () => resolve('error'));
    });
    req.on('error', (e) => resolve(`error ${e.code}`));
    req.setTimeout(10_000, () => req.destroy(new Error('timeout')));
    req.end(chatBody);
  });
}

/**
 * <n> attackers, each holding a connection that sends <first> and then one byte of <drip>
 * every <gapMs> (a new connection when one closes), until stop(). Counts what they get.
 */
function flood(n, first, drip, gapMs) {
  const stats = { opened: 0, answered: {}, bytes: 0 };
  const socks = new Set();
  let running = true;
  const one = () => {
    if (!running) return;
    const s = net.connect(gw.port, '127.0.0.1');
    socks.add(s);
    let seen = '';
    let timer = null;
    let i = 0;
    s.on('connect', () => {
      stats.opened++;
      s.write(first);
      timer = setInterval(() => {
        if (s.writable) {
          s.write(drip[i++ % drip.length]);
          stats.bytes++;
        }
      }, gapMs);
    });
    s.on('data', (d) => {
      if (!seen) {
        seen = String(d).split('\r\n')[0];
        stats.answered[seen] = (stats.answered[seen] ?? 0) + 1;
      }
    });
    s.on('error', () => {});
    s.on('close', () => {
      clearInterval(timer);
      socks.delete(s);
      if (running) setTimeout(one, 200); // the attacker comes back
    });
  };
  for (let k = 0; k < n; k++) one();
  return {
    stats,
    stop: () => {
      running = false;
      for (const s of socks) s.destroy();
    },
  };
}

/**
 * Keyed probes, one after the other, while the flood runs: for <ms> (three of the attackers'
 * 2 s drip rounds) and at least 20, at most 150 and 30 s. Every probe counts, whenever it
 * ran: the assertion is that all were served, not how many fit.
 */
async function probeDuring(ms) {
  const seen = {};
  let sent = 0;
  const t0 = Date.now();
  const elapsed = () => Date.now() - t0;
  while (sent < 150 && (sent < 20 || elapsed() < ms) && elapsed() < 30_000) {
    const s = await probe();
    seen[s] = (seen[s] ?? 0) + 1;
    sent++;
    await new Promise((resolve) => setTimeout(resolve, 40)); // spread over the rounds
  }
  return { seen, sent };
}

/**
 * Starts <CAP> attackers sending <first> then a byte of <drip> every 2 s, waits until they
 * all connected, probes for 6 s, stops them. Every probe must have been served.
 */
async function probeUnderFlood(t, first, drip) {
  await sim.reset();
  const f = flood(CAP, first, drip, 2000);
  try {
    await waitFor(() => f.stats.opened >= CAP, { timeoutMs: 10_000, what: `${CAP} attacker connections` });
    const { seen, sent } = await probeDuring(6000);
    t.diagnostic(`probes ${JSON.stringify(seen)}; attackers ${JSON.stringify(f.stats)}`);
    assert.deepEqual(seen, { 200: sent }, 'every keyed probe served');
    assert.ok(sent >= 20);
    assert.equal(await sim.calls('slow-m'), sent);
    return f.stats;
  } finally {
    f.stop();
  }
}

test('100 connections trickling bodies without a key do not keep keyed clients out', async (t) => {
  const stats = await probeUnderFlood(t, head({ length: 100000 }), 'x');
  // Every attacker connection that got an answer got the 401 (none was served).
  const answers = Object.keys(stats.answered);
  assert.ok(answers.every((a) => /^HTTP\/1\.1 (401|503) /.test(a)), JSON.stringify(stats.answered));
  assert.ok((stats.answered['HTTP/1.1 401 Unauthorized'] ?? 0) >= CAP, JSON.stringify(stats.answered));
});

test('100 connections trickling their heads give way to keyed clients at the cap', async (t) => {
  const stats = await probeUnderFlood(t, 'POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nX-Pad: ', 'abcdefgh');
  // The heads that gave way were told why.
  assert.ok((stats.answered['HTTP/1.1 503 Service Unavailable'] ?? 0) >= 1, JSON.stringify(stats.answered));
  assert.match(gw.logs(), /closing connections still receiving a request head or body/);
});
