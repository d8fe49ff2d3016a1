// The upstream HTTP/1.1 client against a tiny upstream of our own that counts connections
// and frames its answers on purpose: keep-alive reuse, a server closing after its answer,
// Content-Length, chunked and close-delimited bodies, the keep-alive race (a reused
// connection dropped before any answer byte: replayed once on a new one), fresh
// connections for write_possible requests, a cancelled stream closing its upstream
// connection, a refused connect, and http_proxy from the environment still honoured. Every test runs with http_client: builtin and curl:
// the two must behave the same (docs/internals/upstream.md).
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startGateway, freePort, waitFor } from '../lib/harness.mjs';

const completion = (text) =>
  JSON.stringify({
    id: 'c1',
    object: 'chat.completion',
    created: 1,
    model: 'm',
    choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  });

// One upstream: each connection and each request is counted; the requested model picks
// how the answer is framed.
function startUpstream() {
  const up = { conns: 0, closed: 0, requests: 0, perConn: [], sockets: new Set(), lines: [] };
  const answer = {
    cl: (s, text) => s.write(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`),
    chunked: (s, text) => {
      const a = text.slice(0, 7), b = text.slice(7);
      s.write(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n` +
        `${Buffer.byteLength(a).toString(16)}\r\n${a}\r\n${Buffer.byteLength(b).toString(16)}\r\n${b}\r\n0\r\n\r\n`);
    },
    eof: (s, text) => s.end(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n${text}`),
    close: (s, text) => s.end(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n` +
      `Content-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`),
    hang: (s) => s.write(`HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n` +
      chunk(`data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm',
        choices: [{ index: 0, delta: { role: 'assistant', content: 'first' }, finish_reason: null }] })}\n\n`)),
  };
  const server = net.createServer((s) => {
    const id = up.conns++;
    let buf = Buffer.alloc(0), served = 0;
    up.perConn[id] = 0;
    up.sockets.add(s);
    s.on('close', () => { up.closed++; up.sockets.delete(s); });
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
        up.lines.push(head.split('\r\n')[0]);
        up.requests++;
        up.perConn[id]++;
        if (body.model === 'drop2nd' && served++ >= 1) {
          s.destroy(); // the keep-alive race: a reused connection dies before any answer byte
          return;
        }
        (answer[body.model] ?? answer.cl)(s, completion(`${body.model} ok`));
      }
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => {
    up.port = server.address().port;
    up.stop = () => new Promise((r) => { for (const s of up.sockets) s.destroy(); server.close(r); });
    resolve(up);
  }));
}

function chunk(text) {
  return `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;
}

const models = ['cl', 'chunked', 'eof', 'close', 'hang', 'drop2nd'];

function config(client, upPort, deadPort) {
  const targets = models.map((m) => `  ${m}@up: { provider: up, model: ${m} }`).join('\n');
  const routes = models.map((m) => `  ${m}: { primary: [${m}@up] }`).join('\n');
  return `listen: "127.0.0.1:{{PORT}}"
workers: 1
http_client: ${client}
providers:
  up: { kind: openai_compatible, base_url: "http://127.0.0.1:${upPort}/v1", keys: ["k"], health: { probe: none } }
  dead: { kind: openai_compatible, base_url: "http://127.0.0.1:${deadPort}/v1", keys: ["k"], health: { probe: none } }
targets:
${targets}
  x@dead: { provider: dead, model: x }
routes:
${routes}
  x: { primary: [x@dead] }
`;
}

async function chat(gw, model, headers = {}) {
  const res = await fetch(`${gw.base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  });
  return { status: res.status, body: await res.json() };
}

for (const client of ['builtin', 'curl']) {
  let up, gw, deadPort;

  const fresh = async () => {
    await gw?.stop();
    await up?.stop();
    up = await startUpstream();
    gw = await startGateway({ config: config(client, up.port, deadPort) });
  };

  before(async () => {
    deadPort = await freePort();
  });
  after(async () => {
    await gw?.stop();
    await up?.stop();
  });

  test(`${client}: sequential requests share one kept-alive upstream connection`, async () => {
    await fresh();
    for (let i = 0; i < 5; i++) {
      const r = await chat(gw, 'cl');
      assert.equal(r.status, 200);
      assert.equal(r.body.choices[0].message.content, 'cl ok');
    }
    assert.equal(up.requests, 5);
    assert.equal(up.conns, 1);
    // The kept-alive connection waits in the builtin client's pool, and /metrics says so.
    const text = await (await fetch(`${gw.url}/metrics`)).text();
    const idle = Number(/^bascule_upstream_idle_connections (\d+)/m.exec(text)?.[1]);
    assert.equal(idle, client === 'builtin' ? 1 : 0, text.split('\n').find((l) => l.includes('idle_conn')));
  });

  test(`${client}: Content-Length, chunked and close-delimited bodies arrive whole`, async () => {
    await fresh();
    for (const model of ['cl', 'chunked', 'eof', 'chunked', 'cl']) {
      const r = await chat(gw, model);
      assert.equal(r.status, 200, model);
      assert.equal(r.body.choices[0].message.content, `${model} ok`);
    }
    // The close-delimited answer ended its connection; the others were kept.
    assert.equal(up.conns, 2);
  });

  test(`${client}: a server closing after its answer gets a new connection next time`, async () => {
    await fresh();
    for (let i = 0; i < 3; i++) {
      const r = await chat(gw, 'close');
      assert.equal(r.status, 200);
      assert.equal(r.body.choices[0].message.content, 'close ok');
    }
    assert.equal(up.conns, 3);
    await waitFor(() => up.closed === 3, { what: 'every upstream connection closed' });
  });

  test(`${client}: a reused connection dropped before any answer byte is replayed once`, async () => {
    await fresh();
    const a = await chat(gw, 'drop2nd');
    assert.equal(a.status, 200);
    const b = await chat(gw, 'drop2nd'); // reuses the first connection, which drops it
    assert.equal(b.status, 200);
    assert.equal(b.body.choices[0].message.content, 'drop2nd ok');
    assert.equal(up.conns, 2);
    assert.equal(up.requests, 3);
    assert.deepEqual(gw.accessLog().filter((l) => l.type === 'attempt' && l.outcome !== 'ok'), []);
  });

  test(`${client}: write_possible requests never reuse a connection`, async () => {
    await fresh();
    for (let i = 0; i < 3; i++) {
      const r = await chat(gw, 'cl', { 'X-Bascule-Side-Effects': 'write_possible' });
      assert.equal(r.status, 200);
    }
    assert.equal(up.conns, 3);
    assert.deepEqual(up.perConn, [1, 1, 1]);
    await waitFor(() => up.closed === 3, { what: 'each fresh connection closed after its answer' });
  });

  test(`${client}: a client leaving mid-stream closes the upstream connection`, async () => {
    await fresh();
    const ac = new AbortController();
    const res = await fetch(`${gw.base}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'hang', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
      signal: ac.signal,
    });
    assert.equal(res.status, 200);
    const reader = res.body.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    assert.match(first, /first/);
    assert.equal(up.closed, 0);
    ac.abort();
    await waitFor(() => up.closed === 1, { what: 'the upstream connection closed after the cancel' });
  });

  test(`${client}: a refused connect is a connect failure`, async () => {
    await fresh();
    const r = await chat(gw, 'x');
    assert.equal(r.status, 503);
    const attempts = gw.accessLog().filter((l) => l.type === 'attempt' && l.route === 'x');
    assert.ok(attempts.length >= 1);
    assert.ok(attempts.every((l) => l.kind === 'connect'), JSON.stringify(attempts));
  });
}

test('with http_proxy in the environment, http:// upstreams still go through the proxy', async () => {
  const proxy = await startUpstream(); // answers like the upstream; records request lines
  const gw = await startGateway({
    config: config('builtin', 9, await freePort()),
    env: { http_proxy: `http://127.0.0.1:${proxy.port}`, HTTP_PROXY: '', no_proxy: '', NO_PROXY: '' },
  });
  try {
    const r = await chat(gw, 'cl');
    assert.equal(r.status, 200);
    assert.deepEqual(proxy.lines, ['POST http://127.0.0.1:9/v1/chat/completions HTTP/1.1']);
  } finally {
    await gw.stop();
    await proxy.stop();
  }
});
