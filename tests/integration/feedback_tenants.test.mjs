// Issue 24, item 4: one client's feedback must not steer everyone's routing. On a
// balance: score route, a client's task verdicts rank only its own requests unless it is
// trusted (clients.<id>.feedback: own | trusted | none), verdicts age out
// (feedback.half_life_ms), and a request is found for feedback by its id and the credential
// that made it, so another client reusing its X-Request-Id can neither claim nor hide it.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startSim, startGateway, waitFor } from '../lib/harness.mjs';

let sim, gw;

const KEYS = {
  alice: 'sk-alice-0123456789',
  bob: 'sk-bob-0123456789',
  carol: 'sk-carol-0123456789',
  dave: 'sk-dave-0123456789',
};

// sb costs 15x sa; the score weighs only the contract and task rates, so the split moves
// on verdicts alone (latency and cost would make it depend on the machine).
const config = (halfLifeMs) => `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: info }
feedback: { half_life_ms: ${halfLifeMs}, max_client_verdicts: 10 }
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-s"], health: { probe: none } }
targets:
  sa: { provider: sim, model: t-a, price: { input_per_mtok: 1, output_per_mtok: 4 } }
  sb: { provider: sim, model: t-b, price: { input_per_mtok: 15, output_per_mtok: 60 } }
routes:
  only-a: { primary: [sa] }
  only-b: { primary: [sb] }
  scored:
    primary: [sa, sb]
    balance: score
    score: { contract: 1.0, task: 1.0, latency_ms: 0, cost_usd: 0 }
clients:
  alice: { key: ${KEYS.alice}, routes: ["*"] }
  bob: { key: ${KEYS.bob}, routes: ["*"] }
  carol: { key: ${KEYS.carol}, routes: ["*"], feedback: trusted }
  dave: { key: ${KEYS.dave}, routes: ["*"], feedback: none }
`;

before(async () => {
  sim = await startSim();
  // An hour: nothing ages while the split is measured; the last test shortens it.
  gw = await startGateway({ config: config(3600000) });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

const auth = (who) => ({ authorization: `Bearer ${KEYS[who]}` });

async function chat(who, model, extra = {}) {
  const res = await fetch(`${gw.base}/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json', ...auth(who), ...extra },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }) });
  await res.arrayBuffer();
  assert.equal(res.status, 200);
  return res;
}

function feedback(who, requestId, ok) {
  return fetch(`${gw.base}/feedback`, {
    method: 'POST', headers: { 'content-type': 'application/json', ...auth(who) },
    body: JSON.stringify({ request_id: requestId, task_success: ok }) });
}

/** <n> requests of <who> on the scored route: how many went to sa and to sb (sim counts). */
async function split(who, n = 20) {
  const a0 = await sim.calls('t-a');
  const b0 = await sim.calls('t-b');
  for (let i = 0; i < n; i++) await chat(who, 'scored');
  return { sa: (await sim.calls('t-a')) - a0, sb: (await sim.calls('t-b')) - b0 };
}

/** <who> judges one fresh answer of sa: the feedback response. */
async function judgeSa(who, ok) {
  const res = await chat(who, 'only-a');
  return feedback(who, res.headers.get('x-request-id'), ok);
}

test('warm-up: with enough samples and no verdict, the tier keeps its order (all to sa)', async () => {
  for (let i = 0; i < 10; i++) {
    await chat('bob', 'only-a');
    await chat('bob', 'only-b');
  }
  assert.deepEqual(await split('bob'), { sa: 20, sb: 0 });
  assert.deepEqual(await split('alice'), { sa: 20, sb: 0 });
});

test("default own: alice's false verdict moves alice's requests, not bob's", async () => {
  const fb = await judgeSa('alice', false);
  assert.equal(fb.status, 200);
  const body = await fb.json();
  assert.equal(body.target, 'sa');
  assert.equal(body.ranks, 'own_requests');
  assert.deepEqual(await split('bob'), { sa: 20, sb: 0 });
  assert.deepEqual(await split('alice'), { sa: 0, sb: 20 });
});

test('feedback: none is refused and moves nothing', async () => {
  const fb = await judgeSa('dave', false);
  assert.equal(fb.status, 403);
  assert.equal((await fb.json()).error.code, 'feedback_not_accepted');
  assert.deepEqual(await split('bob'), { sa: 20, sb: 0 });
});

test("trusted: carol's false verdict moves everyone's requests", async () => {
  const fb = await judgeSa('carol', false);
  assert.equal(fb.status, 200);
  assert.equal((await fb.json()).ranks, 'all_requests');
  assert.deepEqual(await split('bob'), { sa: 0, sb: 20 });
  assert.deepEqual(await split('dave'), { sa: 0, sb: 20 });
});

test('a reused X-Request-Id: another client can neither claim nor hide the request', async () => {
  const id = 'issue24-shared-request-id';
  const mine = await chat('alice', 'only-a', { 'x-request-id': id });
  assert.equal(mine.headers.get('x-request-id'), id);
  await chat('bob', 'only-b', { 'x-request-id': id }); // newer, same id, bob's credential
  const bobs = await feedback('bob', id, true);
  assert.equal(bobs.status, 200);
  assert.equal((await bobs.json()).target, 'sb'); // his own request, not alice's
  const alices = await feedback('alice', id, true);
  assert.equal(alices.status, 200); // not hidden by bob's newer request
  assert.equal((await alices.json()).target, 'sa');
  assert.equal((await feedback('carol', id, false)).status, 404);
});

test('verdicts age out: with a short half-life the split returns to sa', async () => {
  // The tallies were written under an hour's half-life; read with 200 ms they fall under
  // the forgetting bound within ~2 s of the last verdict. Poll (bounded) for the event.
  const line = await gw.reload(config(200));
  assert.match(line, /reloaded/i);
  await waitFor(async () => (await split('bob', 1)).sa === 1,
    { timeoutMs: 30000, everyMs: 100, what: "bob's request going back to sa" });
  await waitFor(async () => (await split('alice', 1)).sa === 1,
    { timeoutMs: 30000, everyMs: 100, what: "alice's request going back to sa" });
  assert.deepEqual(await split('bob'), { sa: 20, sb: 0 });
  assert.deepEqual(await split('alice'), { sa: 20, sb: 0 });
});
