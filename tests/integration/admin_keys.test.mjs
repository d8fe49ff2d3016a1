// SPDX-License-Identifier: MIT
// Client keys made at run time through the admin API (docs/internals/keys.md,
// docs/configuration.md "admin"): a key is created with its secret shown once, used like a
// client of the config file (routes, budget), rotated with a grace period, revoked (401, no
// upstream call); the file's clients are read-only (409); a read admin key is refused every
// write (403); every write is in the audit trail, and no secret is in the trail, the answers
// after creation or the logs; keys, revocations and spend survive a restart on SQLite.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startSim, startGateway, waitFor } from '../lib/harness.mjs';

const ALPHA = 'alpha-key-0123456789abcdef';
const ADMIN = 'admin-key-0123456789abcdef';
const READER = 'reader-key-0123456789abcdef';
const dir = mkdtempSync(path.join(os.tmpdir(), 'bascule-keys-'));
const dbPath = path.join(dir, 'state.db');
let sim, gw;
const secrets = []; // every secret the API showed: none may appear anywhere else

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
    model: k-model
    price: { input_per_mtok: 0, output_per_mtok: 1000000 }
  t2: { provider: sim, model: k-free }
  t3: { provider: sim, model: k-slow }
routes:
  chat: { primary: [t1] }
  free: { primary: [t2] }
  slow: { primary: [t3] }
clients:
  alpha: { key: "\${TEST_ALPHA_KEY}", routes: ["*"] }
`;

const start = () => startGateway({ env: { TEST_ALPHA_KEY: ALPHA }, config: config() });

before(async () => {
  sim = await startSim();
  await sim.setModel('k-model', { tokens: 2 });
  await sim.setModel('k-slow', { tokens: 20, token_delay_ms: 50 });
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
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
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
  await res.arrayBuffer();
  return res.status;
}

async function createKey(body) {
  const r = await admin('keys', { method: 'POST', body });
  assert.equal(r.status, 201, r.text);
  assert.match(r.json.secret, /^bsk_[0-9a-f]{48}$/);
  assert.equal(r.json.hash, undefined);
  secrets.push(r.json.secret);
  return r.json;
}

test('create, use, rotate with a grace period, revoke: 401 and no upstream call', async () => {
  const k = await createKey({ client: 'carol', routes: ['chat'], metadata: { team: 'docs' } });
  assert.match(k.id, /^key_[0-9a-f]{16}$/);
  assert.equal(k.client, 'carol');
  assert.equal(k.prefix, k.secret.slice(0, 8));
  assert.equal(await status(k.secret), 200, 'the new key is served at once');
  assert.equal(await status(k.secret, 'free'), 404, 'outside its routes: as an unknown model');
  const line = await waitFor(() => gw.accessLog().find((l) => l.client === k.id && l.status === 200), { what: 'access line' });
  assert.equal(line.route, 'chat');

  // The listing and the key's page never show a secret or a hash.
  const one = await admin(`keys/${k.id}`);
  assert.equal(one.status, 200);
  assert.equal(one.json.spend_usd, 2);
  assert.ok(!one.text.includes(k.secret) && !one.text.includes('hash'), one.text);
  const all = await admin('keys');
  assert.ok(all.json.keys.some((x) => x.id === 'alpha' && x.source === 'config'));
  assert.ok(!all.text.includes('secret') && !all.text.includes('hash'), all.text);

  const rot = await admin(`keys/${k.id}/rotate`, { method: 'POST', body: { grace_s: 2 } });
  assert.equal(rot.status, 200, rot.text);
  secrets.push(rot.json.secret);
  assert.notEqual(rot.json.secret, k.secret);
  assert.equal(await status(rot.json.secret), 200, 'the new secret works');
  assert.equal(await status(k.secret), 200, 'the old secret works during the grace period');
  await waitFor(async () => (await status(k.secret)) === 401, {
    timeoutMs: 10000,
    everyMs: 100,
    what: 'the old secret refused once the grace period is over',
  });
  assert.equal(await status(rot.json.secret), 200);

  const calls = await sim.calls('k-model');
  const del = await admin(`keys/${k.id}`, { method: 'DELETE' });
  assert.equal(del.status, 200, del.text);
  assert.equal(del.json.status, 'revoked');
  for (let i = 0; i < 3; i++) assert.equal(await status(rot.json.secret), 401, 'revoked: 401');
  assert.equal(await sim.calls('k-model'), calls, 'no upstream call for a revoked key');
  assert.equal((await admin(`keys/${k.id}`, { method: 'DELETE' })).status, 404);
  assert.equal((await admin(`keys/${k.id}/rotate`, { method: 'POST' })).status, 404);
});

test("a key's budget stops it after the request that crossed it", async () => {
  const k = await createKey({ client: 'dave', routes: ['chat'], budget: '3/day' });
  assert.deepEqual(k.budget, { usd: 3, period: 'day' });
  assert.equal(await status(k.secret), 200); // $2
  assert.equal(await status(k.secret), 200); // $4: crosses $3
  const calls = await sim.calls('k-model');
  const res = await chat(k.secret);
  assert.equal(res.status, 429);
  assert.equal((await res.json()).error.code, 'budget_exceeded');
  assert.equal(await sim.calls('k-model'), calls);
  // Raised at run time: served again.
  const p = await admin(`keys/${k.id}`, { method: 'PATCH', body: { budget: { usd: 100, period: 'day' } } });
  assert.equal(p.status, 200, p.text);
  assert.equal(await status(k.secret), 200);
  const c = await admin(`keys/${k.id}`, { method: 'PATCH', body: { rpm: 1 } });
  assert.equal(c.status, 200);
  await status(k.secret);
  assert.equal(await status(k.secret), 429, 'rpm 1 set at run time');
});

test('bad writes: 400 without echoing the body, unknown ids 404, config clients 409', async () => {
  const cases = [
    { client: 'x' }, // no routes
    { client: 'x', routes: ['no-such-route'] },
    { client: 'x', routes: ['chat'], rpm: -1 },
    { client: 'x', routes: ['chat'], budget: '5/week' },
    { client: 'x', routes: ['chat'], surprise: 'bsk_sneaky_value' },
  ];
  for (const body of cases) {
    const r = await admin('keys', { method: 'POST', body });
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.ok(!r.text.includes('bsk_sneaky_value'));
  }
  const raw = await fetch(`${gw.url}/admin/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}` },
    body: '{"client": "bsk_0000 not json',
  });
  assert.equal(raw.status, 400);
  assert.ok(!(await raw.text()).includes('bsk_0000'));
  assert.equal((await admin('keys/key_0000000000000000')).status, 404);
  assert.equal((await admin('keys/key_0000000000000000', { method: 'PATCH', body: { rpm: 1 } })).status, 404);
  for (const [p, method] of [['keys/alpha', 'PATCH'], ['keys/alpha', 'DELETE'], ['keys/alpha/rotate', 'POST']]) {
    const r = await admin(p, { method, body: method === 'PATCH' ? { rpm: 1 } : undefined });
    assert.equal(r.status, 409, `${method} ${p}`);
  }
  assert.equal((await admin('keys/alpha')).json.source, 'config');
  assert.equal(await status(ALPHA), 200, 'the config client still works');
  // A client key is not an admin key, a run-time one neither.
  const k = await createKey({ client: 'eve', routes: ['*'] });
  assert.equal((await admin('keys', { key: ALPHA })).status, 403);
  assert.equal((await admin('keys', { key: k.secret })).status, 403);
});

test('a member named twice, escaped or not, or oversized metadata: 400 and no key made', async () => {
  const before = (await admin('keys')).json.keys.length;
  const bodies = [
    '{"client":"dup","routes":["chat"],"routes":["*"]}',
    '{"client":"dup","routes":["chat"],"r\\u006futes":["*"]}',
    '{"client":"dup","client":"other","routes":["chat"]}',
    JSON.stringify({ client: 'dup', routes: ['chat'], metadata: { blob: 'x'.repeat(5000) } }),
  ];
  for (const body of bodies) {
    const res = await fetch(`${gw.url}/admin/keys`, {
      method: 'POST', headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, body,
    });
    assert.equal(res.status, 400, body.slice(0, 80));
    await res.arrayBuffer();
  }
  const team = await fetch(`${gw.url}/admin/teams`, {
    method: 'POST', headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: '{"id":"t-dup","rpm":5,"rp\\u006d":500}',
  });
  assert.equal(team.status, 400);
  await team.arrayBuffer();
  assert.equal((await admin('keys')).json.keys.length, before, 'nothing was made');
  assert.equal((await admin('teams/t-dup')).status, 404);
});

test('a read admin key may list and view, and gets 403 on every write', async () => {
  const k = await createKey({ client: 'frank', routes: ['chat'] });
  assert.equal((await admin('keys', { key: READER })).status, 200);
  assert.equal((await admin(`keys/${k.id}`, { key: READER })).status, 200);
  assert.equal((await admin('audit', { key: READER })).status, 200);
  assert.equal((await admin('targets', { key: READER })).status, 200);
  assert.equal((await admin('clients', { key: READER })).status, 200);
  const before = (await admin('audit')).json.entries.length;
  const writes = [
    ['keys', 'POST', { client: 'mallory', routes: ['*'] }],
    [`keys/${k.id}`, 'PATCH', { rpm: 5 }],
    [`keys/${k.id}/rotate`, 'POST', {}],
    [`keys/${k.id}`, 'DELETE'],
    ['targets/t1/disable', 'POST'],
    ['targets/t1/enable', 'POST'],
    ['clients/alpha/reset-spend', 'POST'],
  ];
  for (const [p, method, body] of writes) {
    const r = await admin(p, { method, key: READER, body });
    assert.equal(r.status, 403, `${method} ${p}`);
    assert.equal(r.json.error.code, 'read_only_admin_key');
  }
  assert.equal((await admin('audit')).json.entries.length, before, 'a refused write is not a change');
  assert.equal(await status(k.secret), 200, 'the key was not changed');
});

test('the audit trail has every write, with the admin id, and no secret anywhere', async () => {
  const since = Date.now();
  const k = await createKey({ client: 'grace', routes: ['chat'] });
  assert.equal((await admin(`keys/${k.id}`, { method: 'PATCH', body: { tpm: 1000 } })).status, 200);
  const rot = await admin(`keys/${k.id}/rotate`, { method: 'POST', body: { grace_s: 0 } });
  secrets.push(rot.json.secret);
  assert.equal(await status(k.secret), 401, 'grace 0: the old secret is refused at once');
  assert.equal((await admin(`keys/${k.id}`, { method: 'DELETE' })).status, 200);
  assert.equal((await admin('targets/t2/disable', { method: 'POST' })).status, 200);
  assert.equal((await admin('targets/t2/enable', { method: 'POST' })).status, 200);
  assert.equal((await admin('clients/alpha/reset-spend', { method: 'POST' })).status, 200);

  const r = await admin(`audit?since=${since}`);
  assert.equal(r.status, 200);
  const actions = r.json.entries.map((e) => `${e.action} ${e.subject}`);
  assert.deepEqual(actions, [
    `key.create ${k.id}`,
    `key.update ${k.id}`,
    `key.rotate ${k.id}`,
    `key.revoke ${k.id}`,
    'target.disable t2',
    'target.enable t2',
    'spend.reset alpha',
  ]);
  for (const e of r.json.entries) assert.equal(e.admin, 'admin');
  const upd = r.json.entries[1];
  assert.equal(upd.before.tpm, undefined);
  assert.equal(upd.after.tpm, 1000);
  const only = await admin(`audit?subject=${k.id}`);
  assert.ok(only.json.entries.length >= 4 && only.json.entries.every((e) => e.subject === k.id));
  // One JSON log line per write.
  const lines = await waitFor(
    () => {
      const l = gw.logs().split('\n').filter((x) => x.includes('"admin_audit"') && x.includes(k.id));
      return l.length === 4 ? l : null;
    },
    { what: 'audit log lines' },
  );
  for (const l of lines) JSON.parse(l);
  const all = (await admin('audit')).text + gw.logs();
  for (const s of secrets) assert.ok(!all.includes(s), 'a secret leaked into the audit trail or logs');
  assert.ok(!all.includes(s32(secrets[0])), 'nor its hash');
});

// The hex SHA-256 of <s> (the keyring's form of a secret).
import { createHash } from 'node:crypto';
function s32(s) {
  return createHash('sha256').update(s).digest('hex');
}

test('a restart on SQLite keeps keys, revocations, spend and the audit trail', async () => {
  const k = await createKey({ client: 'heidi', routes: ['chat'], budget: { usd: 100, period: 'month' } });
  assert.equal(await status(k.secret), 200);
  const gone = await createKey({ client: 'ivan', routes: ['chat'] });
  assert.equal((await admin(`keys/${gone.id}`, { method: 'DELETE' })).status, 200);
  const auditBefore = (await admin('audit')).json.entries.length;
  await gw.stop();
  gw = await start();
  assert.equal(await status(k.secret), 200, 'the key survived the restart');
  assert.equal(await status(gone.secret), 401, 'so did the revocation');
  const one = await admin(`keys/${k.id}`);
  await waitFor(async () => (await admin(`keys/${k.id}`)).json.spend_usd === 4, { what: 'spend kept' });
  assert.equal(one.json.client, 'heidi');
  assert.equal((await admin('audit')).json.entries.length, auditBefore);
});

test('a revocation racing a request: the stream in flight ends whole, the next request is 401', async () => {
  const k = await createKey({ client: 'judy', routes: ['slow'] });
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${k.secret}` },
    body: JSON.stringify({ model: 'slow', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
  });
  assert.equal(res.status, 200);
  const reader = res.body.getReader();
  const first = await reader.read(); // the stream has started
  assert.ok(!first.done);
  assert.equal((await admin(`keys/${k.id}`, { method: 'DELETE' })).status, 200);
  const calls = await sim.calls('k-slow');
  const refused = await chat(k.secret, 'slow');
  assert.equal(refused.status, 401, 'refused from the answer of the DELETE on');
  const body401 = await refused.text();
  const unknown = await chat('bsk_' + '0'.repeat(48), 'slow');
  const noId = (t) => t.replace(/req_[0-9a-z]+/g, 'req_');
  assert.equal(noId(await unknown.text()), noId(body401), 'no hint that the key existed');
  let text = new TextDecoder().decode(first.value);
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
  }
  assert.match(text, /data: \[DONE\]/, 'the stream that started before the revocation ends whole');
  assert.equal(await sim.calls('k-slow'), calls, 'no upstream call after the revocation');
});

test('expires_at: an expired key is refused, and lifting the expiry serves it again', async () => {
  const k = await createKey({ client: 'kate', routes: ['chat'], expires_at: 1 });
  assert.equal(k.expires_ms, 1000);
  assert.equal(await status(k.secret), 401);
  assert.equal((await admin(`keys/${k.id}`)).json.status, 'expired');
  assert.equal((await admin(`keys/${k.id}`, { method: 'PATCH', body: { expires_at: null } })).status, 200);
  assert.equal(await status(k.secret), 200);
  const later = Math.floor(Date.now() / 1000) + 3600;
  assert.equal((await admin(`keys/${k.id}`, { method: 'PATCH', body: { expires_at: later } })).status, 200);
  assert.equal(await status(k.secret), 200, 'not expired yet');
});
