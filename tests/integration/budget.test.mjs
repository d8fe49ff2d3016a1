// SPDX-License-Identifier: MIT
// Spend and budgets (docs/configuration.md "clients", docs/internals/spend.md): the cost of
// each answer (x-bascule-cost-usd, the access log, bascule_cost_usd_total by client, route
// and target), a client budget that stops the client after the request that crossed it with
// no further upstream call, kept in the SQLite store across a restart, and the admin API
// that shows and resets it. The real bascule binary against bascule-sim.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startSim, startGateway, waitFor } from '../lib/harness.mjs';

const ALPHA = 'alpha-key-0123456789abcdef';
const BETA = 'beta-key-0123456789abcdef';
const ADMIN = 'admin-key-0123456789abcdef';
const dir = mkdtempSync(path.join(os.tmpdir(), 'bascule-budget-'));
const dbPath = path.join(dir, 'state.db');
let sim, gw;

// Each answer has 2 completion tokens at $1 each (input is free): exactly $2 a request, so a
// $5 budget admits a third request (spent $4 < $5) and that one crosses it ($6).
const config = `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: info, format: json }
admin: { key: "${ADMIN}" }
store: { kind: sqlite, path: "${dbPath}" }
providers:
  sim: { kind: openai_compatible, base_url: "SIMBASE", keys: ["sk-s"], health: { probe: none } }
targets:
  t1:
    provider: sim
    model: b-model
    price: { input_per_mtok: 0, output_per_mtok: 1000000 }
  t2: { provider: sim, model: b-free }
routes:
  chat: { primary: [t1] }
  free: { primary: [t2] }
clients:
  alpha:
    key: "\${TEST_ALPHA_KEY}"
    routes: [chat]
    rpm: 600
    budget: { usd: 5, period: day }
  beta: { key: "\${TEST_BETA_KEY}", routes: ["*"] }
`;

const start = () =>
  startGateway({
    env: { TEST_ALPHA_KEY: ALPHA, TEST_BETA_KEY: BETA },
    config: config.replace('SIMBASE', sim.base),
  });

before(async () => {
  sim = await startSim();
  await sim.setModel('b-model', { tokens: 2 });
  gw = await start();
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const chat = (key, extra = {}) =>
  fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: 'chat', messages: [{ role: 'user', content: 'hi' }], ...extra }),
  });

const admin = (p, { method = 'GET', key = ADMIN } = {}) =>
  fetch(`${gw.url}/admin/${p}`, { method, headers: key ? { authorization: `Bearer ${key}` } : {} });

async function expectBudgetExceeded(res) {
  assert.equal(res.status, 429);
  assert.equal(res.headers.get('x-bascule-limited-by'), 'budget');
  assert.equal(res.headers.get('x-should-retry'), 'false');
  const body = await res.json();
  assert.equal(body.error.code, 'budget_exceeded');
  assert.equal(body.reason, 'budget_exceeded');
  assert.equal(body.retryable, false);
}

test('the cost header, the access log and per-client cost metrics', async () => {
  const res = await chat(BETA);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-bascule-cost-usd'), '2.0');
  const usage = (await res.json()).usage;
  assert.equal(usage.completion_tokens, 2);
  const line = await waitFor(() => gw.accessLog().find((l) => l.client === 'beta' && l.route === 'chat'), {
    what: 'the access line',
  });
  assert.equal(line.cost_usd, 2);
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  assert.match(text, /\nbascule_cost_usd_total\{client="beta",route="chat",target="t1"\} 2\n/);
});

test('no cost header from a target without a price', async () => {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${BETA}` },
    body: JSON.stringify({ model: 'free', messages: [{ role: 'user', content: 'hi' }] }),
  });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-bascule-cost-usd'), null);
  await res.arrayBuffer();
});

test('a budget stops a client after the request that crossed it, with no upstream call', async () => {
  const calls = await sim.calls('b-model');
  for (let i = 0; i < 3; i++) {
    const res = await chat(ALPHA);
    assert.equal(res.status, 200, `request ${i + 1}`);
    await res.arrayBuffer();
  }
  assert.equal(await sim.calls('b-model'), calls + 3);
  for (let i = 0; i < 3; i++) await expectBudgetExceeded(await chat(ALPHA));
  assert.equal(await sim.calls('b-model'), calls + 3, 'no upstream call once the budget is spent');
  const res = await chat(BETA); // another client is not held by alpha's budget
  assert.equal(res.status, 200);
  await res.arrayBuffer();
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  assert.match(text, /\nbascule_cost_usd_total\{client="alpha",route="chat",target="t1"\} 6\n/);
});

test('GET /admin/clients needs the admin key and shows spend and budget left', async () => {
  assert.equal((await admin('clients', { key: null })).status, 401);
  assert.equal((await admin('clients', { key: ALPHA })).status, 403);
  const res = await admin('clients');
  assert.equal(res.status, 200);
  const { clients } = await res.json();
  const alpha = clients.find((c) => c.id === 'alpha');
  assert.deepEqual(alpha.routes, ['chat']);
  assert.deepEqual(alpha.limits, { rpm: 600, tpm: 0, max_concurrency: 0 });
  assert.equal(alpha.in_flight, 0);
  assert.equal(alpha.period, 'day');
  assert.equal(alpha.period_start_ms % 86400000, 0, 'a day starts at midnight UTC');
  assert.equal(alpha.spend_usd, 6);
  assert.equal(alpha.budget_usd, 5);
  assert.equal(alpha.budget_left_usd, 0);
  const beta = clients.find((c) => c.id === 'beta');
  assert.deepEqual(beta.routes, ['*']);
  assert.equal(beta.spend_usd, 4);
  assert.equal(beta.budget_usd, null);
  assert.equal(beta.budget_left_usd, null);
  const status = await (await admin('../status.json')).json();
  assert.deepEqual(status.clients.find((c) => c.id === 'alpha'), {
    id: 'alpha',
    in_flight: 0,
    period: 'day',
    spend_usd: 6,
    budget_usd: 5,
  });
});

test('the spent budget survives a restart on the same SQLite file', async () => {
  await gw.stop();
  gw = await start();
  const calls = await sim.calls('b-model');
  await expectBudgetExceeded(await chat(ALPHA));
  assert.equal(await sim.calls('b-model'), calls);
});

test('reset-spend lets the client through again', async () => {
  assert.equal((await admin('clients/alpha/reset-spend', { method: 'POST', key: null })).status, 401);
  assert.equal((await admin('clients/alpha/reset-spend', { method: 'POST', key: BETA })).status, 403);
  assert.equal((await admin('clients/nobody/reset-spend', { method: 'POST' })).status, 404);
  const r = await admin('clients/alpha/reset-spend', { method: 'POST' });
  assert.equal(r.status, 200);
  assert.deepEqual(await r.json(), { id: 'alpha', spend_usd: 0 });
  const calls = await sim.calls('b-model');
  const res = await chat(ALPHA);
  assert.equal(res.status, 200);
  await res.arrayBuffer();
  assert.equal(await sim.calls('b-model'), calls + 1);
  const { clients } = await (await admin('clients')).json();
  assert.equal(clients.find((c) => c.id === 'alpha').spend_usd, 2);
});

test('a stream counts when its usage arrives', async () => {
  // Two more streamed requests take alpha from $2 to $6: past the $5 budget.
  for (let i = 0; i < 2; i++) {
    const res = await chat(ALPHA, { stream: true, stream_options: { include_usage: true } });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-bascule-cost-usd'), null, 'no cost header on a stream');
    await res.text();
  }
  const calls = await sim.calls('b-model');
  await expectBudgetExceeded(await chat(ALPHA, { stream: true }));
  assert.equal(await sim.calls('b-model'), calls);
});
