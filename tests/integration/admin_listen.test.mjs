// SPDX-License-Identifier: MIT
// Operator surfaces apart from the API (docs/configuration.md "admin", "metrics"):
// admin.listen serves /status, /metrics and /admin/* on a second socket and the API port
// answers 404 for them; metrics.key puts /metrics behind a bearer token; an open gateway
// (no clients) warns at start unless it listens on loopback only.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startSim, startGateway, freePort, rawRequest } from '../lib/harness.mjs';

const ADMIN = 'admin-key-0123456789abcdef';
const METRICS = 'metrics-key-0123456789abcdef';
const CLIENT = 'client-key-0123456789abcdef';
let sim;
const running = [];

before(async () => {
  sim = await startSim();
});

after(async () => {
  for (const gw of running) await gw.stop();
  await sim?.stop();
});

function config({ listen = '127.0.0.1:{{PORT}}', extra = '' } = {}) {
  return `listen: "${listen}"
workers: 2
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-s"], health: { probe: none } }
targets:
  t: { provider: sim, model: a-model }
routes:
  chat: { primary: [t] }
${extra}`;
}

async function start(opts) {
  const gw = await startGateway({ config: config(opts) });
  running.push(gw);
  return gw;
}

async function status(url, headers = {}) {
  const res = await fetch(url, { headers });
  await res.arrayBuffer();
  return res.status;
}

const bearer = (key) => ({ authorization: `Bearer ${key}` });

test('admin.listen: operator surfaces on their own socket, 404 on the API port', async () => {
  const adminPort = await freePort();
  const gw = await start({
    extra: `admin: { key: "${ADMIN}", listen: "127.0.0.1:${adminPort}" }
metrics: { key: "${METRICS}" }
clients:
  app: { key: "${CLIENT}", routes: ["*"] }
`,
  });
  const admin = `http://127.0.0.1:${adminPort}`;
  assert.match(gw.logs(), new RegExp(`admin listener on http://127\\.0\\.0\\.1:${adminPort}`));
  // The admin socket: the status page is open there, metrics need their key, the admin API
  // its own; API surfaces are not served.
  assert.equal(await status(`${admin}/status`), 200);
  assert.equal(await status(`${admin}/status.json`), 200);
  assert.equal(await status(`${admin}/metrics`), 401);
  assert.equal(await status(`${admin}/metrics`, bearer(METRICS)), 200);
  assert.equal(await status(`${admin}/metrics`, bearer(ADMIN)), 200);
  assert.equal(await status(`${admin}/admin/targets`), 401);
  assert.equal(await status(`${admin}/admin/targets`, bearer(ADMIN)), 200);
  assert.equal(await status(`${admin}/health/live`), 200);
  const chat = await fetch(`${admin}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...bearer(CLIENT) },
    body: JSON.stringify({ model: 'chat', messages: [{ role: 'user', content: 'hi' }] }),
  });
  assert.equal(chat.status, 404);
  assert.equal((await chat.json()).error.code, 'unknown_url');
  // The API port: none of them, whatever the key.
  for (const path of ['/status', '/status.json', '/metrics', '/admin/targets']) {
    for (const headers of [{}, bearer(ADMIN), bearer(METRICS)]) {
      const res = await fetch(`${gw.url}${path}`, { headers });
      assert.equal(res.status, 404, `${path} on the API port`);
      assert.equal((await res.json()).error.code, 'unknown_url');
    }
  }
  assert.equal(await status(`${gw.url}/health/live`), 200);
  assert.equal(await status(`${gw.base}/models`, bearer(CLIENT)), 200);
});

test('metrics.key without admin.listen: a bearer token for /metrics; the admin key works too', async () => {
  const gw = await start({
    extra: `admin: { key: "${ADMIN}" }
metrics: { key: "${METRICS}" }
clients:
  app: { key: "${CLIENT}", routes: ["*"] }
`,
  });
  assert.equal(await status(`${gw.url}/metrics`), 401);
  assert.equal(await status(`${gw.url}/metrics`, bearer('wrong-wrong-wrong')), 401);
  assert.equal(await status(`${gw.url}/metrics`, bearer(CLIENT)), 403);
  assert.equal(await status(`${gw.url}/metrics`, bearer(METRICS)), 200);
  assert.equal(await status(`${gw.url}/metrics`, bearer(ADMIN)), 200);
  assert.equal(await status(`${gw.url}/status`, bearer(METRICS)), 401, 'the metrics key opens only /metrics');
  assert.equal(await status(`${gw.url}/status`, bearer(ADMIN)), 200);
});

test('an open gateway: served without a key; a warning unless it listens on loopback', async () => {
  const local = await start();
  assert.doesNotMatch(local.logs(), /no clients: configured/);
  const res = await fetch(`${local.base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'chat', messages: [{ role: 'user', content: 'hi' }] }),
  });
  assert.equal(res.status, 200);
  await res.json();
  assert.equal(await status(`${local.url}/status`), 200, 'no clients: the status page stays open');
  const adminPort = await freePort();
  const wide = await start({ listen: '0.0.0.0:{{PORT}}', extra: `admin: { listen: "127.0.0.1:${adminPort}" }\n` });
  assert.match(wide.logs(), /no clients: configured and listening on 0\.0\.0\.0/);
  // The loopback admin listener keeps the loopback Host rule, whatever the API port's address.
  const head = (port) => rawRequest(port, 'GET /health/live HTTP/1.1\r\nHost: rebound.example\r\nConnection: close\r\n\r\n');
  assert.match(await head(wide.port), /^HTTP\/1\.1 200 /);
  assert.match(await head(adminPort), /^HTTP\/1\.1 403 [^]*host_not_allowed/);
});
