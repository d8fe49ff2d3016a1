// SPDX-License-Identifier: MIT
// https:// upstreams, with both clients (http_client: curl, libcurl; builtin, bascule's own
// TLS and HTTP/1.1): a provider's `tls: { ca_file }` is the CA it trusts, and a burst of
// requests to an origin that has no connection yet never holds more connections than
// requests in flight. With libcurl the burst waits for the first handshake instead of
// opening one connection each: on HTTP/2 they all multiplex on that one, and a first
// connection that fails hands the wait on to the next request in line; the builtin client
// speaks HTTP/1.1 even to an upstream that offers HTTP/2. The upstream is a
// Node TLS server inside the test, with a self-signed certificate made by openssl, that
// counts its TLS connections and holds every answer until the whole burst has arrived.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import https from 'node:https';
import http2 from 'node:http2';
import { spawnSync } from 'node:child_process';
import { makeTestCert } from '../lib/test_cert.mjs';
import { startGateway, waitFor, bins } from '../lib/harness.mjs';

const BURST = 8;

const completion = JSON.stringify({
  id: 'c1', object: 'chat.completion', created: 1, model: 'm',
  choices: [{ index: 0, message: { role: 'assistant', content: 'tls ok' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
});

let made, dir, cert, key;

before(() => {
  made = makeTestCert('bascule-tls-');
  ({ dir, cert, key } = made);
});

after(() => made.remove());

// A TLS upstream: h2 offers HTTP/2 (and HTTP/1.1), otherwise HTTP/1.1 only. Answers are
// held until <hold> requests wait (or released by release()), then all go out.
function startUpstream({ h2, hold = 1, dropFirst = false }) {
  const up = { conns: 0, dropped: 0, requests: 0, protocols: new Set(), waiting: [], sockets: new Set() };
  const opts = { cert: fs.readFileSync(cert), key: fs.readFileSync(key) };
  const onRequest = (req, res) => {
    req.resume();
    req.on('end', () => {
      up.requests++;
      up.protocols.add(req.httpVersion);
      up.waiting.push(res);
      if (up.waiting.length >= hold) up.release();
    });
  };
  up.release = () => {
    for (const res of up.waiting.splice(0)) {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(completion) });
      res.end(completion);
    }
  };
  const server = h2 ? http2.createSecureServer({ ...opts, allowHTTP1: true }, onRequest) : https.createServer(opts, onRequest);
  // dropFirst: the first TCP connection is closed before its handshake (the probe's).
  server.on('connection', (s) => {
    if (dropFirst && up.dropped === 0) {
      up.dropped++;
      s.destroy();
    }
  });
  server.on('secureConnection', (s) => {
    up.conns++;
    up.sockets.add(s);
    s.on('close', () => up.sockets.delete(s));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => {
    up.port = server.address().port;
    up.stop = () => new Promise((r) => {
      up.release();
      for (const s of up.sockets) s.destroy();
      server.close(() => r());
    });
    resolve(up);
  }));
}

function config(port, tls, envelope = '', client = 'curl') {
  return `listen: "127.0.0.1:{{PORT}}"
workers: 1
http_client: ${client}
providers:
  up:
    kind: openai_compatible
    base_url: "https://127.0.0.1:${port}/v1"
    keys: ["k"]
    health: { probe: none }
${tls}
targets:
  m@up: { provider: up, model: m }
routes:
  m: { primary: [m@up]${envelope} }
`;
}

async function chat(gw) {
  const res = await fetch(`${gw.base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    signal: AbortSignal.timeout(20000),
  });
  return { status: res.status, body: await res.json() };
}

for (const client of ['curl', 'builtin'])
test(`${client}: tls.ca_file: the provider trusts the CA it names, and only with it`, async () => {
  const up = await startUpstream({ h2: false });
  let gw = await startGateway({ config: config(up.port, `    tls: { ca_file: "${cert}" }`, '', client) });
  try {
    const ok = await chat(gw);
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(ok.body.choices[0].message.content, 'tls ok');
    await gw.stop();
    // Without it the self-signed certificate is not trusted: no request reaches the upstream.
    const before = up.requests;
    gw = await startGateway({ config: config(up.port, '', '', client) });
    const bad = await chat(gw);
    assert.notEqual(bad.status, 200);
    assert.equal(up.requests, before);
  } finally {
    await gw.stop();
    await up.stop();
  }
});

test('tls.ca_file that cannot be read is a config error', () => {
  const file = path.join(dir, 'bad.yaml');
  fs.writeFileSync(file, config(1, `    tls: { ca_file: "${path.join(dir, 'missing.pem')}" }`).replace('{{PORT}}', '1'));
  const r = spawnSync(bins.bascule, ['--check-config', file], { encoding: 'utf8', timeout: 20000 });
  assert.notEqual(r.status, 0);
  assert.match(r.stdout + r.stderr, /tls\.ca_file .*cannot be read/);
});

for (const client of ['curl', 'builtin'])
for (const h2 of [true, false]) {
  const mode = h2 ? 'HTTP/2' : 'HTTP/1.1';
  const one = h2 && client === 'curl'; // libcurl multiplexes; the builtin client speaks 1.1
  test(`${client}: ${mode}: a burst to a cold https origin holds ${one ? 'one connection' : 'no more connections than requests'}`, async () => {
    const up = await startUpstream({ h2, hold: BURST });
    const gw = await startGateway({ config: config(up.port, `    tls: { ca_file: "${cert}" }`, '', client) });
    try {
      const all = Promise.all(Array.from({ length: BURST }, () => chat(gw)));
      // Every request of the burst reaches the upstream while the others are held there.
      await waitFor(() => up.requests === BURST || up.waiting.length === 0 && up.requests > 0,
        { timeoutMs: 15000, what: `${BURST} requests at the upstream` });
      const answers = await all;
      for (const a of answers) assert.equal(a.status, 200, JSON.stringify(a.body));
      assert.equal(up.requests, BURST);
      if (one) {
        assert.deepEqual([...up.protocols], ['2.0']);
        assert.equal(up.conns, 1, `${up.conns} TLS connections for ${BURST} multiplexable requests`);
      } else {
        assert.deepEqual([...up.protocols], ['1.1']);
        assert.ok(up.conns <= BURST, `${up.conns} TLS connections for ${BURST} requests`);
      }
    } finally {
      await gw.stop();
      await up.stop();
    }
  });
}

test('curl: a first connection that fails hands the wait on: the queued requests still go out', async () => {
  const up = await startUpstream({ h2: true, dropFirst: true });
  // One attempt per request: no retry of the probe's request comes to open the way.
  const gw = await startGateway({
    config: config(up.port, `    tls: { ca_file: "${cert}" }`, ', envelope: { max_attempts: 1 }', 'curl'),
  });
  try {
    const answers = await Promise.all(Array.from({ length: BURST }, () => chat(gw).catch((e) => ({ status: e.name }))));
    assert.equal(up.dropped, 1);
    // The probe's request failed with its connection; the queued ones were not left waiting
    // for a handshake that never came.
    assert.equal(answers.filter((a) => a.status === 200).length, BURST - 1, JSON.stringify(answers.map((a) => a.status)));
    assert.equal(up.requests, BURST - 1);
    assert.equal(up.conns, 1);
  } finally {
    await gw.stop();
    await up.stop();
  }
});
