// SPDX-License-Identifier: MIT
// The tool side-effect ledger over HTTP (docs/design.md §6; docs/internals/store.md): PUT/GET of
// entries, the transition rules answered with 409, bad input with 400, OpenAI-shaped
// errors; and durability: every write the gateway acknowledged is still there after
// kill -9 and a restart on the same SQLite file. The real bascule binary; no provider is
// called (the one configured points at a closed port).
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGateway } from '../lib/harness.mjs';

const dir = mkdtempSync(join(tmpdir(), 'bascule-ledger-'));
const dbPath = join(dir, 'state.db');
let gw;

function config(store) {
  return `
listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: warn }
store: ${store}
providers:
  nowhere:
    kind: openai_compatible
    base_url: "http://127.0.0.1:9/v1"
    keys: ["sk-unused"]
    health: { probe: none }
targets:
  m@nowhere: { provider: nowhere, model: m }
routes:
  chat:
    primary: [m@nowhere]
`;
}

const sqliteStore = `{ kind: sqlite, path: "${dbPath}" }`;

async function put(base, op, body, raw = false) {
  const res = await fetch(`${base}/v1/ledger/${op}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: raw ? body : JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: await res.json() };
}

async function get(base, op) {
  const res = await fetch(`${base}/v1/ledger/${op}`);
  return { status: res.status, body: await res.json() };
}

function assertError(r, status, code) {
  assert.equal(r.status, status, JSON.stringify(r.body));
  assert.equal(typeof r.body.error?.message, 'string');
  assert.equal(typeof r.body.error?.type, 'string');
  assert.equal(r.body.error.code, code);
  assert.ok('param' in r.body.error);
}

before(async () => {
  gw = await startGateway({ config: config(sqliteStore) });
});

after(async () => {
  await gw?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('PUT creates (201), moves (200), repeats (200, unchanged); GET reads it back', async () => {
  const created = await put(gw.url, 'op-basic', { tool_name: 'send_email', state: 'planned' });
  assert.equal(created.status, 201);
  assert.equal(created.headers.get('location'), '/v1/ledger/op-basic');
  assert.equal(created.body.object, 'ledger.entry');
  assert.equal(created.body.operation_id, 'op-basic');
  assert.equal(created.body.tool_name, 'send_email');
  assert.equal(created.body.state, 'planned');
  assert.equal(created.body.external_reference, null);
  assert.equal(created.body.version, 1);
  assert.ok(created.body.created_at_ms > 1.6e12);

  const started = await put(gw.url, 'op-basic', {
    tool_name: 'send_email', state: 'started', external_reference: 'msg-42',
  });
  assert.equal(started.status, 200);
  assert.equal(started.body.state, 'started');
  assert.equal(started.body.version, 2);
  assert.equal(started.body.external_reference, 'msg-42');

  const again = await put(gw.url, 'op-basic', { tool_name: 'send_email', state: 'started' });
  assert.equal(again.status, 200);
  assert.equal(again.body.version, 2);

  const done = await put(gw.url, 'op-basic', { tool_name: 'send_email', state: 'succeeded' });
  assert.equal(done.status, 200);
  assert.equal(done.body.state, 'succeeded');

  const read = await get(gw.url, 'op-basic');
  assert.equal(read.status, 200);
  assert.deepEqual(read.body, done.body);
});

test('illegal transitions and conflicts answer 409 and change nothing', async () => {
  assert.equal((await put(gw.url, 'op-409', { tool_name: 'charge', state: 'started' })).status, 201);
  assertError(await put(gw.url, 'op-409', { tool_name: 'charge', state: 'planned' }), 409, 'illegal_transition');
  assert.equal((await put(gw.url, 'op-409', { tool_name: 'charge', state: 'failed' })).status, 200);
  const terminal = await put(gw.url, 'op-409', { tool_name: 'charge', state: 'succeeded' });
  assertError(terminal, 409, 'illegal_transition');
  assert.match(terminal.body.error.message, /failed/);
  assertError(await put(gw.url, 'op-409', { tool_name: 'refund', state: 'failed' }), 409, 'illegal_transition');
  // a new operation cannot start in a terminal state
  assertError(await put(gw.url, 'op-409-new', { tool_name: 'x', state: 'succeeded' }), 409, 'illegal_transition');
  assert.equal((await get(gw.url, 'op-409-new')).status, 404);
  const read = await get(gw.url, 'op-409');
  assert.equal(read.body.state, 'failed');
  assert.equal(read.body.version, 2);
});

test('reconciliation: unknown settles to succeeded or failed', async () => {
  assert.equal((await put(gw.url, 'op-rec', { tool_name: 'deploy', state: 'started' })).status, 201);
  assert.equal((await put(gw.url, 'op-rec', { tool_name: 'deploy', state: 'unknown' })).status, 200);
  const settled = await put(gw.url, 'op-rec', { tool_name: 'deploy', state: 'succeeded', external_reference: 'rel-7' });
  assert.equal(settled.status, 200);
  assert.equal(settled.body.state, 'succeeded');
  assert.equal(settled.body.external_reference, 'rel-7');
});

test('bad input: 400 with the offending parameter; unknown: 404; wrong method: 405', async () => {
  assertError(await put(gw.url, 'op-bad', '{"tool_name": "t", "state": ', true), 400, 'invalid_json');
  assertError(await put(gw.url, 'op-bad', '[]', true), 400, 'invalid_json');
  let r = await put(gw.url, 'op-bad', { tool_name: 't' });
  assertError(r, 400, 'invalid_request');
  assert.match(r.body.error.message, /state/);
  r = await put(gw.url, 'op-bad', { tool_name: 't', state: 'done' });
  assertError(r, 400, 'invalid_request');
  r = await put(gw.url, 'op-bad', { tool_name: 't', state: 'planned', extra: 1 });
  assertError(r, 400, 'invalid_request');
  assert.match(r.body.error.message, /extra/);
  r = await put(gw.url, 'op-bad', { tool_name: 'x'.repeat(129), state: 'planned' });
  assertError(r, 400, 'invalid_request');
  assert.equal((await put(gw.url, 'x'.repeat(128), { tool_name: 't', state: 'planned' })).status, 201);
  assertError(await put(gw.url, 'x'.repeat(129), { tool_name: 't', state: 'planned' }), 400, 'invalid_operation_id');
  assertError(await put(gw.url, 'a%20b', { tool_name: 't', state: 'planned' }), 400, 'invalid_operation_id');
  assertError(await get(gw.url, 'never-written'), 404, 'operation_not_found');
  const res = await fetch(`${gw.url}/v1/ledger/op-basic`, { method: 'POST', body: '{}' });
  assert.equal(res.status, 405);
  assert.equal((await res.json()).error.code, 'method_not_allowed');
  // nothing was stored by the refused calls
  assert.equal((await get(gw.url, 'op-bad')).status, 404);
});

// Issue 24: a member named twice, escaped or not, is refused as on /v1/chat/completions; it
// used to be accepted with the last one winning ("st\u0061te" overrode "state").
test('a member named twice, escapes decoded, is a 400 duplicate_key and stores nothing', async () => {
  const bodies = [
    '{"tool_name":"t","state":"planned","st\\u0061te":"started"}',
    '{"tool_name":"t","state":"planned","state":"started"}',
    '{"t\\u006fol_name":"a","tool_name":"b","state":"planned"}',
  ];
  for (const body of bodies) {
    const r = await put(gw.url, 'op-dup', body, true);
    assertError(r, 400, 'duplicate_key');
    assert.match(r.body.error.message, /'(state|tool_name)' must appear at most once/);
  }
  assert.equal((await get(gw.url, 'op-dup')).status, 404);
  // an escaped name alone is that member
  const ok = await put(gw.url, 'op-dup', '{"tool_name":"t","st\\u0061te":"started"}', true);
  assert.equal(ok.status, 201);
  assert.equal(ok.body.state, 'started');
});

test('concurrent PUTs of one operation: exactly one creates it', async () => {
  const results = await Promise.all(
    Array.from({ length: 16 }, () => put(gw.url, 'op-race', { tool_name: 'race', state: 'started' })),
  );
  const statuses = results.map((r) => r.status).sort();
  assert.equal(statuses.filter((s) => s === 201).length, 1);
  assert.equal(statuses.filter((s) => s === 200).length, 15);
  assert.equal((await get(gw.url, 'op-race')).body.version, 1);
});

test('durability: every acknowledged write survives kill -9 and a restart', async () => {
  const N = 120;
  const expected = new Map();
  // Writes go in waves of 12 concurrent requests, so several share one group commit.
  for (let wave = 0; wave < N; wave += 12) {
    const ops = Array.from({ length: 12 }, (_, i) => `dur-${wave + i}`);
    const first = await Promise.all(ops.map((op) => put(gw.url, op, { tool_name: 'tool', state: 'started' })));
    for (const r of first) assert.equal(r.status, 201);
    const second = await Promise.all(
      ops.map((op, i) =>
        put(gw.url, op, {
          tool_name: 'tool',
          state: (wave + i) % 3 === 0 ? 'succeeded' : (wave + i) % 3 === 1 ? 'failed' : 'unknown',
          external_reference: `ref-${wave + i}`,
        }),
      ),
    );
    for (const r of second) {
      assert.equal(r.status, 200);
      expected.set(r.body.operation_id, r.body);
    }
  }
  // The last acknowledgement just arrived: kill at once, no chance to flush anything.
  process.kill(gw.proc.pid, 'SIGKILL');
  const { signal } = await gw.proc.exited;
  assert.equal(signal, 'SIGKILL');

  gw = await startGateway({ config: config(sqliteStore) });
  for (const [op, want] of expected) {
    const r = await get(gw.url, op);
    assert.equal(r.status, 200, `${op} lost after kill -9`);
    assert.deepEqual(r.body, want);
  }
  // and the rules still hold on the recovered entries
  assertError(await put(gw.url, 'dur-0', { tool_name: 'tool', state: 'started' }), 409, 'illegal_transition');
  // entries written before the kill by the other tests are there too
  assert.equal((await get(gw.url, 'op-basic')).body.state, 'succeeded');
});

test('the memory store serves the same API (nothing survives a restart)', async () => {
  const mem = await startGateway({ config: config('{ kind: memory }') });
  try {
    const r = await put(mem.url, 'op-mem', { tool_name: 't', state: 'planned' });
    assert.equal(r.status, 201);
    assert.equal((await get(mem.url, 'op-mem')).body.state, 'planned');
    assertError(await put(mem.url, 'op-mem', { tool_name: 't', state: 'succeeded' }), 409, 'illegal_transition');
  } finally {
    assert.deepEqual(await mem.stop(), { code: 0, signal: null });
  }
  // The same config started again: the entry is gone, and the operation id is free.
  const again = await startGateway({ config: config('{ kind: memory }') });
  try {
    assertError(await get(again.url, 'op-mem'), 404, 'operation_not_found');
    assert.equal((await put(again.url, 'op-mem', { tool_name: 't', state: 'planned' })).status, 201);
  } finally {
    await again.stop();
  }
});
