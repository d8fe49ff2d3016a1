// Requests that take more attempts than a request record holds in place (policy/attempt.h:
// ATTEMPT_INLINE): their records move to the heap as they go, and every one of them still
// reaches the answer's headers and the access line; the hard bound of sixteen still holds.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startSim, startGateway, waitFor } from '../lib/harness.mjs';

let sim, gw;

const FIVE = ['f1', 'f2', 'f3', 'f4', 'f5'];
const MANY = Array.from({ length: 18 }, (_, i) => `m${i + 1}`);

function config(simBase) {
  const targets = [...FIVE, ...MANY].map((m) => `  ${m}: { provider: sim, model: ${m} }`);
  return `listen: "127.0.0.1:{{PORT}}"
workers: 1
log: { level: info, format: json }
providers:
  sim: { kind: openai_compatible, base_url: "${simBase}", keys: ["sk-many"], health: { probe: none } }
targets:
${targets.join('\n')}
routes:
  five:
    primary: [f1]
    equivalent: [${FIVE.slice(1).join(', ')}]
    envelope:
      deadline_ms: 20000
      max_attempts: 5
      max_same_target_attempts: 1
  many:
    primary: [m1]
    equivalent: [${MANY.slice(1).join(', ')}]
    envelope:
      deadline_ms: 20000
      max_attempts: 100
      max_same_target_attempts: 1
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

function chat(route) {
  return fetch(`${gw.base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: route, messages: [{ role: 'user', content: 'hi' }] }),
  });
}

async function accessLine(id) {
  await waitFor(() => gw.accessLog().some((l) => l.type === 'access' && l.request_id === id),
    { what: `access line of ${id}` });
  return gw.accessLog().find((l) => l.type === 'access' && l.request_id === id);
}

const fail503 = [{ action: 'status', status: 503, times: 100 }];

test('five attempts: four failovers, then the answer, every attempt on the record', async () => {
  for (const m of FIVE.slice(0, 4)) await sim.setModel(m, { script: fail503 });
  const res = await chat('five');
  assert.equal(res.status, 200);
  assert.equal((await res.json()).object, 'chat.completion');
  assert.equal(res.headers.get('x-bascule-attempts'), '5');
  assert.equal(res.headers.get('x-bascule-target'), 'f5');
  for (const m of FIVE) assert.equal(await sim.calls(m), 1, m);
  const line = await accessLine(res.headers.get('x-request-id'));
  assert.deepEqual(line.attempt_log.map((a) => a.target), FIVE);
  assert.deepEqual(line.attempt_log.map((a) => a.outcome),
    ['failed', 'failed', 'failed', 'failed', 'ok']);
});

test('the hard bound: sixteen attempts at most, whatever max_attempts says', async () => {
  for (const m of MANY) await sim.setModel(m, { script: fail503 });
  const res = await chat('many');
  assert.equal(res.status, 503);
  assert.equal(res.headers.get('x-bascule-attempts'), '16');
  let upstream = 0;
  for (const m of MANY) upstream += await sim.calls(m);
  assert.equal(upstream, 16);
  const line = await accessLine(res.headers.get('x-request-id'));
  assert.deepEqual(line.attempt_log.map((a) => a.target), MANY.slice(0, 16));
});
