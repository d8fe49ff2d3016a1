// A pooled upstream connection that falls out of step must never hand one client's answer
// to another (issue 24, item 1). A hostile upstream of the test's own (a Node net server
// speaking OpenAI chat completions) echoes a per-request marker in each answer and, per
// requested model, misbehaves: a complete response after its answer (in the same write, or
// ~300 ms later on the idle connection), bytes after the last chunk, a body on a 204 or a
// 304, the previous request's answer sent again before this one's, a 101 nobody asked for,
// and lenient framing (bare LF, obs-fold, Transfer-Encoding other than chunked, a flood of
// 1xx heads). Two clients with their own keys call in sequence and in two bounded loops at
// once, with http_client builtin and curl: every answer carries its own request's marker or
// is a typed error, and never the other client's marker (docs/internals/upstream.md, "Out
// of step").
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

const cl = (text, extra = '') =>
  `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n${extra}Content-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`;
const chunk = (text) => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;
const chunked = (text, type = 'application/json') =>
  `HTTP/1.1 200 OK\r\nContent-Type: ${type}\r\nTransfer-Encoding: chunked\r\n\r\n` +
  chunk(text.slice(0, 9)) + chunk(text.slice(9)) + '0\r\n\r\n';
const sse = (marker) =>
  `data: ${JSON.stringify({ id: `c-${marker}`, object: 'chat.completion.chunk', created: 1, model: 'm',
    choices: [{ index: 0, delta: { role: 'assistant', content: `answer for ${marker}` }, finish_reason: null }] })}\n\n` +
  `data: ${JSON.stringify({ id: `c-${marker}`, object: 'chat.completion.chunk', created: 1, model: 'm',
    choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\ndata: [DONE]\n\n`;

// What the upstream writes for one request, by the model asked for. <m> is this request's
// marker, <conn> the connection's state (prev: the marker answered before on it).
const shapes = {
  ok: (s, m) => s.write(cl(completion(m))),
  // A complete response right after the answer, in the same write.
  extra_cl: (s, m) => s.write(cl(completion(m)) + cl(completion(m))),
  // The same after the last chunk of a chunked answer.
  extra_chunked: (s, m) => s.write(chunked(completion(m)) + cl(completion(m))),
  // A 204 and a 304 followed by a body that is a whole response.
  body_204: (s, m) => s.write('HTTP/1.1 204 No Content\r\n\r\n' + cl(completion(m))),
  body_304: (s, m) => s.write('HTTP/1.1 304 Not Modified\r\nContent-Length: 12\r\n\r\n' + cl(completion(m))),
  // A stream, then a complete response after its last chunk.
  stream_extra: (s, m) => s.write(chunked(sse(m), 'text/event-stream') + cl(completion(m))),
  // The previous request's answer again, then this one's, in one write: out of step.
  ghost_first: (s, m, conn) => s.write((conn.prev ? cl(completion(conn.prev)) : '') + cl(completion(m))),
  // A 101 nobody asked for, then an answer: must fail at once, not at the deadline.
  switch_101: (s, m) =>
    s.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n' +
      cl(completion(m))),
  // The answer, then ~300 ms later, on the idle connection, a response nobody asked for.
  late: (s, m, conn) => {
    s.write(cl(completion(m)));
    conn.late = setTimeout(() => {
      conn.late = null;
      conn.ghosts++;
      s.write(cl(completion(m)));
    }, 300);
  },
  // Lenient framing, refused like the server side refuses it from clients.
  bare_lf: (s, m) => {
    const t = completion(m);
    s.write(`HTTP/1.1 200 OK\nContent-Type: application/json\nContent-Length: ${Buffer.byteLength(t)}\n\n${t}`);
  },
  obs_fold: (s, m) => s.write(cl(completion(m), 'X-Folded: a\r\n b\r\n')),
  te_gzip: (s, m) => s.write(chunked(completion(m)).replace('Transfer-Encoding: chunked', 'Transfer-Encoding: gzip, chunked')),
  interim_flood: (s, m) => s.write('HTTP/1.1 100 Continue\r\n\r\n'.repeat(20) + cl(completion(m))),
};
const lenient = ['bare_lf', 'obs_fold', 'te_gzip', 'interim_flood'];

function startUpstream() {
  const up = { conns: [], sockets: new Set(), requests: 0 };
  const server = net.createServer((s) => {
    const conn = { prev: null, late: null, ghosts: 0, closed: false };
    let buf = Buffer.alloc(0);
    up.conns.push(conn);
    up.sockets.add(s);
    s.on('close', () => { conn.closed = true; clearTimeout(conn.late); up.sockets.delete(s); });
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
        if (conn.late) { clearTimeout(conn.late); conn.late = null; } // asked again in time
        const marker = body.messages[0].content;
        (shapes[body.model] ?? shapes.ok)(s, marker, conn);
        conn.prev = marker;
      }
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => {
    up.port = server.address().port;
    up.stop = () => new Promise((r) => { for (const s of up.sockets) s.destroy(); server.close(r); });
    resolve(up);
  }));
}

function config(client, port) {
  const names = Object.keys(shapes);
  return `listen: "127.0.0.1:{{PORT}}"
workers: 1
http_client: ${client}
providers:
  up: { kind: openai_compatible, base_url: "http://127.0.0.1:${port}/v1", keys: ["k"], health: { probe: none } }
breaker: { consecutive_failures: 1000000, min_requests: 1000000 }
retry: { backoff: { base_ms: 1, max_ms: 2, jitter: 0 }, budget: { ratio: 10, min_per_s: 100000 } }
clients:
  alice: { key: "key-alice", routes: ["*"] }
  bob: { key: "key-bob", routes: ["*"] }
targets:
${names.map((m) => `  ${m}@up: { provider: up, model: ${m} }`).join('\n')}
routes:
${names.map((m) => `  ${m}: { primary: [${m}@up], envelope: { max_attempts: 3, max_same_target_attempts: 2, deadline_ms: 20000 } }`).join('\n')}
`;
}

let seq = 0;

// One request of <who> for <model>; resolves what came back and how it must be judged.
async function ask(gw, who, model) {
  const marker = `${who}-${++seq}-${Math.random().toString(36).slice(2, 8)}`;
  const stream = model === 'stream_extra';
  const started = Date.now();
  const res = await fetch(`${gw.base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer key-${who}` },
    body: JSON.stringify({ model, stream, messages: [{ role: 'user', content: marker }] }),
  });
  const text = await res.text().catch((e) => `(body broken: ${e.message})`);
  return { who, model, marker, status: res.status, text, ms: Date.now() - started };
}

// Every answer belongs to its request or is a typed error; none carries another's marker.
function judge(r, others) {
  const what = `${r.who} ${r.model}: ${r.status} ${r.text.slice(0, 300)}`;
  for (const o of others)
    assert.ok(!r.text.includes(o), `another request's answer (${o}) reached ${what}`);
  if (r.status === 200) {
    assert.ok(r.text.includes(`answer for ${r.marker}`), `not its own answer: ${what}`);
    return;
  }
  assert.ok(r.status >= 500, what);
  assert.equal(typeof JSON.parse(r.text).error?.code, 'string', what);
}

const markersOf = (rs) => rs.map((r) => r.marker);

for (const client of ['builtin', 'curl']) {
  let up, gw;
  const fresh = async () => {
    await gw?.stop();
    await up?.stop();
    up = await startUpstream();
    gw = await startGateway({ config: config(client, up.port) });
  };
  after(async () => {
    await gw?.stop();
    await up?.stop();
  });

  test(`${client}: in sequence, an answer out of step never reaches the next client`, async () => {
    await fresh();
    const all = [];
    for (const model of ['extra_cl', 'extra_chunked', 'body_204', 'body_304', 'stream_extra', 'ok',
      'ghost_first', 'switch_101', 'ok', 'ghost_first']) {
      const a = await ask(gw, 'alice', model);
      const b = await ask(gw, 'bob', model === 'ghost_first' ? 'ghost_first' : 'ok');
      const c = await ask(gw, 'alice', 'ok');
      all.push(a, b, c);
    }
    for (const r of all) judge(r, markersOf(all).filter((m) => m !== r.marker));
    // ghost_first after alice's answer: bob's request got alice's answer first, then its
    // own, in one read; that answer is refused, never delivered.
    const ghosts = all.filter((r) => r.who === 'bob' && r.model === 'ghost_first');
    assert.ok(ghosts.length === 2 && ghosts.every((r) => r.status >= 500 || r.text.includes(r.marker)));
  });

  test(`${client}: a response arriving on an idle pooled connection closes it`, async () => {
    await fresh();
    const all = [];
    for (let i = 0; i < 3; i++) {
      const a = await ask(gw, 'alice', 'late');
      assert.equal(a.status, 200);
      const conn = up.conns[up.conns.length - 1];
      await waitFor(() => conn.ghosts === 1, { what: 'the unsolicited response written' });
      // The gateway closes the connection at once; a gateway that does not would hand bob
      // the unsolicited answer, which judge() below reports.
      await waitFor(() => conn.closed, { timeoutMs: 3000 }).catch(() => {});
      const b = await ask(gw, 'bob', 'ok');
      all.push(a, b);
      judge(b, [a.marker]);
      assert.ok(conn.closed, 'the connection the unsolicited response came on is closed');
    }
    for (const r of all) judge(r, markersOf(all).filter((m) => m !== r.marker));
  });

  // Each attempt is a protocol_error (the upstream's fault: a replay, then failover per the
  // taxonomy); with nothing left to try the client gets the router's typed stop naming it.
  const typedProtocolError = async (r) => {
    const body = JSON.parse(r.text);
    assert.ok(r.status === 502 || r.status === 503, `${r.model}: ${r.text}`);
    assert.match(body.error.code, /^(no_eligible_fallback|attempts_exhausted)$/, r.text);
    assert.match(body.error.message, /protocol_error/, r.text);
    await waitFor(() => gw.accessLog().some((l) => l.type === 'access' && l.request_id === body.request_id),
      { what: `the access line of ${body.request_id}` });
    const attempts = gw.accessLog().filter((l) => l.type === 'attempt' && l.request_id === body.request_id);
    assert.ok(attempts.length >= 1, `attempts of ${body.request_id}`);
    assert.ok(attempts.every((l) => l.kind === 'protocol_error'), JSON.stringify(attempts));
  };

  test(`${client}: a 101 nobody asked for fails at once, typed`, async () => {
    await fresh();
    const r = await ask(gw, 'alice', 'switch_101');
    await typedProtocolError(r);
    assert.ok(r.ms < 5000, `took ${r.ms} ms`);
  });

  test(`${client}: lenient upstream framing is refused as a protocol_error`, async () => {
    await fresh();
    for (const model of lenient) await typedProtocolError(await ask(gw, 'alice', model));
  });

  test(`${client}: two clients in loops never get each other's answers`, async () => {
    await fresh();
    const cycle = ['ok', 'extra_cl', 'ok', 'ghost_first', 'body_204', 'ok', 'extra_chunked', 'body_304',
      'ok', 'stream_extra', 'switch_101', 'ok'];
    const loop = async (who) => {
      const out = [];
      for (let i = 0; i < 36; i++) out.push(await ask(gw, who, cycle[i % cycle.length]));
      return out;
    };
    const [as, bs] = await Promise.all([loop('alice'), loop('bob')]);
    const all = [...as, ...bs];
    for (const r of all) judge(r, markersOf(all).filter((m) => m !== r.marker));
    // Well-behaved answers still come through.
    assert.ok(all.filter((r) => r.model === 'ok' && r.status === 200).length >= 20);
  });
}
