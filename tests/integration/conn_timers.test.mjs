// SPDX-License-Identifier: MIT
// A client connection's timer is lazy (server/conn.c, timer_arm): the deadline that counts is
// kept beside the armed timer, a later deadline leaves the timer as it is and an early firing
// re-arms for the rest; only an earlier deadline re-arms at once. Seen from a client: a
// kept-alive connection outlives the head timeout its last request armed, closes when its
// idle timeout is spent (not before), and a head that stalls on it is still cut at the head
// timeout, long before the idle deadline armed before it. The real gateway against
// bascule-sim; the client is a raw socket of the test. Lower bounds only where a loaded
// machine can only make things later.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startSim, startGateway } from '../lib/harness.mjs';

const HEAD_MS = 300;
const IDLE_MS = 6000;
let sim, gw;

before(async () => {
  sim = await startSim();
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 1
limits: { header_timeout_ms: ${HEAD_MS}, idle_timeout_ms: ${IDLE_MS} }
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-s"], health: { probe: none } }
targets:
  t: { provider: sim, model: m }
routes:
  r: { primary: [t] }
`,
  });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

const body = JSON.stringify({ model: 'r', messages: [{ role: 'user', content: 'hi' }] });
const request = `POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\n` +
  `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

/** A raw connection that collects what it reads and says when it closed. */
function connect() {
  const { port } = new URL(gw.url);
  const sock = net.connect(Number(port), '127.0.0.1');
  const c = { sock, data: '', closedAt: null, waiters: [] };
  const wake = () => { for (const w of c.waiters.splice(0)) w(); };
  sock.setEncoding('latin1'); // a character a byte: Content-Length counts bytes
  sock.on('data', (d) => { c.data += d; wake(); });
  sock.on('close', () => { c.closedAt = Date.now(); wake(); });
  sock.on('error', () => {});
  return new Promise((resolve, reject) => {
    sock.once('connect', () => resolve(c));
    sock.once('error', reject);
  });
}

/** Waits until <done>(c) holds (checked on each read and on close), at most <ms>. */
function until(c, done, ms, what) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
    const check = () => {
      if (done(c)) {
        clearTimeout(timer);
        resolve();
      } else {
        c.waiters.push(check);
      }
    };
    check();
  });
}

/** The complete responses in what was read so far (Content-Length framed). */
function responses(text) {
  const out = [];
  let at = 0;
  for (;;) {
    const end = text.indexOf('\r\n\r\n', at);
    if (end < 0) return out;
    const head = text.slice(at, end);
    const m = /\r\ncontent-length:\s*(\d+)/i.exec(head);
    const len = m ? Number(m[1]) : 0;
    if (text.length < end + 4 + len) return out;
    out.push({ status: Number(head.split(' ')[1]), body: text.slice(end + 4, end + 4 + len) });
    at = end + 4 + len;
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test('a kept-alive connection outlives the head timeout its request armed and closes at its idle timeout', async () => {
  const c = await connect();
  c.sock.write(request);
  await until(c, (x) => responses(x.data).length === 1, 10000, 'the first answer');
  assert.equal(responses(c.data)[0].status, 200);
  // Four head timeouts later the connection is still there and serves the next request.
  await sleep(4 * HEAD_MS);
  assert.equal(c.closedAt, null, 'closed at the head timeout of the request before');
  c.sock.write(request);
  await until(c, (x) => responses(x.data).length === 2, 10000, 'the second answer');
  assert.equal(responses(c.data)[1].status, 200);
  const answered = Date.now();
  // Then it closes once idle for IDLE_MS, and not before.
  await until(c, (x) => x.closedAt !== null, IDLE_MS + 15000, 'the idle close');
  assert.ok(c.closedAt - answered >= IDLE_MS - 100,
    `closed ${c.closedAt - answered} ms after the answer (idle timeout ${IDLE_MS})`);
});

test('a head that stalls on a kept-alive connection is cut at the head timeout, not the idle one', async () => {
  const c = await connect();
  c.sock.write(request);
  await until(c, (x) => responses(x.data).length === 1, 10000, 'the first answer');
  // Past the head timeout armed at accept, the armed timer has moved on to the idle
  // deadline; the stalled head's earlier deadline must bring it back.
  await sleep(2 * HEAD_MS);
  const started = Date.now();
  c.sock.write('POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\n');
  await until(c, (x) => responses(x.data).length === 2 || x.closedAt !== null, IDLE_MS + 15000,
    'the head timeout');
  const got = responses(c.data);
  assert.equal(got.length, 2, 'a 408 answer before the close');
  assert.equal(got[1].status, 408);
  // The idle deadline (IDLE_MS from the first answer) was armed before the head's; the
  // head's, earlier, must have re-armed the timer.
  assert.ok(Date.now() - started < IDLE_MS / 2,
    `408 after ${Date.now() - started} ms: the head timeout is ${HEAD_MS} ms`);
  c.sock.destroy();
});
