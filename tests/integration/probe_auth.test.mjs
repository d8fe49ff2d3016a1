// SPDX-License-Identifier: MIT
// A health probe answered 401 says the probe's key is refused, not that the provider is
// down: the key cools (bascule_key_cooldowns_total{reason="auth"}) and the provider's
// circuits stay closed, so /health/ready stays 200 and a second provider's key is not
// involved. Before, each 401 probe counted as a failure and opened the circuits. The
// provider here is a small Node server that refuses every GET /v1/models with 401.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startGateway, waitFor } from '../lib/harness.mjs';

const ADMIN = 'probe-auth-admin-key-0123456789';
let upstream, gw;
let probes = 0;

const config = (port) => `listen: "127.0.0.1:{{PORT}}"
workers: 1
log: { level: info, format: json }
admin: { key: "${ADMIN}" }
providers:
  refusing:
    kind: openai
    base_url: "http://127.0.0.1:${port}/v1"
    keys: ["sk-revoked"]
    health: { interval_ms: 100, probe: models }
targets:
  t@refusing: { provider: refusing, model: m }
routes:
  chat: { primary: [t@refusing] }
breaker: { consecutive_failures: 2, open_ms: 60000 }
`;

before(async () => {
  upstream = http.createServer((req, res) => {
    if (req.url.startsWith('/v1/models')) probes++;
    res.writeHead(401, { 'content-type': 'application/json' });
    res.end('{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}');
  });
  await new Promise((r) => upstream.listen(0, '127.0.0.1', r));
  gw = await startGateway({ config: config(upstream.address().port) });
});

after(async () => {
  await gw?.stop();
  await new Promise((r) => upstream?.close(r));
});

test('401 probes cool the key and never open the circuit', async () => {
  // Several probes: with consecutive_failures 2, two counted failures would open it.
  await waitFor(() => probes >= 4, { timeoutMs: 10_000, what: 'four health probes' });
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  assert.match(text, /^bascule_key_cooldowns_total\{provider="refusing",reason="auth"\} [1-9]/m);
  assert.match(text, /^bascule_breaker_state\{target="t@refusing",state="closed"\} 1$/m);
  const targets = await (await fetch(`${gw.url}/admin/targets`, { headers: { authorization: `Bearer ${ADMIN}` } })).json();
  const t = targets.targets.find((x) => x.id === 't@refusing');
  assert.equal(t.circuit, 'closed');
  assert.equal(t.failures ?? 0, 0, 'no failure counted against the target');
  assert.equal((await fetch(`${gw.url}/health/ready`)).status, 200);
  assert.match(gw.logs(), /key 0 refused \(401\): cooled, circuits unchanged/);
});
