// Task-success feedback: POST /v1/feedback charges the client's verdict to the route, the
// target and the workflow that answered; one verdict per request, only from the
// credential that made it; answers alone no longer count as task successes.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startSim, startGateway } from '../lib/harness.mjs';

let sim, gw;

before(async () => {
  sim = await startSim();
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: warn }
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-f"], health: { probe: none } }
targets:
  fa: { provider: sim, model: f-a, breaker: { consecutive_failures: 100000, min_requests: 100000 } }
  fb: { provider: sim, model: f-b }
routes:
  judged:
    primary: [fa]
    fallback: [fb]
    envelope: { max_same_target_attempts: 1, allow_cross_model_fallback: true }
`,
  });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

const alice = { authorization: 'Bearer sk-alice-0123456789' };
const bob = { authorization: 'Bearer sk-bob-0123456789' };

async function chat(headers = {}) {
  const res = await fetch(`${gw.base}/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model: 'judged', messages: [{ role: 'user', content: 'hi' }] }) });
  await res.arrayBuffer();
  assert.equal(res.status, 200);
  return res;
}

function feedback(body, headers = {}) {
  return fetch(`${gw.base}/feedback`, {
    method: 'POST', headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body) });
}

async function metric(name, labels) {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const sel = Object.entries(labels).map(([k, v]) => `${k}="${v}"`).join(',');
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${sel}} `));
  return line ? Number(line.split(' ')[1]) : 0;
}

test('a verdict is charged to the route, target and workflow that answered', async () => {
  const before = await sim.calls('f-a');
  const res = await chat();
  assert.equal(await sim.calls('f-a'), before + 1);
  // An answer alone is not a task success any more.
  assert.equal(await metric('bascule_outcomes_total', { route: 'judged', layer: 'task', result: 'ok' }), 0);
  const id = res.headers.get('x-request-id');
  const fb = await feedback({ request_id: id, task_success: false, score: 0.2, note: 'wrong city' });
  assert.equal(fb.status, 200);
  assert.deepEqual(await fb.json(), { request_id: id, route: 'judged', target: 'fa', workflow: 'primary', task_success: false, ranks: 'all_requests' });
  assert.equal(await metric('bascule_outcomes_total', { route: 'judged', layer: 'task', result: 'failed' }), 1);
  assert.equal(await metric('bascule_target_outcomes_total', { target: 'fa', layer: 'task', result: 'failed' }), 1);
  assert.equal(await metric('bascule_workflow_outcomes_total', { workflow: 'primary', layer: 'task', result: 'failed' }), 1);
  // The note is never logged.
  assert.ok(!gw.logs().includes('wrong city'));
  // A second verdict for the same request: 409, and nothing more is counted.
  const again = await feedback({ request_id: id, task_success: true });
  assert.equal(again.status, 409);
  assert.equal((await again.json()).error.code, 'verdict_exists');
  assert.equal(await metric('bascule_outcomes_total', { route: 'judged', layer: 'task', result: 'ok' }), 0);
});

test('a fallback answer is judged as the fallback workflow on the fallback target', async () => {
  await sim.setModel('f-a', { script: [{ action: 'status', status: 503, times: 1 }] });
  const [a0, b0] = [await sim.calls('f-a'), await sim.calls('f-b')];
  const res = await chat();
  assert.equal(await sim.calls('f-a'), a0 + 1);
  assert.equal(await sim.calls('f-b'), b0 + 1);
  assert.equal(res.headers.get('x-bascule-workflow'), 'cross_model_fallback');
  const fb = await feedback({ request_id: res.headers.get('x-request-id'), task_success: true });
  assert.equal(fb.status, 200);
  assert.equal((await fb.json()).workflow, 'cross_model_fallback');
  assert.equal(await metric('bascule_target_outcomes_total', { target: 'fb', layer: 'task', result: 'ok' }), 1);
  assert.equal(await metric('bascule_workflow_outcomes_total', { workflow: 'cross_model_fallback', layer: 'task', result: 'ok' }), 1);
  assert.equal(await metric('bascule_outcomes_total', { route: 'judged', layer: 'task', result: 'ok' }), 1);
  // Transport outcomes per workflow and per target count the attempts themselves.
  assert.ok(await metric('bascule_workflow_outcomes_total', { workflow: 'primary', layer: 'transport', result: 'failed' }) >= 1);
  assert.ok(await metric('bascule_target_outcomes_total', { target: 'fb', layer: 'transport', result: 'ok' }) >= 1);
});

test('unknown request ids are 404', async () => {
  const res = await feedback({ request_id: 'req_never_seen', task_success: true });
  assert.equal(res.status, 404);
  assert.equal((await res.json()).error.code, 'request_not_found');
});

test('only the credential that made a request may judge it', async () => {
  const res = await chat({ ...alice, 'x-request-id': 'fb-scoped-1' });
  assert.equal(res.headers.get('x-request-id'), 'fb-scoped-1');
  const asBob = await feedback({ request_id: 'fb-scoped-1', task_success: false }, bob);
  assert.equal(asBob.status, 404);
  const anonymous = await feedback({ request_id: 'fb-scoped-1', task_success: false });
  assert.equal(anonymous.status, 404);
  const asAlice = await feedback({ request_id: 'fb-scoped-1', task_success: false }, alice);
  assert.equal(asAlice.status, 200);
  assert.equal(await metric('bascule_target_outcomes_total', { target: 'fa', layer: 'task', result: 'failed' }), 2);
});

test('a malformed verdict is a 400 that says what is wrong', async () => {
  const cases = [
    ['{"request_id": "x"', /parse the JSON/],
    [[1, 2], /must be a JSON object/],
    [{ task_success: true }, /'request_id' is required/],
    [{ request_id: 'x' }, /'task_success' is required/],
    [{ request_id: 'x', task_success: 'yes' }, /'task_success' must be true or false/],
    [{ request_id: '', task_success: true }, /'request_id' must be a string/],
    [{ request_id: 'x', task_success: true, score: 1.5 }, /'score' must be a number from 0.0 to 1.0/],
    [{ request_id: 'x', task_success: true, note: 'n'.repeat(1025) }, /'note' must be a string of at most 1024 bytes/],
    [{ request_id: 'x', task_success: true, rating: 5 }, /unknown field 'rating'/],
  ];
  for (const [body, why] of cases) {
    const res = await feedback(body);
    assert.equal(res.status, 400, JSON.stringify(body).slice(0, 60));
    assert.match((await res.json()).error.message, why);
  }
  const get = await fetch(`${gw.base}/feedback`);
  assert.equal(get.status, 405);
});

test('the status page shows transport, contract and task success per target and workflow', async () => {
  const s = await (await fetch(`${gw.url}/status.json`)).json();
  const fa = s.outcomes.targets.find((t) => t.target === 'fa');
  const fb = s.outcomes.targets.find((t) => t.target === 'fb');
  // fa: two answers and one 503 from the earlier tests; two verdicts, both failed.
  assert.deepEqual(fa.task, { ok: 0, failed: 2 });
  assert.deepEqual(fa.transport, { ok: 2, failed: 1 });
  assert.deepEqual(fa.recent, { attempts: 3, attempts_ok: 2, tasks: 2, tasks_ok: 0 });
  assert.deepEqual(fb.task, { ok: 1, failed: 0 });
  const fallback = s.outcomes.workflows.find((x) => x.workflow === 'cross_model_fallback');
  assert.deepEqual(fallback.transport, { ok: 1, failed: 0 });
  assert.deepEqual(fallback.task, { ok: 1, failed: 0 });
  const page = await (await fetch(`${gw.url}/status`)).text();
  assert.match(page, /Success by layer/);
});

test('a streamed answer can be judged as soon as it has been read', async () => {
  const t0 = await metric('bascule_target_outcomes_total', { target: 'fa', layer: 'transport', result: 'ok' });
  const res = await fetch(`${gw.base}/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'judged', stream: true, messages: [{ role: 'user', content: 'hi' }] }) });
  assert.equal(res.status, 200);
  assert.match(await res.text(), /data: \[DONE\]/);
  const fb = await feedback({ request_id: res.headers.get('x-request-id'), task_success: true });
  assert.equal(fb.status, 200);
  assert.equal((await fb.json()).target, 'fa');
  assert.equal(await metric('bascule_target_outcomes_total', { target: 'fa', layer: 'transport', result: 'ok' }), t0 + 1);
  assert.equal(await metric('bascule_target_outcomes_total', { target: 'fa', layer: 'task', result: 'ok' }), 1);
});

test('a verdict with a member written twice (escaped or not) is a 400 and claims nothing', async () => {
  const res = await chat({ 'x-request-id': 'fb-dup-1' });
  assert.equal(res.status, 200);
  for (const body of [
    '{"request_id": "fb-dup-1", "task_success": true, "task_success": false}',
    '{"request_id": "fb-dup-1", "task_success": true, "task_\\u0073uccess": false}',
  ]) {
    const dup = await feedback(body);
    assert.equal(dup.status, 400, body);
    assert.match((await dup.json()).error.message, /'task_success' must appear at most once/);
  }
  const ok = await feedback({ request_id: 'fb-dup-1', task_success: true });
  assert.equal(ok.status, 200, 'the rejected bodies did not use up the verdict');
});
