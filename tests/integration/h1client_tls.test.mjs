// SPDX-License-Identifier: MIT
// The builtin client's own TLS (http_client: builtin on https:// upstreams) against a TLS
// upstream of our own inside the test: a TCP server whose sockets are wrapped in TLS by the
// test, so that it can end a connection with close_notify (tlsSocket.end()) or cut it
// under TLS (the raw TCP socket destroyed: no close_notify), and count connections, requests
// and resumed sessions. Covered: plain, chunked and streamed answers on one kept-alive TLS
// connection; a close-delimited body ended by close_notify is whole, one cut without it is
// an error and never a 200 passed on as complete; an untrusted certificate and a wrong host
// name are refused before any request goes out; a reused connection the server closed is
// replayed once; the next connection resumes the TLS session; a client that stops reading
// a large stream pauses the upstream transfer (TCP holds the TLS upstream back) and the
// stream completes when it reads again. docs/internals/upstream.md.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import { makeTestCert } from '../lib/test_cert.mjs';
import { startGateway, waitFor } from '../lib/harness.mjs';

const completion = (text) =>
  JSON.stringify({
    id: 'c1', object: 'chat.completion', created: 1, model: 'm',
    choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  });

const sseChunk = (content, finish = null) =>
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm',
    choices: [{ index: 0, delta: content ? { content } : {}, finish_reason: finish }] })}\n\n`;

const chunk = (text) => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;

let made, cert, key;

before(() => {
  made = makeTestCert('bascule-tls-h1-');
  ({ cert, key } = made);
});

after(() => made.remove());

// The requested model picks the answer's framing and fault.
const answers = {
  cl: (s, raw, text) => s.write(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`),
  chunked: (s, raw, text) => s.write(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n` +
    `Transfer-Encoding: chunked\r\n\r\n${chunk(text.slice(0, 9))}${chunk(text.slice(9))}0\r\n\r\n`),
  // Close-delimited, ended by close_notify: whole.
  eof: (s, raw, text) => s.end(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n${text}`),
  // Close-delimited, cut under TLS after half the body: the TCP socket goes, no close_notify.
  cut: (s, raw, text) => s.write(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n` +
    text.slice(0, 40), () => raw.destroy()),
  // Content-Length framed, cut the same way.
  cutcl: (s, raw, text) => s.write(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(text)}\r\n\r\n${text.slice(0, 40)}`, () => raw.destroy()),
  // Answers and closes: the next request needs a new connection (and resumes the session).
  close: (s, raw, text) => s.end(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n` +
    `Connection: close\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`),
  // A large stream written as fast as the client side takes it (back-pressure through TLS).
  big: async (s) => {
    s.write('HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n');
    const piece = chunk(sseChunk('y'.repeat(200)));
    for (let i = 0; i < 100000; i++) { // ~30 MB of events: more than every socket buffer on the way
      if (!s.write(piece)) {
        up.bigBlocked = true;
        await new Promise((r) => s.once('drain', r));
      }
    }
    s.write(`${chunk(sseChunk('', 'stop'))}${chunk('data: [DONE]\n\n')}0\r\n\r\n`);
    up.bigDone = true;
  },
  stream: (s) => s.write(`HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n` +
    `Transfer-Encoding: chunked\r\n\r\n${chunk(sseChunk('one '))}${chunk(sseChunk('two'))}` +
    `${chunk(sseChunk('', 'stop'))}${chunk('data: [DONE]\n\n')}0\r\n\r\n`),
};

let up, gw;

function startUpstream() {
  up = { tcp: 0, conns: 0, resumed: 0, requests: 0, perConn: [], sockets: new Set(), offered: [] };
  // The ALPN lists the client offers: the builtin client offers HTTP/1.1 alone (libcurl
  // would offer h2 too), which also tells that the builtin client made the connection.
  const ALPNCallback = ({ protocols }) => {
    up.offered.push(protocols.join(','));
    return protocols.includes('http/1.1') ? 'http/1.1' : protocols[0];
  };
  const server = tls.createServer({ cert: fs.readFileSync(cert), key: fs.readFileSync(key), ALPNCallback });
  const raws = new Map(); // remote port -> the TCP socket under the TLS one
  server.on('connection', (raw) => {
    up.tcp++;
    raws.set(raw.remotePort, raw);
    up.sockets.add(raw);
    raw.on('close', () => { up.sockets.delete(raw); raws.delete(raw.remotePort); });
    raw.on('error', () => {});
  });
  server.on('secureConnection', (s) => {
    const id = up.conns++;
    const raw = raws.get(s.remotePort);
    let buf = Buffer.alloc(0), served = 0;
    up.perConn[id] = 0;
    if (s.isSessionReused()) up.resumed++;
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
        up.perConn[id]++;
        up.lastUserContent = body.messages?.[0]?.content;
        if (body.model === 'drop2nd' && served++ >= 1) {
          raw.destroy(); // a reused connection dies before any answer byte
          return;
        }
        (answers[body.model] ?? answers.cl)(s, raw, completion(`${body.model} ok`));
      }
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => {
    up.port = server.address().port;
    up.stop = () => new Promise((r) => { for (const s of up.sockets) s.destroy(); server.close(() => r()); });
    resolve(up);
  }));
}

const models = ['cl', 'chunked', 'eof', 'cut', 'cutcl', 'close', 'stream', 'drop2nd', 'big'];

function config(port, { host = '127.0.0.1', trust = true } = {}) {
  const targets = models.map((m) => `  ${m}@up: { provider: up, model: ${m} }`).join('\n');
  const routes = models.map((m) => `  ${m}: { primary: [${m}@up], envelope: { max_attempts: 1 } }`).join('\n');
  return `listen: "127.0.0.1:{{PORT}}"
workers: 1
http_client: builtin
limits: { max_stream_buffer_bytes: 65536 }
providers:
  up:
    kind: openai_compatible
    base_url: "https://${host}:${port}/v1"
    keys: ["k"]
    health: { probe: none }
${trust ? `    tls: { ca_file: "${cert}" }` : ''}
targets:
${targets}
routes:
${routes}
`;
}

async function chat(gw, model, { stream = false, content = 'hi' } = {}) {
  const res = await fetch(`${gw.base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, stream, messages: [{ role: 'user', content }] }),
    signal: AbortSignal.timeout(20000),
  });
  return { status: res.status, text: await res.text() };
}

// Every connection came from the builtin client (HTTP/1.1 alone offered).
const assertBuiltin = (up) => {
  assert.ok(up.offered.length > 0, 'no ALPN offered');
  for (const o of up.offered) assert.equal(o, 'http/1.1');
};

const content = (r) => JSON.parse(r.text).choices[0].message.content;

const fresh = async (opts) => {
  await gw?.stop();
  await up?.stop();
  await startUpstream();
  gw = await startGateway({ config: config(up.port, opts) });
};

after(async () => {
  await gw?.stop();
  await up?.stop();
});

test('builtin TLS: plain, chunked and streamed answers on one kept-alive connection', async () => {
  await fresh();
  for (const model of ['cl', 'chunked', 'cl', 'chunked']) {
    const r = await chat(gw, model);
    assert.equal(r.status, 200, r.text);
    assert.equal(content(r), `${model} ok`);
  }
  const s = await chat(gw, 'stream', { stream: true });
  assert.equal(s.status, 200, s.text);
  const deltas = s.text.split('\n').filter((l) => l.startsWith('data: {'))
    .map((l) => JSON.parse(l.slice(6)).choices[0]?.delta?.content ?? '').join('');
  assert.equal(deltas, 'one two');
  assert.match(s.text, /data: \[DONE\]/);
  assert.equal(up.requests, 5);
  assert.equal(up.conns, 1, `${up.conns} TLS connections for 5 sequential requests`);
  assert.deepEqual(gw.accessLog().filter((l) => l.type === 'attempt' && l.outcome !== 'ok'), []);
  assertBuiltin(up);
});

test('builtin TLS: a request larger than one TLS record arrives whole', async () => {
  await fresh();
  const big = 'x'.repeat(300 * 1024); // many 16 KiB records, more than one socket write may take
  for (let i = 0; i < 2; i++) {
    const r = await chat(gw, 'cl', { content: big });
    assert.equal(r.status, 200, r.text);
    assert.equal(up.lastUserContent, big);
  }
  assert.equal(up.conns, 1);
  assertBuiltin(up);
});

test('builtin TLS: a close-delimited body ended by close_notify is whole', async () => {
  await fresh();
  const r = await chat(gw, 'eof');
  assert.equal(r.status, 200, r.text);
  assert.equal(content(r), 'eof ok');
  assertBuiltin(up);
});

test('builtin TLS: a body cut without close_notify is an error, never a complete 200', async () => {
  await fresh();
  for (const model of ['cut', 'cutcl']) {
    const r = await chat(gw, model);
    assert.notEqual(r.status, 200, `${model}: ${r.text}`);
    assert.doesNotMatch(r.text, /ok"/);
  }
  await waitFor(() => gw.accessLog().filter((l) => l.type === 'attempt').length === 2,
    { what: 'both attempts logged' });
  for (const a of gw.accessLog().filter((l) => l.type === 'attempt')) {
    assert.equal(a.outcome, 'failed', JSON.stringify(a));
    assert.equal(a.kind, 'upstream_reset', JSON.stringify(a));
  }
  assertBuiltin(up);
});

test('builtin TLS: an untrusted certificate is refused before any request goes out', async () => {
  await fresh({ trust: false });
  const r = await chat(gw, 'cl');
  assert.notEqual(r.status, 200, r.text);
  assert.equal(up.requests, 0);
  await waitFor(() => gw.accessLog().some((l) => l.type === 'attempt'), { what: 'the attempt logged' });
  const [a] = gw.accessLog().filter((l) => l.type === 'attempt');
  assert.equal(a.outcome, 'failed', JSON.stringify(a));
  assert.equal(a.kind, 'connect', JSON.stringify(a)); // a TLS failure is a connect failure
  assert.equal(a.status, 0);
  assertBuiltin(up);
});

test('builtin TLS: a certificate for another host name is refused', async () => {
  await fresh({ host: 'localhost' }); // the certificate names IP:127.0.0.1 only
  const r = await chat(gw, 'cl');
  assert.notEqual(r.status, 200, r.text);
  assert.equal(up.requests, 0);
  await waitFor(() => up.tcp >= 1, { what: 'the refused connection reached the upstream' });
  assertBuiltin(up);
});

test('builtin TLS: a reused connection the server closed before answering is replayed once', async () => {
  await fresh();
  const a = await chat(gw, 'drop2nd');
  assert.equal(a.status, 200, a.text);
  const b = await chat(gw, 'drop2nd'); // on the kept connection, which the server drops
  assert.equal(b.status, 200, b.text);
  assert.equal(content(b), 'drop2nd ok');
  assert.equal(up.conns, 2);
  assert.equal(up.requests, 3);
  assert.deepEqual(gw.accessLog().filter((l) => l.type === 'attempt' && l.outcome !== 'ok'), []);
  assertBuiltin(up);
});

test('builtin TLS: the next connection to a host resumes its TLS session', async () => {
  await fresh();
  for (let i = 0; i < 3; i++) {
    const r = await chat(gw, 'close'); // each answer closes its connection
    assert.equal(r.status, 200, r.text);
  }
  assert.equal(up.conns, 3);
  assert.equal(up.resumed, 2, `${up.resumed} of the 2 later connections resumed`);
  assertBuiltin(up);
});

test('builtin TLS: a client that stops reading pauses the upstream, then the stream completes', async () => {
  await fresh();
  const body = JSON.stringify({ model: 'big', stream: true, messages: [{ role: 'user', content: 'x' }] });
  const sock = net.connect({ port: gw.port, host: '127.0.0.1' });
  await new Promise((r) => sock.once('connect', r));
  sock.pause(); // read nothing
  sock.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  const pauses = async () => Number(/^bascule_stream_pauses_total\{route="big"\} (\d+)/m
    .exec(await (await fetch(`${gw.url}/metrics`)).text())?.[1] ?? 0);
  await waitFor(async () => (await pauses()) >= 1, { timeoutMs: 20000, what: 'the upstream transfer paused' });
  await waitFor(() => up.bigBlocked, { timeoutMs: 20000, what: 'the upstream held back by TCP' });
  assert.equal(up.bigDone, undefined, 'the upstream could not finish while the client did not read');
  let received = 0;
  let tail = '';
  sock.on('data', (d) => { received += d.length; tail = (tail + d.toString('latin1')).slice(-64); });
  sock.resume();
  await new Promise((r) => sock.once('close', r));
  assert.ok(received > 25_000_000, `received ${received} bytes`);
  assert.match(tail, /data: \[DONE\]/);
  assert.equal(up.bigDone, true);
  assertBuiltin(up);
});
