// Safe recovery (docs/design.md §6): Idempotency-Key records and the tool-ledger gate against
// bascule-sim, with the SQLite store.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSim, startGateway, waitFor } from '../lib/harness.mjs';

let sim, gw;

before(async () => {
  sim = await startSim();
  const dir = mkdtempSync(join(tmpdir(), 'bascule-safety-'));
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 2
store: { kind: sqlite, path: "${join(dir, 'state.db')}" }
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-s"], health: { probe: none } }
targets:
  idem: { provider: sim, model: s-idem }
  wp: { provider: sim, model: s-wp }
  wpe: { provider: sim, model: s-wpe }
  hang: { provider: sim, model: s-hang }
  hange: { provider: sim, model: s-hange }
routes:
  idem: { primary: [idem] }
  wp:
    primary: [wp]
    equivalent: [wpe]
    envelope: { max_same_target_attempts: 1 }
  hang:
    primary: [hang]
    equivalent: [hange]
    envelope: { deadline_ms: 3000, reserve_for_fallback_ms: 1500 }
`,
  });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

const calls = (model) => sim.calls(model);

function chat(route, headers = {}, extra = {}) {
  return fetch(`${gw.base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer client-1', ...headers },
    body: JSON.stringify({ model: route, messages: [{ role: 'user', content: 'hi' }], ...extra }),
  });
}

test('the same Idempotency-Key twice: one upstream call, the stored answer replayed', async () => {
  const a = await chat('idem', { 'idempotency-key': 'k-plain-1' });
  const bodyA = await a.text();
  assert.equal(a.status, 200);
  assert.equal(a.headers.get('x-bascule-idempotent-replay'), null);
  const b = await chat('idem', { 'idempotency-key': 'k-plain-1' });
  assert.equal(b.status, 200);
  assert.equal(b.headers.get('x-bascule-idempotent-replay'), 'true');
  assert.equal(await b.text(), bodyA);
  assert.equal(await calls('s-idem'), 1);
  // Another client's same key is its own record.
  const c = await chat('idem', { 'idempotency-key': 'k-plain-1', authorization: 'Bearer client-2' });
  assert.equal(c.headers.get('x-bascule-idempotent-replay'), null);
  await c.text();
  assert.equal(await calls('s-idem'), 2);
});

test('a stream is replayed as the same event sequence', async () => {
  const a = await chat('idem', { 'idempotency-key': 'k-stream-1' }, { stream: true });
  const textA = await a.text();
  assert.match(textA, /\[DONE\]/);
  const before = await calls('s-idem');
  const b = await chat('idem', { 'idempotency-key': 'k-stream-1' }, { stream: true });
  assert.equal(b.headers.get('x-bascule-idempotent-replay'), 'true');
  assert.match(b.headers.get('content-type'), /text\/event-stream/);
  assert.equal(await b.text(), textA);
  assert.equal(await calls('s-idem'), before);
});

test('a repeat while the first is in flight gets 409 with Retry-After', async () => {
  await sim.setModel('s-idem', { tokens: 10, token_delay_ms: 60 });
  const first = chat('idem', { 'idempotency-key': 'k-busy-1' }, { stream: true });
  await waitFor(async () => (await sim.stats()).models['s-idem']?.in_flight === 1, { what: 'first in flight' });
  const second = await chat('idem', { 'idempotency-key': 'k-busy-1' }, { stream: true });
  assert.equal(second.status, 409);
  assert.ok(second.headers.get('retry-after'));
  assert.equal((await second.json()).error.code, 'idempotency_key_in_use');
  await (await first).text();
  await sim.setModel('s-idem', { tokens: 12, token_delay_ms: 0 });
});

test('the same key with a different body gets 422', async () => {
  await (await chat('idem', { 'idempotency-key': 'k-body-1' })).text();
  const res = await chat('idem', { 'idempotency-key': 'k-body-1' }, { temperature: 0.5 });
  assert.equal(res.status, 422);
  assert.equal((await res.json()).error.code, 'idempotency_key_reused');
});

test('a failed first request is not stored: a repeat runs again', async () => {
  await sim.setModel('s-idem', { script: [{ action: 'status', status: 400 }] });
  const a = await chat('idem', { 'idempotency-key': 'k-fail-1' });
  assert.equal(a.status, 400);
  await a.text();
  const b = await chat('idem', { 'idempotency-key': 'k-fail-1' });
  assert.equal(b.status, 200);
  assert.equal(b.headers.get('x-bascule-idempotent-replay'), null);
  await b.text();
});

// The record is settled before the client can see the end of the answer: a repeat sent
// the moment the first answer ends never meets "in use". Raced 25 times per shape, on a
// gateway with two worker loops (the repeat may land on the other one).
test('a repeat sent the moment an answer ends is a replay (or a rerun), never a 409', async () => {
  for (let i = 0; i < 25; i++) {
    for (const stream of [false, true]) {
      const key = `k-race-${stream ? 's' : 'j'}-${i}`;
      const a = await chat('idem', { 'idempotency-key': key }, { stream });
      const bodyA = await a.text();
      const b = await chat('idem', { 'idempotency-key': key }, { stream });
      assert.equal(b.status, 200, `${key}: ${b.status}`);
      assert.equal(b.headers.get('x-bascule-idempotent-replay'), 'true', key);
      assert.equal(await b.text(), bodyA);
    }
    await sim.setModel('s-idem', { script: [{ action: 'status', status: 400 }] });
    const key = `k-race-f-${i}`;
    const a = await chat('idem', { 'idempotency-key': key });
    assert.equal(a.status, 400);
    await a.text();
    const b = await chat('idem', { 'idempotency-key': key });
    assert.equal(b.status, 200, `${key}: ${b.status}`);
    assert.equal(b.headers.get('x-bascule-idempotent-replay'), null);
    await b.text();
  }
});

async function putLedger(op, state) {
  const res = await fetch(`${gw.base}/ledger/${op}`, {
    method: 'PUT', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ tool_name: 'send_email', state }),
  });
  assert.ok(res.status === 200 || res.status === 201, `ledger ${res.status}`);
}

test('write_possible with a started ledger entry: no replay, reconcile_required', async () => {
  await putLedger('op-started-1', 'started');
  await sim.setModel('s-wp', { script: [{ action: 'status', status: 503, times: 3 }] });
  const res = await chat('wp', { 'x-bascule-side-effects': 'write_possible', 'x-bascule-operation-id': 'op-started-1' });
  assert.equal(res.status, 409);
  const body = await res.json();
  assert.equal(body.error.code, 'reconcile_required');
  assert.match(body.error.message, /op-started-1/);
  assert.equal(res.headers.get('x-should-retry'), 'false');
  assert.equal(await calls('s-wp'), 1);
  assert.equal(await calls('s-wpe'), 0);
});

test('write_possible with a planned ledger entry: the normal workflows apply', async () => {
  await putLedger('op-planned-1', 'planned');
  await sim.setModel('s-wp', { script: [{ action: 'status', status: 503 }] });
  const before = await calls('s-wpe');
  const res = await chat('wp', { 'x-bascule-side-effects': 'write_possible', 'x-bascule-operation-id': 'op-planned-1' });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-bascule-target'), 'wpe');
  assert.equal((await calls('s-wpe')) - before, 1);
});

test('a timeout after the request was sent, write_possible: never replayed', async () => {
  await sim.setModel('s-hang', { script: [{ action: 'hang' }] });
  const res = await chat('hang', { 'x-bascule-side-effects': 'write_possible', 'x-bascule-operation-id': 'op-hang-1' });
  assert.equal(res.status, 502);
  assert.equal((await res.json()).error.code, 'reconcile_required');
  assert.equal(await calls('s-hang'), 1);
  assert.equal(await calls('s-hange'), 0, 'no failover either');
  const metrics = await (await fetch(`${gw.url}/metrics`)).text();
  assert.match(metrics, /bascule_outcomes_total\{route="hang",layer="transport",result="side_effect_uncertain"\} 1/);
  // With read_only the same failure fails over.
  await sim.setModel('s-hang', { script: [{ action: 'hang' }] });
  const ok = await chat('hang', { 'x-bascule-side-effects': 'read_only' });
  assert.equal(ok.status, 200);
  assert.equal(ok.headers.get('x-bascule-target'), 'hange');
});

test('a bad operation id or idempotency key is a 400', async () => {
  let res = await chat('idem', { 'x-bascule-operation-id': 'bad id with spaces' });
  assert.equal(res.status, 400);
  res = await chat('idem', { 'idempotency-key': 'x'.repeat(300) });
  assert.equal(res.status, 400);
});
