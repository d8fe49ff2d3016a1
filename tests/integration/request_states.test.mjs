// The request state machine seen from outside: the access line says how long the request
// spent in each state it entered ("states", in ms), and a client that leaves ends the
// request from whatever state it is in. The real binary against bascule-sim.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startSim, startGateway, waitFor, readStream } from '../lib/harness.mjs';

let sim, gw;

function config(simBase) {
  return `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: info, format: json }
store: { kind: memory }
retry:
  backoff: { base_ms: 50, max_ms: 400, jitter: 0.2 }
providers:
  sim: { kind: openai_compatible, base_url: "${simBase}", keys: ["sk-st"], health: { probe: none } }
targets:
  stp: { provider: sim, model: stp }
  stra: { provider: sim, model: stra }
  stab: { provider: sim, model: stab }
  stdl: { provider: sim, model: stdl }
routes:
  plain:
    primary: [stp]
  ra:
    primary: [stra]
  abort:
    primary: [stab]
  slow:
    primary: [stdl]
`;
}

before(async () => {
  sim = await startSim();
  gw = await startGateway({ config: config(sim.base) });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

function chat(route, id, body = {}, extra = {}, headers = {}) {
  return fetch(`${gw.base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-request-id': id, ...headers },
    body: JSON.stringify({ model: route, messages: [{ role: 'user', content: 'hi' }], ...body }),
    ...extra,
  });
}

const accessLine = (id) => waitFor(
  () => gw.accessLog().find((l) => l.type === 'access' && l.request_id === id),
  { what: `access line of ${id}` });

function assertStates(line, want) {
  assert.equal(typeof line.states, 'object', 'the access line has per-state durations');
  assert.deepEqual(Object.keys(line.states).sort(), [...want].sort());
  let sum = 0;
  for (const [k, v] of Object.entries(line.states)) {
    assert.equal(typeof v, 'number', `${k} is a number of ms`);
    assert.ok(v >= 0, `${k} >= 0`);
    sum += v;
  }
  assert.ok(sum <= line.duration_ms + 1, `states (${sum} ms) fit in the duration (${line.duration_ms} ms)`);
}

test('a plain answer: the access line has the time spent in each state it entered', async () => {
  const res = await chat('plain', 'st-plain');
  assert.equal(res.status, 200);
  await res.json();
  const line = await accessLine('st-plain');
  assert.equal(line.termination, 'ok');
  assertStates(line, ['admit', 'pick', 'attempt', 'reply']);
});

// A run of the machine reads the clock once for all its moves (req__now_us); the run that
// follows a wait reads it again. Were a reading kept across the upstream's wait, the wait
// would vanish from the attempt's state, its span and the states' sum.
test('an upstream wait is in the attempt: its state, its span, the ttfb, and the states add up', async () => {
  await sim.setModel('stdl', { script: [{ action: 'delay', delay_ms: 300 }] });
  const res = await chat('slow', 'st-slow');
  assert.equal(res.status, 200);
  await res.json();
  const line = await accessLine('st-slow');
  assertStates(line, ['admit', 'pick', 'attempt', 'reply']);
  assert.ok(line.states.attempt >= 250, `the wait is in ATTEMPT (${line.states.attempt} ms)`);
  assert.ok(line.attempt_log[0].ms >= 250, `and in the attempt's span (${line.attempt_log[0].ms} ms)`);
  assert.ok(line.ttfb_ms >= 250, `and before the first byte (${line.ttfb_ms} ms)`);
  const sum = Object.values(line.states).reduce((a, b) => a + b, 0);
  assert.ok(sum >= line.duration_ms - 150,
    `the states (${sum} ms) account for the duration (${line.duration_ms} ms)`);
});

test('a stream goes through RELAY after the first frame', async () => {
  const res = await chat('plain', 'st-stream', { stream: true });
  assert.equal(res.status, 200);
  const { text } = await readStream(res);
  assert.match(text, /\[DONE\]/);
  const line = await accessLine('st-stream');
  assertStates(line, ['admit', 'pick', 'attempt', 'relay']);
});

test('a Retry-After wait is counted in backoff, and a state visited twice adds up', async () => {
  await sim.setModel('stra', { script: [{ action: 'status', status: 429, headers: { 'retry-after': '1' } }] });
  const res = await chat('ra', 'st-ra');
  assert.equal(res.status, 200);
  await res.json();
  const line = await accessLine('st-ra');
  assert.equal(line.attempts, 2);
  assertStates(line, ['admit', 'pick', 'backoff', 'attempt', 'reply']);
  assert.ok(line.states.backoff >= 900, `the second waited in backoff (${line.states.backoff} ms)`);
});

test('a client that leaves during backoff ends the request from that state', async () => {
  await sim.setModel('stab', { script: [{ action: 'status', status: 503, headers: { 'retry-after': '2' } }] });
  const ac = new AbortController();
  const res = chat('abort', 'st-abort', {}, { signal: ac.signal }).catch((e) => e);
  await waitFor(() => gw.accessLog().some((l) => l.type === 'attempt' && l.request_id === 'st-abort'),
    { what: 'the first attempt line' });
  ac.abort();
  await res;
  const line = await accessLine('st-abort');
  assert.equal(line.termination, 'client_abort');
  assert.equal(line.status, 499);
  assertStates(line, ['admit', 'pick', 'attempt', 'backoff']);
});

test('ADMIT answers an idempotent replay itself: no PICK, no attempt', async () => {
  const a = await chat('plain', 'st-idem-1', {}, {}, { 'idempotency-key': 'st-k-1' });
  const bodyA = await a.text();
  assert.equal(a.status, 200);
  assertStates(await accessLine('st-idem-1'), ['admit', 'pick', 'attempt', 'reply']);
  const b = await chat('plain', 'st-idem-2', {}, {}, { 'idempotency-key': 'st-k-1' });
  assert.equal(b.headers.get('x-bascule-idempotent-replay'), 'true');
  assert.equal(await b.text(), bodyA);
  const line = await accessLine('st-idem-2');
  assert.equal(line.termination, 'idempotent_replay');
  assert.equal(line.attempts, 0);
  assertStates(line, ['admit']);
});

test('ADMIT refuses a request by its headers before anything is picked', async () => {
  const res = await chat('plain', 'st-bad-op', {}, {}, { 'x-bascule-operation-id': 'bad id!' });
  assert.equal(res.status, 400);
  assert.equal((await res.json()).error.code, 'invalid_operation_id');
  const line = await accessLine('st-bad-op');
  assertStates(line, ['admit', 'reply_error']);
});
