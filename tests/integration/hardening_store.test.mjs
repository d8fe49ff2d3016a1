// SPDX-License-Identifier: MIT
// Hardening of the request rules and the state store, against the real binary and
// bascule-sim (docs/internals/store.md, anthropic-inbound.md):
//   - one UTF-8 rule: ill-formed UTF-8 anywhere in a JSON body is a 400 on every endpoint
//     that takes one, and the provider sees nothing;
//   - Idempotency-Key scopes keep credential kinds apart (x-api-key: V is not
//     Authorization: V), and a repeat with the same credential is replayed;
//   - a store that cannot record the key fails the request closed (503 store_unavailable,
//     retryable, nothing sent upstream): an SQLite file moved away while running, and a
//     full database (the test build's BASCULE_TEST_SQLITE_MAX_PAGES);
//   - the SQLite file deleted or moved away: ledger writes answer 503 instead of a 201 that
//     a restart would not find, and resume once the file is back in place.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { mkdtempSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSim, startGateway } from '../lib/harness.mjs';

const dir = mkdtempSync(join(tmpdir(), 'bascule-hardening-'));
let sim;

function config(dbPath) {
  return `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: warn }
store: { kind: sqlite, path: "${dbPath}" }
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-s"], health: { probe: none } }
targets:
  chat: { provider: sim, model: h-chat }
  emb: { provider: sim, model: h-emb, capabilities: [text, embeddings] }
routes:
  chat: { primary: [chat] }
  emb: { primary: [emb] }
`;
}

before(async () => {
  sim = await startSim();
});

after(async () => {
  await sim?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function send(gw, method, path, body, headers = {}) {
  const res = await fetch(`${gw.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
  const text = await res.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {
    // not JSON: the assertion that follows says so
  }
  return { status: res.status, headers: res.headers, text, json };
}

// ---- one UTF-8 rule -----------------------------------------------------------------------

const BAD = {
  overlong: Buffer.from([0xe0, 0x80, 0x94]),
  surrogate: Buffer.from([0xed, 0xa0, 0x80]),
  'past U+10FFFF': Buffer.from([0xf4, 0x90, 0x80, 0x80]),
};

// Each endpoint's body with the bad bytes inside a string value.
const BODIES = {
  chat: ['POST', '/v1/chat/completions', (b) => [`{"model":"chat","messages":[{"role":"user","content":"a`, b, `b"}]}`]],
  messages: ['POST', '/v1/messages', (b) => [`{"model":"chat","max_tokens":5,"messages":[{"role":"user","content":"a`, b, `b"}]}`]],
  embeddings: ['POST', '/v1/embeddings', (b) => [`{"model":"emb","input":"a`, b, `b"}`]],
  ledger: ['PUT', '/v1/ledger/op-utf8', (b) => [`{"tool_name":"t`, b, `","state":"planned"}`]],
};

async function expectUtf8Refused(endpoints) {
  const gw = await startGateway({ config: config(join(dir, `utf8-${endpoints.join('-')}.db`)) });
  try {
    const before = (await sim.stats()).total;
    for (const [method, path, parts] of endpoints.map((e) => BODIES[e])) {
      for (const [what, bytes] of Object.entries(BAD)) {
        const body = Buffer.concat(parts(bytes).map((p) => (Buffer.isBuffer(p) ? p : Buffer.from(p))));
        const r = await send(gw, method, path, body);
        assert.equal(r.status, 400, `${method} ${path} with ${what}: ${r.text}`);
        assert.match(r.json?.error?.message ?? '',
          /^We could not parse the JSON body of your request: .* at line 1 column \d+$/, `${path} ${what}: ${r.text}`);
        if (path === '/v1/messages') assert.equal(r.json.error.type, 'invalid_request_error');
        else assert.equal(r.json.error.code, 'invalid_json', `${path} ${what}`);
      }
    }
    assert.equal((await sim.stats()).total, before, 'no request reached the provider');
    if (endpoints.includes('ledger')) assert.equal((await send(gw, 'GET', '/v1/ledger/op-utf8')).status, 404);
  } finally {
    await gw.stop();
  }
}

test('ill-formed UTF-8 in a JSON body is a 400 (chat, messages, ledger); the provider sees nothing', async () => {
  await expectUtf8Refused(['chat', 'messages', 'ledger']);
});

// /v1/embeddings parses with api__parse_json (openai_chat.c), whose json-c UTF-8 check lets
// these bytes through; that file is fixed on another branch of the same change.
test('ill-formed UTF-8 in a JSON body is a 400 on /v1/embeddings', async () => {
  await expectUtf8Refused(['embeddings']);
});

// ---- idempotency scopes -------------------------------------------------------------------

function chat(gw, key, headers) {
  return send(gw, 'POST', '/v1/chat/completions',
    JSON.stringify({ model: 'chat', messages: [{ role: 'user', content: 'scope' }] }),
    { ...(key ? { 'idempotency-key': key } : {}), ...headers });
}

test('Idempotency-Key scopes: x-api-key and Authorization are apart; one credential replays', async () => {
  const gw = await startGateway({ config: config(join(dir, 'scope.db')) });
  try {
    const calls = () => sim.calls('h-chat');
    const start = await calls();
    const pairs = [
      ['k-scope-1', { 'x-api-key': 'V' }, { authorization: 'Bearer V' }],
      ['k-scope-2', { 'x-api-key': 'V' }, { authorization: 'V' }],
    ];
    let n = start;
    for (const [key, a, b] of pairs) {
      const ra = await chat(gw, key, a);
      assert.equal(ra.status, 200, ra.text);
      assert.equal(ra.headers.get('x-bascule-idempotent-replay'), null);
      const rb = await chat(gw, key, b);
      assert.equal(rb.status, 200, rb.text);
      assert.equal(rb.headers.get('x-bascule-idempotent-replay'), null, `${key}: ${JSON.stringify(b)} shared a scope`);
      n += 2;
      assert.equal(await calls(), n, `${key}: two upstream calls`);
      // The same credential again: the stored answer, no call.
      for (const h of [a, b]) {
        const again = await chat(gw, key, h);
        assert.equal(again.status, 200);
        assert.equal(again.headers.get('x-bascule-idempotent-replay'), 'true', JSON.stringify(h));
      }
      assert.equal(await calls(), n);
    }
    // Anonymous requests share the gateway-wide scope (docs/internals/store.md).
    const anon = await chat(gw, 'k-scope-anon', {});
    assert.equal(anon.status, 200);
    const anon2 = await chat(gw, 'k-scope-anon', {});
    assert.equal(anon2.headers.get('x-bascule-idempotent-replay'), 'true');
    const keyed = await chat(gw, 'k-scope-anon', { 'x-api-key': 'anonymous' });
    assert.equal(keyed.headers.get('x-bascule-idempotent-replay'), null);
    assert.equal(await calls(), n + 2);
  } finally {
    await gw.stop();
  }
});

// ---- the SQLite file moved, deleted, or full ------------------------------------------------

function putEntry(gw, op, state = 'planned') {
  return send(gw, 'PUT', `/v1/ledger/${op}`, JSON.stringify({ tool_name: 'send_email', state }));
}

function assertStoreUnavailable(r) {
  assert.equal(r.status, 503, r.text);
  assert.equal(r.json?.error?.code, 'store_unavailable', r.text);
}

test('the store file moved away: 503 store_unavailable (ledger and Idempotency-Key), back in place: resumes', async () => {
  const db = join(dir, 'moved.db');
  const gw = await startGateway({ config: config(db) });
  try {
    assert.equal((await putEntry(gw, 'op-m1')).status, 201);
    renameSync(db, `${db}.away`);
    // Every ledger write is refused: a 201 now would be lost at the next restart.
    assertStoreUnavailable(await putEntry(gw, 'op-m2'));
    assertStoreUnavailable(await putEntry(gw, 'op-m1', 'started'));
    // An Idempotency-Key request fails closed: retryable 503, nothing sent upstream.
    const before = await sim.calls('h-chat');
    const r = await chat(gw, 'k-moved-1', { authorization: 'Bearer c' });
    assertStoreUnavailable(r);
    assert.equal(r.headers.get('x-should-retry'), 'true');
    assert.equal(r.headers.get('retry-after'), '1');
    assert.equal(r.headers.get('retry-after-ms'), '1000');
    assert.equal(await sim.calls('h-chat'), before, 'no upstream call');
    // A request without a key does not need the store.
    assert.equal((await chat(gw, undefined, {})).status, 200);
    // Put back: the same file, writes resume.
    renameSync(`${db}.away`, db);
    assert.equal((await putEntry(gw, 'op-m2')).status, 201);
    assert.equal((await putEntry(gw, 'op-m1', 'started')).status, 200);
    assert.match(gw.logs(), /is no longer the file this gateway opened/);
  } finally {
    await gw.stop();
  }
  // Everything acknowledged is in the file after a restart.
  const gw2 = await startGateway({ config: config(db) });
  try {
    const e1 = await send(gw2, 'GET', '/v1/ledger/op-m1');
    assert.equal(e1.status, 200);
    assert.equal(e1.json.state, 'started');
    assert.equal((await send(gw2, 'GET', '/v1/ledger/op-m2')).status, 200);
  } finally {
    await gw2.stop();
  }
});

test('the store file deleted: 503 from then on, a new file at the path is not adopted', async () => {
  const db = join(dir, 'deleted.db');
  const gw = await startGateway({ config: config(db) });
  try {
    assert.equal((await putEntry(gw, 'op-d1')).status, 201);
    unlinkSync(db);
    assertStoreUnavailable(await putEntry(gw, 'op-d2'));
    assertStoreUnavailable(await send(gw, 'GET', '/v1/ledger/op-d1'));
    // A fresh file appears there: still refused, since it holds none of the entries
    // acknowledged so far.
    writeFileSync(db, '');
    assertStoreUnavailable(await putEntry(gw, 'op-d3'));
  } finally {
    await gw.stop();
  }
});

test('a full store: an Idempotency-Key request gets 503 store_unavailable and is not sent', async () => {
  // The test build caps the SQLite file at 8 pages: the schema takes 6, so a few records
  // fill it. Each request has a fresh long key; one of them finds the file full.
  const gw = await startGateway({
    config: config(join(dir, 'full.db')),
    env: { BASCULE_TEST_SQLITE_MAX_PAGES: '8' },
  });
  try {
    let refused = null;
    for (let i = 0; i < 300 && !refused; i++) {
      const before = await sim.calls('h-chat');
      const key = `k-full-${i}-`.padEnd(255, 'x');
      const r = await chat(gw, key, { authorization: 'Bearer full' });
      if (r.status === 503) {
        refused = r;
        assert.equal(await sim.calls('h-chat'), before, 'the refused request was not sent');
      } else {
        assert.equal(r.status, 200, r.text);
      }
    }
    assert.ok(refused, 'the store filled up within 300 requests');
    assertStoreUnavailable(refused);
    assert.equal(refused.headers.get('x-should-retry'), 'true');
    assert.equal(refused.headers.get('retry-after'), '1');
  } finally {
    await gw.stop();
  }
});
