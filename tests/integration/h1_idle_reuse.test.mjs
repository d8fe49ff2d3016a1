// The builtin client reuses an idle upstream connection without a system call once its read
// watcher has had a whole poll since it went idle (docs/internals/upstream.md, "Reuse without
// a system call"): so that watcher is what keeps a byte or an EOF on an idle connection from
// reaching the next request. A Node net upstream of the test's own answers each request
// with its marker and then, on an idle connection the gateway has polled, (a) sends a
// complete response nobody asked for, or (b) closes the connection, at once or while the
// next request is on its way. The next request always gets its own answer, the gateway
// closes the connection the bytes or the EOF came on, and no attempt fails.
import { test, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import net from 'node:net';
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

// Each connection: its socket, whether the gateway ended it (its FIN came), whether it is gone.
function startUpstream() {
  const up = { conns: [], sockets: new Set(), requests: 0, unanswered: 0, byMarker: new Map() };
  const server = net.createServer({ allowHalfOpen: true }, (s) => {
    const conn = { s, requests: 0, gatewayEnded: false, closed: false };
    let buf = Buffer.alloc(0);
    up.conns.push(conn);
    up.sockets.add(s);
    s.on('end', () => { conn.gatewayEnded = true; s.end(); });
    s.on('close', () => { conn.closed = true; up.sockets.delete(s); });
    s.on('error', () => {});
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
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => {
    up.port = server.address().port;
    up.stop = () => new Promise((r) => { for (const s of up.sockets) s.destroy(); server.close(r); });
    resolve(up);
  }));
}

const config = (port) => `listen: "127.0.0.1:{{PORT}}"
workers: 1
http_client: builtin
providers:
  up: { kind: openai_compatible, base_url: "http://127.0.0.1:${port}/v1", keys: ["k"], health: { probe: none } }
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
const fresh = async () => {
  await gw?.stop();
  await up?.stop();
  up = await startUpstream();
  gw = await startGateway({ config: config(up.port) });
};
after(async () => {
  await gw?.stop();
  await up?.stop();
});

const failedAttempts = () => gw.accessLog().filter((l) => l.type === 'attempt' && l.outcome !== 'ok');

test('a response sent on an idle connection after the gateway polled it closes it, never answers the next request', async () => {
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

test('an idle connection the upstream closes is closed by the gateway; the next request gets a new one', async () => {
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

test('an upstream closing its idle connection while the next request is on its way: every request still succeeds', async () => {
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
