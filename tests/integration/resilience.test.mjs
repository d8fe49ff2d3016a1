// The resilience engine (retry, failover, fallback, breakers, budget, kill switches),
// each scenario against bascule-sim with scripted faults, asserting the exact number of
// upstream calls each target received. Every scenario has its own route and upstream
// models, so breaker and key state never leak between tests.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startSim, startGateway, waitFor, readStream } from '../lib/harness.mjs';

let sim, gw;
const ADMIN = 'test-admin-key-0123456789';

// name -> { primary: [...], equivalent: [...], fallback: [...], envelope, extra target fields }
const scenarios = {
  s503: { primary: ['s503p'], equivalent: ['s503e'], envelope: 'max_same_target_attempts: 1' },
  reset: { primary: ['resetp'], equivalent: ['resete'], envelope: 'max_same_target_attempts: 1' },
  s400: { primary: ['s400p'], equivalent: ['s400e'] },
  ctx: { primary: ['ctxp'], fallback: ['ctxbig'], envelope: 'allow_cross_model_fallback: false' },
  ctxfb: { primary: ['ctxfbp'], fallback: ['ctxfbbig'], envelope: 'allow_cross_model_fallback: true' },
  ra: { primary: ['rap'] },
  ralong: { primary: ['ralongp'], envelope: 'deadline_ms: 3000' },
  hang: { primary: ['hangp'], equivalent: ['hange'], envelope: 'deadline_ms: 3000\n      reserve_for_fallback_ms: 1200' },
  allhang: { primary: ['ahp'], equivalent: ['ahe'], envelope: 'deadline_ms: 2000\n      reserve_for_fallback_ms: 700' },
  sfail: { primary: ['sfailp'], equivalent: ['sfaile'], envelope: 'max_same_target_attempts: 1' },
  scut: { primary: ['scutp'], equivalent: ['scute'] },
  brk: { primary: ['brkp'], equivalent: ['brke'], envelope: 'max_same_target_attempts: 1' },
  cancel: { primary: ['cancelp'], equivalent: [] },
  dis: { primary: ['disoff', 'dison'] },
  adm: { primary: ['admp'], equivalent: ['adme'] },
  quota: { primary: ['quotap'], equivalent: ['quotae'], keys: ['sk-q-a', 'sk-q-b'] },
  sdk: { primary: ['sdkp'] },
  sdk503: { primary: ['sdk503p'], envelope: 'max_attempts: 2' },
  sharedA: { primary: ['shA'], envelope: 'max_same_target_attempts: 1' },
  sharedB: { primary: ['shB'] },
};

function config(simBase) {
  const providers = [];
  const targets = [];
  const routes = [];
  providers.push('  p-shared: { kind: openai_compatible, base_url: "' + simBase + '", keys: ["sk-shared"], health: { probe: none }, breaker: { key: [provider], consecutive_failures: 2, open_ms: 60000, panic: false } }'); // fail-fast: the shared circuit keeps shB out
  targets.push('  shA: { provider: p-shared, model: shA }', '  shB: { provider: p-shared, model: shB }');
  for (const [name, s] of Object.entries(scenarios)) {
    if (name.startsWith('shared')) {
      routes.push(`  ${name}:\n    primary: [${s.primary.join(', ')}]\n    envelope:\n      ${s.envelope ?? 'deadline_ms: 10000'}`);
      continue;
    }
    providers.push(`  p-${name}: { kind: openai_compatible, base_url: "${simBase}", keys: ${JSON.stringify(s.keys ?? [`sk-${name}`])}, health: { probe: none } }`);
    const all = [...(s.primary ?? []), ...(s.equivalent ?? []), ...(s.fallback ?? [])];
    for (const m of all) {
      let extra = '';
      if (m === 'ctxp' || m === 'ctxfbp') extra = ', context_window: 8000';
      if (m === 'ctxbig' || m === 'ctxfbbig') extra = ', context_window: 200000';
      if (m === 'disoff') extra = ', disabled: true';
      if (m === 'brkp') extra = ', breaker: { consecutive_failures: 3, open_ms: 1500, half_open_probes: 1, success_threshold: 2, ramp_ms: 4000, min_requests: 100 }';
      targets.push(`  ${m}: { provider: p-${name}, model: ${m}${extra} }`);
    }
    routes.push(`  ${name}:
    primary: [${(s.primary ?? []).join(', ')}]
    equivalent: [${(s.equivalent ?? []).join(', ')}]
    fallback: [${(s.fallback ?? []).join(', ')}]
    envelope:
      ${s.envelope ?? 'deadline_ms: 10000'}`);
  }
  return `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: info, format: json }
admin: { key: "${ADMIN}" }
retry:
  backoff: { base_ms: 50, max_ms: 400, jitter: 0.2 }
providers:
${providers.join('\n')}
targets:
${targets.join('\n')}
routes:
${routes.join('\n')}
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

const calls = (model) => sim.calls(model);

function chat(route, body = {}, headers = {}) {
  return fetch(`${gw.base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model: route, messages: [{ role: 'user', content: 'hi' }], ...body }),
  });
}

// Log lines are written once per loop iteration: wait for the request's access line,
// which comes after its attempt lines.
async function attemptLines(requestId) {
  await waitFor(() => gw.accessLog().some((l) => l.type === 'access' && l.request_id === requestId),
    { what: `access line of ${requestId}` });
  return gw.accessLog().filter((l) => l.type === 'attempt' && l.request_id === requestId);
}

test('503 on the primary fails over to the equivalent target', async () => {
  await sim.setModel('s503p', { script: [{ action: 'status', status: 503, times: 5 }] });
  const res = await chat('s503');
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-bascule-target'), 's503e');
  assert.equal(res.headers.get('x-bascule-workflow'), 'equivalent_failover');
  assert.equal(res.headers.get('x-bascule-attempts'), '2');
  assert.equal(res.headers.get('x-bascule-recovery-reason'), 'overloaded');
  assert.equal((await res.json()).object, 'chat.completion');
  assert.equal(await calls('s503p'), 1);
  assert.equal(await calls('s503e'), 1);
  const lines = await attemptLines(res.headers.get('x-request-id'));
  assert.equal(lines.length, 2);
  assert.equal(lines[0].kind, 'overloaded');
  assert.equal(lines[0].next, 'equivalent_failover');
  assert.equal(typeof lines[0].time_left_ms, 'number');
  assert.equal(lines[1].next, 'deliver');
});

test('a connection reset before headers fails over', async () => {
  await sim.setModel('resetp', { script: [{ action: 'reset', times: 5 }] });
  const res = await chat('reset');
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-bascule-target'), 'resete');
  // One gateway attempt; libcurl itself replays once when the connection it reused from
  // its pool dies before any response byte (the keep-alive race), so the sim may see 2.
  const lines = await attemptLines(res.headers.get('x-request-id'));
  assert.equal(lines.length, 2);
  assert.equal(lines[0].target, 'resetp');
  assert.ok([1, 2].includes(await calls('resetp')));
  assert.equal(await calls('resete'), 1);
});

test('a reset with write_possible side effects is never replayed: reconcile_required', async () => {
  await sim.setModel('resetp', { script: [{ action: 'reset', times: 5 }] });
  const before = await calls('resetp');
  const res = await chat('reset', {}, { 'x-bascule-side-effects': 'write_possible' });
  assert.equal(res.status, 502);
  const body = await res.json();
  assert.equal(body.error.code, 'reconcile_required');
  assert.equal(res.headers.get('x-should-retry'), 'false');
  assert.equal((await calls('resetp')) - before, 1, 'a fresh connection: not even libcurl replays it');
  assert.equal(await calls('resete'), 1, 'no failover either');
});

test('a 400 is neither retried nor failed over, and says x-should-retry: false', async () => {
  await sim.setModel('s400p', { script: [{ action: 'status', status: 400, message: 'bad temperature' }] });
  const res = await chat('s400');
  assert.equal(res.status, 400);
  assert.equal(res.headers.get('x-should-retry'), 'false');
  const body = await res.json();
  assert.equal(body.error.type, 'invalid_request_error');
  assert.match(body.error.message, /bad temperature/);
  assert.equal(await calls('s400p'), 1);
  assert.equal(await calls('s400e'), 0);
});

test('context overflow stops when cross-model fallback is not allowed', async () => {
  await sim.setModel('ctxp', { script: [{ action: 'status', status: 400, error_code: 'context_length_exceeded', message: "This model's maximum context length is 8000 tokens" }] });
  const res = await chat('ctx');
  assert.equal(res.status, 400);
  assert.equal((await res.json()).error.code, 'context_length_exceeded');
  assert.equal(await calls('ctxp'), 1);
  assert.equal(await calls('ctxbig'), 0);
});

test('context overflow falls back to a larger-window model when allowed', async () => {
  await sim.setModel('ctxfbp', { script: [{ action: 'status', status: 400, error_code: 'context_length_exceeded', message: "This model's maximum context length is 8000 tokens" }] });
  const res = await chat('ctxfb');
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-bascule-target'), 'ctxfbbig');
  assert.equal(res.headers.get('x-bascule-workflow'), 'cross_model_fallback');
  assert.equal(res.headers.get('x-bascule-recovery-reason'), 'context_overflow');
  assert.equal(await calls('ctxfbp'), 1);
  assert.equal(await calls('ctxfbbig'), 1);
});

test('429 with Retry-After is honoured on the same target', async () => {
  await sim.setModel('rap', { script: [{ action: 'status', status: 429, headers: { 'retry-after': '1' } }] });
  const t0 = Date.now();
  const res = await chat('ra');
  const elapsed = Date.now() - t0;
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-bascule-workflow'), 'retry');
  assert.ok(elapsed >= 950, `waited the Retry-After second (${elapsed} ms)`);
  assert.equal(await calls('rap'), 2);
  const lines = await attemptLines(res.headers.get('x-request-id'));
  assert.equal(lines[0].kind, 'rate_limited');
  assert.equal(lines[0].delay_why, 'retry_after');
  assert.ok(lines[0].next_delay_ms >= 1000);
});

test('a Retry-After longer than the deadline is an immediate typed failure', async () => {
  await sim.setModel('ralongp', { script: [{ action: 'status', status: 429, headers: { 'retry-after': '30' } }] });
  const t0 = Date.now();
  const res = await chat('ralong');
  const elapsed = Date.now() - t0;
  assert.ok(elapsed < 1500, `did not wait for the deadline (${elapsed} ms)`);
  assert.equal(res.status, 429);
  assert.equal(res.headers.get('x-should-retry'), 'false');
  assert.equal(res.headers.get('retry-after'), '30');
  const body = await res.json();
  assert.equal(body.status, 'unavailable');
  assert.equal(body.reason, 'deadline_exhausted');
  assert.equal(body.retryable, true);
  assert.equal(body.retry_after_ms, 30000);
  assert.match(body.request_id, /^req_/);
  assert.equal(await calls('ralongp'), 1);
});

test('a hung primary is cut in time for the equivalent to answer within the deadline', async () => {
  await sim.setModel('hangp', { script: [{ action: 'hang', times: 3 }] });
  const t0 = Date.now();
  const res = await chat('hang');
  const elapsed = Date.now() - t0;
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-bascule-target'), 'hange');
  assert.ok(elapsed < 3000, `answered within the 3 s deadline (${elapsed} ms)`);
  assert.equal(await calls('hangp'), 1);
  assert.equal(await calls('hange'), 1);
  // The gateway closed the hung upstream connection when it gave up on it.
  await waitFor(async () => (await sim.stats()).models.hangp.cancelled === 1, { what: 'hung call cancelled' });
});

test('when every target hangs the typed failure comes within the deadline', async () => {
  await sim.setModel('ahp', { script: [{ action: 'hang', times: 5 }] });
  await sim.setModel('ahe', { script: [{ action: 'hang', times: 5 }] });
  const t0 = Date.now();
  const res = await chat('allhang');
  const elapsed = Date.now() - t0;
  assert.ok(elapsed < 2600, `stopped near the 2 s deadline (${elapsed} ms)`);
  assert.ok(res.status === 503 || res.status === 504, `status ${res.status}`);
  const body = await res.json();
  assert.equal(body.status, 'unavailable');
  assert.ok(['deadline_exhausted', 'attempts_exhausted', 'no_eligible_fallback'].includes(body.reason), body.reason);
  assert.ok((await calls('ahp')) >= 1);
  assert.equal(await calls('ahe'), 1);
});

test('a streaming failure before the first byte fails over invisibly', async () => {
  await sim.setModel('sfailp', { script: [{ action: 'status', status: 503, times: 5 }] });
  const client = new OpenAI({ baseURL: gw.base, apiKey: 'x', maxRetries: 0 });
  const { data: stream, response } = await client.chat.completions
    .create({ model: 'sfail', stream: true, messages: [{ role: 'user', content: 'hi' }] })
    .withResponse();
  let text = '';
  for await (const chunk of stream) text += chunk.choices?.[0]?.delta?.content ?? '';
  assert.ok(text.length > 0);
  assert.equal(response.headers.get('x-bascule-target'), 'sfaile');
  assert.equal(await calls('sfailp'), 1);
  assert.equal(await calls('sfaile'), 1);
});

test('a stream cut after the first byte ends with the error event; the equivalent is never called', async () => {
  await sim.setModel('scutp', { script: [{ action: 'cut', after_events: 3 }] });
  const res = await chat('scut', { stream: true });
  assert.equal(res.status, 200);
  const { text, broken } = await readStream(res);
  assert.equal(broken, true, 'the stream ends broken: no chunked terminator, the connection closes');
  const events = text.split('\n\n').filter(Boolean);
  const last = JSON.parse(events[events.length - 1].slice(6));
  assert.equal(last.error.code, 'upstream_interrupted');
  assert.ok(!text.includes('[DONE]'));
  assert.equal(await calls('scutp'), 1);
  assert.equal(await calls('scute'), 0);
});

test('a broken stream ends without the chunked terminator; the next request of the client goes through', async () => {
  // A broken stream ends without the chunked terminator, so the client never takes it for
  // a complete response and never puts the closing connection back in its pool.
  // (Three rounds: more partial failures would open scutp's circuit.)
  await sim.setModel('rap', { script: [] });
  for (let i = 0; i < 3; i++) {
    await sim.setModel('scutp', { script: [{ action: 'cut', after_events: 2 }] });
    const { broken } = await readStream(await chat('scut', { stream: true }));
    assert.equal(broken, true);
    const next = await chat('ra'); // the same client pool, in the same tick
    assert.equal(next.status, 200, `request ${i} after a broken stream`);
    await next.text();
  }
});

async function targetView(id) {
  const res = await fetch(`${gw.url}/admin/targets`, { headers: { authorization: `Bearer ${ADMIN}` } });
  assert.equal(res.status, 200);
  return (await res.json()).targets.find((t) => t.id === id);
}

test('the breaker opens after failures and recovers through half-open probes with a ramp', async () => {
  await sim.setModel('brkp', { script: [{ action: 'status', status: 500, times: 1000 }] });
  for (let i = 0; i < 3; i++) assert.equal((await chat('brk')).status, 200); // served by brke
  assert.equal(await calls('brkp'), 3);
  assert.equal((await targetView('brkp')).circuit, 'open');
  // Open: the primary gets no traffic at all.
  for (let i = 0; i < 5; i++) assert.equal((await chat('brk')).headers.get('x-bascule-target'), 'brke');
  assert.equal(await calls('brkp'), 3);
  // The primary recovers; after open_ms single probes go through and close the circuit.
  await sim.setModel('brkp', { script: [] });
  await new Promise((r) => setTimeout(r, 1600));
  const served = [];
  for (let i = 0; i < 2; i++) served.push((await chat('brk')).headers.get('x-bascule-target'));
  assert.deepEqual(served, ['brkp', 'brkp'], 'half-open probes went to the primary');
  const v = await targetView('brkp');
  assert.equal(v.circuit, 'closed');
  assert.equal(v.ramping, true);
  assert.ok(v.ramp_fraction < 0.5, `ramp starts low (${v.ramp_fraction})`);
  assert.ok(v.breaker.opened >= 1 && v.breaker.half_opened >= 1 && v.breaker.closed >= 1);
  // During the ramp the primary takes only part of the traffic: each request passes the
  // ramp gate to the primary or is turned away by it, once, to the equivalent -- and the
  // share follows the fraction, which starts at 10 % and only grows (ramp_ms 4 s).
  const before = await calls('brkp');
  const deniedBefore = v.breaker.ramp_denied;
  for (let i = 0; i < 30; i++) await chat('brk');
  const share = (await calls('brkp')) - before;
  const after = await targetView('brkp');
  const denied = after.breaker.ramp_denied - deniedBefore;
  assert.equal(share + denied, 30, `${share} to the primary, ${denied} turned away by the ramp`);
  assert.ok(denied > 0, `the ramp turned requests away (${share}/30 to the primary)`);
  // At most the fraction reached by the last request (30 times it, plus 4 standard
  // deviations: a false failure about once in 30,000 runs); 1 once the ramp is over.
  const p = after.ramping ? after.ramp_fraction : 1;
  const most = 30 * p + 4 * Math.sqrt(30 * p * (1 - p));
  assert.ok(share <= most, `${share}/30 to the primary at a fraction of ${p} at most (bound ${most.toFixed(1)})`);
  const metrics = await (await fetch(`${gw.url}/metrics`)).text();
  assert.match(metrics, /bascule_breaker_transitions_total\{target="brkp",to="open"\} [1-9]/);
});

test('a client that cancels during backoff causes no further upstream call', async () => {
  await sim.setModel('cancelp', { script: [{ action: 'status', status: 503, headers: { 'retry-after': '2' } }] });
  const ac = new AbortController();
  const res = fetch(`${gw.base}/chat/completions`, {
    method: 'POST', signal: ac.signal,
    headers: { 'content-type': 'application/json', 'x-request-id': 'cancel-in-backoff' },
    body: JSON.stringify({ model: 'cancel', messages: [{ role: 'user', content: 'x' }] }),
  }).catch((e) => e);
  // The first attempt's line is written when its 503 came back: the 2 s backoff has begun.
  await waitFor(() => gw.accessLog().some((l) => l.type === 'attempt' && l.request_id === 'cancel-in-backoff'),
    { what: 'the first attempt line' });
  assert.equal(await calls('cancelp'), 1);
  ac.abort();
  await res;
  // The request's end (its access line) comes with the abort, not after the 2 s backoff: a
  // gateway that missed the abort would retry first, and the count below would say 2.
  await waitFor(() => gw.accessLog().some((l) => l.type === 'access' && l.route === 'cancel'), { what: 'access line' });
  const line = gw.accessLog().find((l) => l.type === 'access' && l.route === 'cancel');
  assert.equal(line.termination, 'client_abort');
  assert.equal(await calls('cancelp'), 1, 'the retry after the backoff never happened');
});

test('a target disabled in config gets no traffic', async () => {
  for (let i = 0; i < 5; i++) assert.equal((await chat('dis')).headers.get('x-bascule-target'), 'dison');
  assert.equal(await calls('disoff'), 0);
  assert.equal(await calls('dison'), 5);
});

test('the admin kill switch takes a target out of rotation and back', async () => {
  const noauth = await fetch(`${gw.url}/admin/targets/admp/disable`, { method: 'POST' });
  assert.equal(noauth.status, 401);
  const off = await fetch(`${gw.url}/admin/targets/admp/disable`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}` } });
  assert.equal(off.status, 200);
  assert.equal((await off.json()).admin_disabled, true);
  for (let i = 0; i < 3; i++) assert.equal((await chat('adm')).headers.get('x-bascule-target'), 'adme');
  assert.equal(await calls('admp'), 0);
  await fetch(`${gw.url}/admin/targets/admp/enable`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}` } });
  assert.equal((await chat('adm')).headers.get('x-bascule-target'), 'admp');
  assert.equal(await calls('admp'), 1);
});

test('insufficient_quota cools down only that key', async () => {
  await sim.setModel('quotap', { script: [{ action: 'status', status: 429, error_code: 'insufficient_quota', error_type: 'insufficient_quota', message: 'You exceeded your current quota' }] });
  const first = await chat('quota');
  assert.equal(first.status, 200);
  assert.equal(first.headers.get('x-bascule-target'), 'quotap', 'served by the same target with the other key');
  for (let i = 0; i < 4; i++) assert.equal((await chat('quota')).status, 200);
  const reqs = await sim.requests('quotap');
  const keys = reqs.map((r) => r.headers.authorization);
  assert.equal(keys.length, 6);
  const cooled = keys[0];
  assert.ok(keys.slice(1).every((k) => k !== cooled), `the quota key is not used again: ${keys}`);
  assert.equal(await calls('quotae'), 0, 'no failover: the provider is healthy');
  assert.equal((await targetView('quotap')).circuit, 'closed');
});

test('the official SDK with default retries sends one request for a non-retryable error', async () => {
  await sim.setModel('sdkp', { script: [{ action: 'status', status: 400, times: 10 }] });
  const client = new OpenAI({ baseURL: gw.base, apiKey: 'x' }); // default maxRetries: 2
  const before = gw.accessLog().filter((l) => l.type === 'access' && l.route === 'sdk').length;
  await assert.rejects(client.chat.completions.create({ model: 'sdk', messages: [{ role: 'user', content: 'x' }] }),
    (e) => e.status === 400);
  const count = () => gw.accessLog().filter((l) => l.type === 'access' && l.route === 'sdk').length;
  await waitFor(() => count() > before, { what: 'access line' });
  await new Promise((r) => setTimeout(r, 300)); // room for a retry that must not come
  assert.equal(count() - before, 1);
  assert.equal(await calls('sdkp'), 1);
});

test('the official SDK with default retries sends one request for a typed failure the gateway retried', async () => {
  await sim.setModel('sdk503p', { script: [{ action: 'status', status: 503, times: 10 }] });
  const client = new OpenAI({ baseURL: gw.base, apiKey: 'x' });
  await assert.rejects(client.chat.completions.create({ model: 'sdk503', messages: [{ role: 'user', content: 'x' }] }),
    (e) => e.status === 503);
  await waitFor(() => gw.accessLog().some((l) => l.type === 'access' && l.route === 'sdk503'), { what: 'access line' });
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(gw.accessLog().filter((l) => l.type === 'access' && l.route === 'sdk503').length, 1);
  assert.equal(await calls('sdk503p'), 2, 'the gateway made its two attempts; the SDK added none');
});

test('breaker.key [provider]: failures of one target open the circuit its siblings share', async () => {
  await sim.setModel('shA', { script: [{ action: 'status', status: 500, times: 10 }] });
  for (let i = 0; i < 2; i++) assert.equal((await chat('sharedA')).status, 503);
  assert.equal(await calls('shA'), 2);
  const res = await chat('sharedB');
  assert.equal(res.status, 503);
  assert.equal((await res.json()).reason, 'no_eligible_fallback');
  assert.equal(await calls('shB'), 0, 'the shared circuit is open: shB is not tried');
  assert.equal((await targetView('shB')).circuit, 'open');
  const metrics = await (await fetch(`${gw.url}/metrics`)).text();
  assert.match(metrics, /bascule_breaker_state\{target="shB",state="open"\} 1\n/, 'the shared circuit shows on both');
  assert.match(metrics, /bascule_breaker_state\{target="shA",state="open"\} 1\n/);
});
