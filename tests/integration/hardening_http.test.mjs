// Browsers, DNS rebinding, strict HTTP/1.1 framing and an access-log line for every request:
// the real gateway against bascule-sim, driven by fetch and by raw bytes.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startSim, startGateway, rawRequest, waitFor } from '../lib/harness.mjs';

let sim, gw;
const ADMIN_KEY = 'admin-key-0123456789abcdef';
const APP = 'http://app.example:3000';

before(async () => {
  sim = await startSim();
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 2
admin: { key: "${ADMIN_KEY}" }
cors: { allowed_origins: ["${APP}"] }
allowed_hosts: ["gw.internal"]
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-h"], health: { probe: none } }
targets:
  t1: { provider: sim, model: h-model }
routes:
  chat: { primary: [t1] }
`,
  });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

const chatBody = JSON.stringify({ model: 'chat', messages: [{ role: 'user', content: 'hi' }] });

/** One raw request on its own connection; resolves with {status, headers, body, text}. */
async function raw(bytes) {
  const text = await rawRequest(gw.port, bytes, { timeoutMs: 5000 });
  const head = text.slice(0, text.indexOf('\r\n\r\n'));
  const [statusLine, ...lines] = head.split('\r\n');
  const headers = {};
  for (const l of lines) {
    const i = l.indexOf(':');
    headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body: text.slice(head.length + 4), text };
}

function post(path, body, headers = {}) {
  return fetch(gw.url + path, { method: 'POST', headers, body });
}

// ---- 1. browsers and DNS rebinding -----------------------------------------------------------

test('a POST from an origin not allowed is refused before anything is forwarded', async () => {
  await sim.reset();
  const res = await post('/v1/chat/completions', chatBody, {
    'content-type': 'text/plain', origin: 'http://evil.example',
  });
  assert.equal(res.status, 403);
  const body = await res.json();
  assert.equal(body.error.code, 'origin_not_allowed');
  assert.equal(res.headers.get('access-control-allow-origin'), null);
  assert.equal(await sim.calls('h-model'), 0);
  // "null" (sandboxed frames, file:) is an origin like any other.
  const nul = await post('/v1/chat/completions', chatBody, { 'content-type': 'text/plain', origin: 'null' });
  assert.equal(nul.status, 403);
  await nul.arrayBuffer();
  assert.equal(await sim.calls('h-model'), 0);
});

test('an allowed origin gets its answer with CORS headers', async () => {
  await sim.reset();
  const res = await post('/v1/chat/completions', chatBody, { 'content-type': 'application/json', origin: APP });
  assert.equal(res.status, 200);
  await res.json();
  assert.equal(res.headers.get('access-control-allow-origin'), APP);
  assert.match(res.headers.get('vary'), /\bOrigin\b/);
  const expose = res.headers.get('access-control-expose-headers');
  assert.match(expose, /x-request-id/);
  assert.match(expose, /x-bascule-target/);
  assert.equal(await sim.calls('h-model'), 1);
  // Error answers carry them too, so the page can read the error.
  const nf = await fetch(`${gw.url}/v1/models/nope`, { headers: { origin: APP } });
  assert.equal(nf.status, 404);
  assert.equal(nf.headers.get('access-control-allow-origin'), APP);
  await nf.arrayBuffer();
  // Headers the server adds itself are kept beside them (405 names the method to use).
  const na = await fetch(`${gw.url}/v1/chat/completions`, { headers: { origin: APP } });
  assert.equal(na.status, 405);
  assert.equal(na.headers.get('allow'), 'POST');
  assert.equal(na.headers.get('access-control-allow-origin'), APP);
  await na.arrayBuffer();
});

test('a preflight from an allowed origin is answered 204; from another, 403', async () => {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'OPTIONS',
    headers: {
      origin: APP,
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization, content-type, x-api-key, anthropic-version, ' +
        'idempotency-key, x-bascule-deadline-ms, x-evil',
    },
  });
  assert.equal(res.status, 204);
  assert.equal(res.headers.get('access-control-allow-origin'), APP);
  assert.match(res.headers.get('access-control-allow-methods'), /POST/);
  const allowed = res.headers.get('access-control-allow-headers').split(/,\s*/);
  for (const h of ['authorization', 'content-type', 'x-api-key', 'anthropic-version', 'idempotency-key',
    'x-bascule-deadline-ms']) assert.ok(allowed.includes(h), `${h} allowed: ${allowed}`);
  assert.ok(!allowed.includes('x-evil'));
  assert.ok(Number(res.headers.get('access-control-max-age')) > 0);
  const evil = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'OPTIONS', headers: { origin: 'http://evil.example', 'access-control-request-method': 'POST' },
  });
  assert.equal(evil.status, 403);
  await evil.arrayBuffer();
});

test('a loopback listener answers only Host values naming loopback, plus allowed_hosts', async () => {
  await sim.reset();
  const req = (host) => 'POST /v1/chat/completions HTTP/1.1\r\n' + `Host: ${host}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${chatBody.length}\r\nConnection: close\r\n\r\n${chatBody}`;
  const refused = await raw(req('evil.example'));
  assert.equal(refused.status, 403);
  assert.equal(JSON.parse(refused.body).error.code, 'host_not_allowed');
  for (const host of [`evil.example:${gw.port}`, 'localhost.evil.example', 'gw.internal.evil', '127.0.0.1.nip.io']) {
    assert.equal((await raw(req(host))).status, 403, host);
  }
  assert.equal(await sim.calls('h-model'), 0);
  for (const host of [`localhost:${gw.port}`, 'localhost', `127.0.0.1:${gw.port}`, '[::1]', `[::1]:${gw.port}`,
    'LocalHost', 'gw.internal', `gw.internal:${gw.port}`]) {
    assert.equal((await raw(req(host))).status, 200, host);
  }
  assert.equal(await sim.calls('h-model'), 8);
});

test('an absolute-form request target must name a host served here, else 400', async () => {
  await sim.reset();
  const req = (target, host = 'localhost') => `POST ${target} HTTP/1.1\r\nHost: ${host}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${chatBody.length}\r\nConnection: close\r\n\r\n${chatBody}`;
  // Served on the strength of Host until now: the URI's own host is the one judged.
  for (const target of ['http://evil.example/v1/chat/completions', `http://evil.example:${gw.port}/v1/chat/completions`,
    'http://localhost.evil.example/v1/chat/completions', 'https://api.openai.com/v1/chat/completions']) {
    const r = await raw(req(target));
    assert.equal(r.status, 400, target);
    assert.equal(r.headers.connection, 'close', target);
    assert.equal(JSON.parse(r.body).error.code, 'target_host_not_allowed', target);
    assert.match(JSON.parse(r.body).error.message, /not a proxy/);
  }
  // Not http(s), or with userinfo: malformed.
  for (const target of ['ftp://localhost/v1/chat/completions', 'http://u@localhost/v1/chat/completions']) {
    const r = await raw(req(target));
    assert.equal(r.status, 400, target);
    assert.equal(JSON.parse(r.body).error.code, 'bad_request', target);
  }
  // A good target does not excuse a bad Host.
  assert.equal((await raw(req('http://localhost/v1/chat/completions', 'evil.example'))).status, 403);
  assert.equal(await sim.calls('h-model'), 0);
  for (const target of [`http://localhost:${gw.port}/v1/chat/completions`, `http://127.0.0.1:${gw.port}/v1/chat/completions`,
    'http://[::1]/v1/chat/completions', 'HTTP://gw.internal/v1/chat/completions', 'https://LOCALHOST/v1/chat/completions']) {
    assert.equal((await raw(req(target))).status, 200, target);
  }
  assert.equal(await sim.calls('h-model'), 5);
});

// ---- 2. strict HTTP/1.1 framing --------------------------------------------------------------

test('framing that could desync a front proxy is a 400 that closes the connection', async () => {
  await sim.reset();
  const chunked = (ext) => 'POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\n' +
    'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n' +
    `${chatBody.length.toString(16)}${ext}\r\n${chatBody}\r\n0\r\n\r\n`;
  const cases = {
    'bare LF in a chunk extension': chunked(';a\nb'),
    'obs-fold': 'GET /v1/models HTTP/1.1\r\nHost: localhost\r\nX-A: 1\r\n folded\r\n\r\n',
    'bare LF after the request line': 'GET /v1/models HTTP/1.1\nHost: localhost\r\n\r\n',
    'bare LF after a header line': 'GET /v1/models HTTP/1.1\r\nHost: localhost\nX-A: 1\r\n\r\n',
    'no Host on HTTP/1.1': 'GET /v1/models HTTP/1.1\r\nX-A: 1\r\n\r\n',
    'two Hosts': 'GET /v1/models HTTP/1.1\r\nHost: localhost\r\nHost: localhost\r\n\r\n',
    'HTTP/2.0': 'GET /v1/models HTTP/2.0\r\nHost: localhost\r\n\r\n',
  };
  for (const [what, bytes] of Object.entries(cases)) {
    // A valid request follows on the same connection: it must never be answered.
    const r = await raw(bytes + 'GET /health/live HTTP/1.1\r\nHost: localhost\r\n\r\n');
    assert.equal(r.status, 400, what);
    assert.equal(r.headers.connection, 'close', what);
    assert.equal(JSON.parse(r.body.slice(0, r.body.lastIndexOf('}') + 1)).error.code, 'bad_request', what);
    assert.equal((r.text.match(/HTTP\/1\.1 \d{3} /g) || []).length, 1, `${what}: one response only`);
  }
  assert.equal(await sim.calls('h-model'), 0);
  // The same chunked request with a well-formed extension goes through.
  assert.equal((await raw(chunked(';a=b'))).status, 200);
});

// ---- 3. an access-log line for every request -------------------------------------------------

test('every request gets exactly one access line with method, path and status', async () => {
  await sim.reset();
  const admin = { authorization: `Bearer ${ADMIN_KEY}` };
  const get = (path, h) => fetch(gw.url + path, { headers: h });
  const chatJson = { 'content-type': 'application/json' };
  // [id, method, path, status, send(headers)]: each request carries X-Request-Id log-<id>.
  const cases = [
    ['unknown-model', 'POST', '/v1/chat/completions', 404, (h) => post('/v1/chat/completions',
      JSON.stringify({ model: 'nope', messages: [{ role: 'user', content: 'x' }] }), { ...chatJson, ...h })],
    ['bad-json', 'POST', '/v1/chat/completions', 400, (h) => post('/v1/chat/completions', '{"model":', h)],
    ['admin-401', 'GET', '/admin/targets', 401, (h) => get('/admin/targets', h)],
    ['method-405', 'GET', '/v1/chat/completions', 405, (h) => get('/v1/chat/completions', h)],
    ['admin-disable', 'POST', '/admin/targets/t1/disable', 200,
      (h) => post('/admin/targets/t1/disable', undefined, { ...admin, ...h })],
    ['admin-enable', 'POST', '/admin/targets/t1/enable', 200,
      (h) => post('/admin/targets/t1/enable', undefined, { ...admin, ...h })],
    ['ledger-put', 'PUT', '/v1/ledger/op-log-1', 201, (h) => fetch(`${gw.url}/v1/ledger/op-log-1`, {
      method: 'PUT', headers: { ...chatJson, ...h }, body: JSON.stringify({ tool_name: 'send_email', state: 'planned' }),
    })],
    ['ledger-get', 'GET', '/v1/ledger/op-log-1', 200, (h) => get('/v1/ledger/op-log-1', h)],
    ['models', 'GET', '/v1/models', 200, (h) => get('/v1/models', h)],
    ['health', 'GET', '/health/ready', 200, (h) => get('/health/ready', h)],
    ['metrics', 'GET', '/metrics', 200, (h) => get('/metrics', h)],
    ['status', 'GET', '/status.json', 200, (h) => get('/status.json', h)],
    ['cors-403', 'POST', '/v1/chat/completions', 403,
      (h) => post('/v1/chat/completions', chatBody, { origin: 'http://evil.example', ...h })],
    ['preflight', 'OPTIONS', '/v1/chat/completions', 204, (h) => fetch(`${gw.url}/v1/chat/completions`, {
      method: 'OPTIONS', headers: { origin: APP, 'access-control-request-method': 'POST', ...h } })],
    ['routed', 'POST', '/v1/chat/completions', 200, (h) => post('/v1/chat/completions', chatBody, { ...chatJson, ...h })],
  ];
  for (const [id, , , status, send] of cases) {
    const res = await send({ 'x-request-id': `log-${id}` });
    assert.equal(res.status, status, id);
    await res.arrayBuffer();
  }
  const host403 = await raw('GET /v1/models HTTP/1.1\r\nHost: evil.example\r\nX-Request-Id: log-host-403\r\n' +
    'Connection: close\r\n\r\n');
  assert.equal(host403.status, 403);
  cases.push(['host-403', 'GET', '/v1/models', 403]);
  const linesOf = (id) => gw.accessLog().filter((l) => l.type === 'access' && l.request_id === `log-${id}`);
  await waitFor(() => cases.every(([id]) => linesOf(id).length > 0), { what: 'an access line for each request' });
  for (const [id, method, path, status] of cases) {
    const lines = linesOf(id);
    assert.equal(lines.length, 1, `${id}: exactly one line, got ${JSON.stringify(lines)}`);
    assert.equal(lines[0].method, method, id);
    assert.equal(lines[0].path, path, id);
    assert.equal(lines[0].status, status, id);
  }
  assert.equal(linesOf('routed')[0].route, 'chat'); // the router's own, richer line
  assert.equal(linesOf('admin-disable')[0].detail, 'disable target t1');
  assert.equal(linesOf('admin-enable')[0].detail, 'enable target t1');
  assert.equal(linesOf('ledger-put')[0].detail, 'put operation op-log-1');
  assert.equal(linesOf('cors-403')[0].detail, 'origin not allowed');
  assert.equal(linesOf('host-403')[0].detail, 'host not allowed');
  // A request the HTTP server itself refuses (never reaches a handler) has its line too.
  // Its head never completed, so the line has no path: it is found by its termination.
  const refused = () => gw.accessLog().filter((l) => l.type === 'access' && l.termination === 'server');
  const before = refused().length;
  const framing = await raw('GET /log-framing HTTP/2.0\r\nHost: localhost\r\n\r\n');
  assert.equal(framing.status, 400);
  await waitFor(() => refused().length > before, { what: 'an access line for the refused request' });
  const line = refused()[before];
  assert.equal(line.status, 400);
  assert.equal(line.detail, 'refused by the HTTP server');
});
