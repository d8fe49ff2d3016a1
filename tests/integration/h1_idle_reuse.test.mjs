// The builtin client reuses an idle upstream connection without a system call once its read
// watcher has had a whole poll since it went idle (docs/internals/upstream.md, "Reuse without
// a system call"): so that watcher is what keeps a byte or an EOF on an idle connection from
// reaching the next request. A Node net upstream of the test's own answers each request
// with its marker and then, on an idle connection the gateway has polled, (a) sends a
// complete response nobody asked for, or (b) closes the connection, at once or while the
// next request is on its way. The next request always gets its own answer, the gateway
// closes the connection the bytes or the EOF came on, and no attempt fails. Each test runs
// on http:// and on https:// (a Node TLS upstream: there the response is a data record and
// the end a close_notify, and the session tickets the server sends after the handshake
// must not cost the connection).
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import { makeTestCert } from '../lib/test_cert.mjs';
import { startGateway, waitFor } from '../lib/harness.mjs';

const completion = (marker) =>
  JSON.stringify({
    id: `c-${marker}`,
    object: 'chat.completion',
    created: 1,
    model: 'm',
    choices: [{ index: 0, message: { role: 'assistant', content: `answer for ${marker}` }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  });
const cl = (text) =>
  `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`;

let made;
before(() => { made = makeTestCert('bascule-idle-reuse-'); });
after(() => made.remove());

// Each connection: its socket (TLS: the TLS one), whether the gateway ended it (its FIN came;
// TLS: its TCP connection closed, as bascule closes without close_notify), whether it is gone.
function startUpstream(scheme) {
  const up = { conns: [], sockets: new Set(), requests: 0, unanswered: 0, byMarker: new Map() };
  const serve = (s, raw) => {
    const conn = { s, requests: 0, gatewayEnded: false, closed: false };
    let buf = Buffer.alloc(0);
    up.conns.push(conn);
    up.sockets.add(raw);
    if (scheme === 'http') s.on('end', () => { conn.gatewayEnded = true; s.end(); });
    raw.on('close', () => { conn.gatewayEnded = conn.closed = true; up.sockets.delete(raw); });
    s.on('error', () => {});
    raw.on('error', () => {});
    s.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      for (;;) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buf.subarray(0, end).toString();
        const len = Number(/content-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
        if (buf.length < end + 4 + len) return;
        const body = JSON.parse(buf.subarray(end + 4, end + 4 + len).toString());
        buf = buf.subarray(end + 4 + len);
        up.requests++;
        conn.requests++;
        up.byMarker.set(body.messages[0].content, conn);
        if (s.writable) s.write(cl(completion(body.messages[0].content)));
        else up.unanswered++; // it came after our FIN: the gateway replays it
      }
    });
  };
  let server;
  if (scheme === 'http') {
    server = net.createServer({ allowHalfOpen: true }, (s) => serve(s, s));
  } else {
    const raws = new Map(); // remote port -> the TCP socket under the TLS one
    server = tls.createServer({ cert: fs.readFileSync(made.cert), key: fs.readFileSync(made.key) });
    server.on('connection', (raw) => { raws.set(raw.remotePort, raw); raw.on('error', () => {}); });
    server.on('secureConnection', (s) => serve(s, raws.get(s.remotePort)));
  }
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => {
    up.port = server.address().port;
    up.stop = () => new Promise((r) => { for (const s of up.sockets) s.destroy(); server.close(r); });
    resolve(up);
  }));
}

const config = (scheme, port) => `listen: "127.0.0.1:{{PORT}}"
workers: 1
http_client: builtin
providers:
  up:
    kind: openai_compatible
    base_url: "${scheme}://127.0.0.1:${port}/v1"
    keys: ["k"]
    health: { probe: none }
${scheme === 'https' ? `    tls: { ca_file: "${made.cert}" }` : ''}
breaker: { consecutive_failures: 1000000, min_requests: 1000000 }
targets:
  m@up: { provider: up, model: m }
routes:
  m: { primary: [m@up], envelope: { max_attempts: 1 } }
`;

let seq = 0;

async function ask(gw) {
  const marker = `r${++seq}-${Math.random().toString(36).slice(2, 8)}`;
  const res = await fetch(`${gw.base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: marker }] }),
  });
  return { marker, status: res.status, text: await res.text() };
}

function ownAnswer(r, ghosts = []) {
  for (const g of ghosts) assert.ok(!r.text.includes(g), `a response nobody asked for reached ${r.marker}: ${r.text}`);
  assert.equal(r.status, 200, r.text);
  assert.ok(r.text.includes(`answer for ${r.marker}`), `not its own answer: ${r.text}`);
}

// The connection that carried <r>'s answer.
const connOf = (r) => up.byMarker.get(r.marker);

// Up to 3 s for the gateway to close <conn>; a gateway that does not is judged after.
const gatewayCloses = (conn) =>
  waitFor(() => conn.gatewayEnded, { timeoutMs: 3000, what: 'the gateway closing the idle connection' })
    .catch(() => {});

let up, gw;
after(async () => {
  await gw?.stop();
  await up?.stop();
});

const failedAttempts = () => gw.accessLog().filter((l) => l.type === 'attempt' && l.outcome !== 'ok');

for (const scheme of ['http', 'https']) {
  const fresh = async () => {
    await gw?.stop();
    await up?.stop();
    up = await startUpstream(scheme);
    gw = await startGateway({ config: config(scheme, up.port) });
  };

  test(`${scheme}: a response on an idle connection after a poll closes it, never answers the next request`,
    async () => {
    await fresh();
    const ghosts = [];
    for (let i = 0; i < 3; i++) {
      const a = await ask(gw);
      ownAnswer(a, ghosts);
      const conn = connOf(a), carried = conn.requests;
      const ghost = `ghost-${i}-${a.marker}`;
      ghosts.push(ghost);
      conn.s.write(cl(completion(ghost))); // a complete response nobody asked for
      await gatewayCloses(conn);
      const b = await ask(gw);
      ownAnswer(b, ghosts);
      assert.ok(conn.gatewayEnded, 'the gateway closed the connection the response came on');
      assert.equal(conn.requests, carried, 'no request went out on it after the unsolicited response');
      assert.notEqual(connOf(b), conn);
    }
    assert.deepEqual(failedAttempts(), []);
  });

  test(`${scheme}: an idle connection the upstream ends is closed by the gateway; the next request gets a new one`,
    async () => {
    await fresh();
    for (let i = 0; i < 3; i++) {
      const a = await ask(gw);
      ownAnswer(a);
      const conn = connOf(a), carried = conn.requests;
      conn.s.end(); // FIN on the idle connection
      await gatewayCloses(conn);
      assert.ok(conn.gatewayEnded, 'the gateway closed the connection the upstream ended');
      const b = await ask(gw);
      ownAnswer(b);
      assert.equal(conn.requests, carried, 'no request went out on it after its FIN');
      assert.notEqual(connOf(b), conn);
    }
    assert.deepEqual(failedAttempts(), []);
  });

  test(`${scheme}: an upstream ending its idle connection as the next request comes: every request succeeds`,
    async () => {
    await fresh();
    // Whichever the gateway sees first, the FIN (a new connection) or its own request going
    // out (EOF before any answer byte on a reused connection: replayed once, silently).
    let last = null;
    for (let i = 0; i < 20; i++) {
      const conn = last && connOf(last);
      if (conn && !conn.closed) conn.s.end();
      last = await ask(gw);
      ownAnswer(last);
    }
    assert.deepEqual(failedAttempts(), []);
    assert.equal(up.requests, 20 + up.unanswered);
  });
}
