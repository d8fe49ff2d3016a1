// SPDX-License-Identifier: MIT
// Teams of run-time keys and per-route budgets (docs/internals/keys.md "Teams",
// docs/configuration.md "admin"): a team's budget is crossed by the sum of its keys' spend
// and stops every key of it after the crossing request; a budget with a route bounds only
// that route; a team's allow-list bounds its keys'; team writes need role admin, are in the
// audit trail, and survive a restart on SQLite with the team's spend.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startSim, startGateway } from '../lib/harness.mjs';

const ADMIN = 'admin-key-0123456789abcdef';
const READER = 'reader-key-0123456789abcdef';
const dir = mkdtempSync(path.join(os.tmpdir(), 'bascule-teams-'));
const dbPath = path.join(dir, 'state.db');
let sim, gw;

// Each answer of t1 has 2 completion tokens at $1 each: $2 a request.
const config = () => `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: info, format: json }
admin:
  key: "${ADMIN}"
  keys: [{ id: ops-reader, key: "${READER}", role: read }]
store: { kind: sqlite, path: "${dbPath}" }
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-s"], health: { probe: none } }
targets:
  t1:
    provider: sim
    model: tm-model
    price: { input_per_mtok: 0, output_per_mtok: 1000000 }
  t2: { provider: sim, model: tm-free }
routes:
  chat: { primary: [t1] }
  chat2: { primary: [t1] }
  free: { primary: [t2] }
`;

const start = () => startGateway({ config: config() });

before(async () => {
  sim = await startSim();
  await sim.setModel('tm-model', { tokens: 2 });
  gw = await start();
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const chat = (key, model = 'chat') =>
  fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }),
  });

async function admin(p, { method = 'GET', key = ADMIN, body } = {}) {
  const res = await fetch(`${gw.url}/admin/${p}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, text, json: text ? JSON.parse(text) : null };
}

async function status(key, model) {
  const res = await chat(key, model);
  const body = await res.json().catch(() => ({}));
  return res.status === 429 ? `429 ${body.error?.code}` : res.status;
}

async function createKey(body) {
  const r = await admin('keys', { method: 'POST', body });
  assert.equal(r.status, 201, r.text);
  return r.json;
}

async function createTeam(body) {
  const r = await admin('teams', { method: 'POST', body });
  assert.equal(r.status, 201, r.text);
  return r.json;
}

test("a team budget crossed by the sum of two keys' spend stops both after the crossing request", async () => {
  await createTeam({ id: 'support', budget: '7/month' });
  const a = await createKey({ client: 'ann', team: 'support', routes: ['chat'] });
  const b = await createKey({ client: 'bob', team: 'support', routes: ['chat'] });
  assert.equal(a.team, 'support');
  assert.equal(await status(a.secret), 200); // team $2
  assert.equal(await status(b.secret), 200); // $4
  assert.equal(await status(a.secret), 200); // $6
  assert.equal(await status(b.secret), 200); // $8: crosses $7
  const calls = await sim.calls('tm-model');
  assert.equal(await status(a.secret), '429 budget_exceeded');
  assert.equal(await status(b.secret), '429 budget_exceeded');
  assert.equal(await sim.calls('tm-model'), calls, 'no upstream call once the team is spent');
  const t = await admin('teams/support');
  assert.equal(t.status, 200, t.text);
  assert.equal(t.json.spend_usd, 8);
  assert.deepEqual(t.json.keys.sort(), [a.id, b.id].sort());
  // Each key's own figure is its own spend only.
  assert.equal((await admin(`keys/${a.id}`)).json.spend_usd, 4);
  // A key outside the team is not stopped by it; raising the team's budget serves again.
  const c = await createKey({ client: 'cat', routes: ['chat'] });
  assert.equal(await status(c.secret), 200);
  const p = await admin('teams/support', { method: 'PATCH', body: { budget: { usd: 100, period: 'month' } } });
  assert.equal(p.status, 200, p.text);
  assert.equal(await status(a.secret), 200);
});

test('a budget with a route bounds only that route, on a key and on a team', async () => {
  const k = await createKey({
    client: 'dan', routes: ['chat', 'chat2'], budgets: [{ usd: 3, period: 'day', route: 'chat' }],
  });
  assert.deepEqual(k.budgets, [{ usd: 3, period: 'day', route: 'chat' }]);
  assert.equal(await status(k.secret), 200); // $2 on chat
  assert.equal(await status(k.secret), 200); // $4: crosses $3
  assert.equal(await status(k.secret), '429 budget_exceeded');
  for (let i = 0; i < 3; i++) assert.equal(await status(k.secret, 'chat2'), 200, 'another route');

  await createTeam({ id: 'docs', budgets: [{ usd: 1, period: 'total', route: 'chat2' }] });
  const m = await createKey({ client: 'meg', team: 'docs', routes: ['*'] });
  assert.equal(await status(m.secret, 'chat2'), 200); // $2: crosses $1
  assert.equal(await status(m.secret, 'chat2'), '429 budget_exceeded');
  assert.equal(await status(m.secret, 'chat'), 200, 'the team budget is on chat2 only');
  const bad = await admin('keys', {
    method: 'POST', body: { client: 'x', routes: ['chat'], budgets: [{ usd: 1, route: 'nope' }] },
  });
  assert.equal(bad.status, 400, bad.text);
});

test("a team's allow-list bounds its keys' routes", async () => {
  await createTeam({ id: 'narrow', routes: ['chat'] });
  const k = await createKey({ client: 'nia', team: 'narrow', routes: ['*'] });
  assert.equal(await status(k.secret, 'chat'), 200);
  assert.equal(await status(k.secret, 'free'), 404, 'outside the team: as an unknown model');
  assert.equal((await admin('teams/narrow', { method: 'PATCH', body: { routes: ['*'] } })).status, 200);
  assert.equal(await status(k.secret, 'free'), 200, 'widened at run time');
  // A key may not name a team that does not exist, nor may a team with keys be deleted.
  assert.equal((await admin('keys', { method: 'POST', body: { client: 'x', routes: ['*'], team: 'ghost' } })).status, 400);
  assert.equal((await admin('teams/narrow', { method: 'DELETE' })).status, 409);
  assert.equal((await admin(`keys/${k.id}`, { method: 'PATCH', body: { team: null } })).status, 200);
  assert.equal((await admin('teams/narrow', { method: 'DELETE' })).status, 200);
  assert.equal((await admin('teams/narrow')).status, 404);
});

test("a team's rpm bounds the sum of its keys' requests", async () => {
  await createTeam({ id: 'paced', rpm: 1 });
  const a = await createKey({ client: 'pia', team: 'paced', routes: ['free'] });
  const b = await createKey({ client: 'pat', team: 'paced', routes: ['free'] });
  assert.equal(await status(a.secret, 'free'), 200);
  const res = await chat(b.secret, 'free');
  assert.equal(res.status, 429);
  assert.equal(res.headers.get('x-bascule-limited-by'), 'team_rpm');
  assert.match((await res.json()).error.message, /team 'paced'/);
  const c = await createKey({ client: 'pen', routes: ['free'] });
  assert.equal(await status(c.secret, 'free'), 200, 'a key outside the team is not bound');
});

test('team writes: a read key gets 403, every write is audited', async () => {
  const since = Date.now();
  await createTeam({ id: 'audited', rpm: 10 });
  assert.equal((await admin('teams/audited', { method: 'PATCH', body: { tpm: 500 } })).status, 200);
  assert.equal((await admin('teams', { key: READER })).status, 200);
  assert.equal((await admin('teams/audited', { key: READER })).status, 200);
  const writes = [
    ['teams', 'POST', { id: 'mallory' }],
    ['teams/audited', 'PATCH', { rpm: 1 }],
    ['teams/audited', 'DELETE'],
  ];
  for (const [p, method, body] of writes) {
    const r = await admin(p, { method, key: READER, body });
    assert.equal(r.status, 403, `${method} ${p}`);
  }
  assert.equal((await admin('teams/audited', { method: 'DELETE' })).status, 200);
  const trail = (await admin(`audit?since=${since}&subject=team:audited`)).json.entries;
  assert.deepEqual(trail.map((e) => e.action), ['team.create', 'team.update', 'team.delete']);
  assert.equal(trail[1].before.tpm, undefined);
  assert.equal(trail[1].after.tpm, 500);
  assert.ok(trail.every((e) => e.admin === 'admin'));
  const dup = await admin('teams', { method: 'POST', body: { id: 'support' } });
  assert.equal(dup.status, 409);
  assert.equal((await admin('teams', { method: 'POST', body: { id: 'bad id!' } })).status, 400);
});

test("a key's page shows when it was last used", async () => {
  const k = await createKey({ client: 'lu', routes: ['free'] });
  assert.equal((await admin(`keys/${k.id}`)).json.last_used_ms, null);
  const t0 = Date.now();
  assert.equal(await status(k.secret, 'free'), 200);
  const seen = (await admin(`keys/${k.id}`)).json.last_used_ms;
  assert.ok(seen >= t0 && seen <= Date.now(), String(seen));
  assert.equal((await admin('keys')).json.keys.find((x) => x.id === k.id).last_used_ms, seen);
});

test('a restart on SQLite keeps teams and their spend', async () => {
  await createTeam({ id: 'durable', budget: { usd: 3, period: 'month' } });
  const k = await createKey({ client: 'dora', team: 'durable', routes: ['chat'] });
  assert.equal(await status(k.secret), 200);
  assert.equal(await status(k.secret), 200); // $4: crosses $3
  assert.equal(await status(k.secret), '429 budget_exceeded');
  await gw.stop();
  gw = await start();
  assert.equal((await admin('teams/durable')).json.budget.usd, 3, 'the team survived');
  assert.equal(await status(k.secret), '429 budget_exceeded', "the team's spend survived");
});
