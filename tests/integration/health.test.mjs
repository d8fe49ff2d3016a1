// Active health checks and readiness: probes run without traffic, a dead upstream is
// marked down and its circuit opens, /health/ready follows; a live one is marked up.
// Also embeddings routed like chat.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startSim, startGateway, freePort, waitFor } from '../lib/harness.mjs';

const ADMIN = 'health-admin-key-0123456789';
let sim, gw, deadPort;

before(async () => {
  sim = await startSim();
  deadPort = await freePort(); // nothing listens here
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 2
admin: { key: "${ADMIN}" }
providers:
  live: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-live"], health: { interval_ms: 150, probe: models } }
  dead: { kind: openai_compatible, base_url: "http://127.0.0.1:${deadPort}/v1", keys: ["sk-dead"], health: { interval_ms: 150, probe: models }, connect_timeout_ms: 200 }
targets:
  up@live: { provider: live, model: emb-live, capabilities: [text, streaming, embeddings] }
  down@dead: { provider: dead, model: gone, breaker: { consecutive_failures: 2, open_ms: 60000, panic: false } }
routes:
  alive: { primary: [up@live] }
  deadonly: { primary: [down@dead] }
`,
  });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

async function targets() {
  const res = await fetch(`${gw.url}/admin/targets`, { headers: { authorization: `Bearer ${ADMIN}` } });
  return Object.fromEntries((await res.json()).targets.map((t) => [t.id, t]));
}

test('probes mark a live target up and open the circuit of a dead one, with no traffic', async () => {
  await waitFor(async () => {
    const t = await targets();
    return t['up@live'].health === 'up' && t['down@dead'].circuit === 'open';
  }, { timeoutMs: 5000, what: 'probe results' });
  const t = await targets();
  assert.equal(t['down@dead'].health, 'down');
  assert.equal(t['down@dead'].last_error === null || typeof t['down@dead'].last_error === 'string', true);
  // A request to the dead-only route is refused at once: its only circuit is open (panic: false;
  // with panic the open circuit would be probed, breaker_panic.test.mjs).
  // (no_eligible_fallback and x-should-retry below say no attempt was made: no clock needed)
  const res = await fetch(`${gw.base}/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'deadonly', messages: [{ role: 'user', content: 'x' }] }) });
  assert.equal(res.status, 503);
  const body = await res.json();
  assert.equal(body.reason, 'no_eligible_fallback');
  assert.equal(res.headers.get('x-should-retry'), 'true', 'no attempt was made: a later retry can help');
  assert.equal((await fetch(`${gw.url}/health/ready`)).status, 200, 'another route can still serve');
});

test('readiness turns 503 when no route has an eligible target', async () => {
  const off = await fetch(`${gw.url}/admin/targets/up@live/disable`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}` } });
  assert.equal(off.status, 200);
  const res = await fetch(`${gw.url}/health/ready`);
  assert.equal(res.status, 503);
  await fetch(`${gw.url}/admin/targets/up@live/enable`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}` } });
  assert.equal((await fetch(`${gw.url}/health/ready`)).status, 200);
});

test('embeddings are routed with the model rewritten', async () => {
  const client = new OpenAI({ baseURL: gw.base, apiKey: 'x', maxRetries: 0 });
  const r = await client.embeddings.create({ model: 'alive', input: ['a', 'b'] });
  assert.equal(r.data.length, 2);
  assert.ok(r.data[0].embedding.length > 0);
  const seen = await sim.requests('emb-live');
  const last = seen[seen.length - 1];
  assert.equal(last.path, '/v1/embeddings');
  assert.equal(last.body.model, 'emb-live');
  const bad = await fetch(`${gw.base}/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"alive"}' });
  assert.equal(bad.status, 400);
});
