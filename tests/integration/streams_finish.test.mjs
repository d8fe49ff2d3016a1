// Streams that finish (docs/design.md, streaming contract): a first-token limit
// (envelope.first_token_timeout_ms), a stall limit of its own (envelope.stream_idle_timeout_ms),
// a stream complete by its own signals without [DONE], and a context overflow that tries a
// candidate whose window is not declared. Each case is a bascule-sim fault, with exact upstream
// call counts and the client's text compared with the one whole answer.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startSim, startGateway, waitFor, readStream } from '../lib/harness.mjs';

let sim, gw, whole60;

before(async () => {
  sim = await startSim();
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 1
log: { level: info, format: json }
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-sf"], health: { probe: none } }
targets:
  ftt-slow@sim: { provider: sim, model: sf-ftt-slow }
  ftt-fast@sim: { provider: sim, model: sf-ftt-fast }
  ftt-only@sim: { provider: sim, model: sf-ftt-only }
  idle@sim: { provider: sim, model: sf-idle }
  nodone@sim: { provider: sim, model: sf-nodone }
  cutfin@sim: { provider: sim, model: sf-cutfin }
  small@sim: { provider: sim, model: sf-small, context_window: 1000 }
  equal@sim: { provider: sim, model: sf-equal, context_window: 1000 }
  open@sim: { provider: sim, model: sf-open }
routes:
  ftt:
    primary: [ftt-slow@sim, ftt-fast@sim]
    envelope: { deadline_ms: 20000, first_token_timeout_ms: 300, max_same_target_attempts: 1 }
  ftt-only:
    primary: [ftt-only@sim]
    envelope: { deadline_ms: 20000, first_token_timeout_ms: 300, max_attempts: 1 }
  idle:
    primary: [idle@sim]
    envelope: { deadline_ms: 20000, stream_idle_timeout_ms: 300 }
  nodone: { primary: [nodone@sim] }
  cutfin: { primary: [cutfin@sim], envelope: { max_attempts: 1 } }
  overflow:
    primary: [small@sim]
    fallback: [equal@sim, open@sim]
    envelope: { allow_cross_model_fallback: true }
`,
  });
  // The one whole answer of 60 words, as the simulator says it.
  await sim.setModel('sf-ref', { tokens: 60 });
  const res = await fetch(`${sim.base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-sf' },
    body: JSON.stringify({ model: 'sf-ref', messages: [{ role: 'user', content: 'x' }] }),
  });
  whole60 = (await res.json()).choices[0].message.content;
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

function streamChat(model, extra = {}) {
  return fetch(`${gw.base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: 'x' }], ...extra }),
    signal: AbortSignal.timeout(30_000),
  });
}

function events(text) {
  return text.split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => e.slice(6));
}

function streamedText(text) {
  return events(text).filter((e) => e !== '[DONE]').map((e) => JSON.parse(e))
    .map((c) => c.choices?.[0]?.delta?.content ?? '').join('');
}

async function calls(model) {
  return (await sim.stats()).models[model]?.calls ?? 0;
}

async function accessLine(id) {
  return waitFor(() => gw.accessLog().find((l) => l.type === 'access' && l.request_id === id),
    { what: `the access line of ${id}` });
}

test('a first token later than first_token_timeout_ms fails over before the commit point', async () => {
  // The slow target sends its head and role chunk at once, then nothing for 10 s.
  await sim.setModel('sf-ftt-slow', { tokens: 60, script: [{ action: 'stall', after_events: 1, stall_ms: 10000 }] });
  await sim.setModel('sf-ftt-fast', { tokens: 60 });
  const res = await streamChat('ftt');
  assert.equal(res.status, 200);
  const { text, broken } = await readStream(res);
  assert.equal(broken, false, text.slice(-300));
  assert.equal(streamedText(text), whole60);
  assert.equal(events(text).at(-1), '[DONE]');
  assert.equal(await calls('sf-ftt-slow'), 1);
  assert.equal(await calls('sf-ftt-fast'), 1);
  const access = await accessLine(res.headers.get('x-request-id'));
  assert.equal(access.termination, 'ok');
  const first = gw.accessLog().find((l) => l.type === 'attempt' && l.request_id === access.request_id);
  assert.match(JSON.stringify(first), /timeout/);
});

test('with nothing left, a late first token is the typed failure first_token_timeout', async () => {
  await sim.setModel('sf-ftt-only', { tokens: 5, script: [{ action: 'stall', after_events: 1, stall_ms: 10000 }] });
  const res = await streamChat('ftt-only');
  assert.equal(res.status, 503);
  const body = await res.json();
  assert.equal(body.reason, 'first_token_timeout', JSON.stringify(body));
  assert.equal(body.retryable, true);
  assert.equal(await calls('sf-ftt-only'), 1);
});

test('stream_idle_timeout_ms bounds the gap between events after the commit point', async () => {
  await sim.setModel('sf-idle', { tokens: 60, script: [{ action: 'stall', after_events: 21, stall_ms: 10000 }] });
  const res = await streamChat('idle');
  assert.equal(res.status, 200);
  const { text, broken } = await readStream(res);
  assert.ok(broken);
  const ev = events(text);
  assert.match(JSON.parse(ev.at(-1)).error.message, /stalled/);
  const access = await accessLine(res.headers.get('x-request-id'));
  assert.equal(access.termination, 'upstream_interrupted');
  const attempt = gw.accessLog().find((l) => l.type === 'attempt' && l.request_id === access.request_id);
  assert.equal(attempt.why, 'stream_stalled');
  assert.equal(await calls('sf-idle'), 1);
});

test('a stream with its finish_reason and usage that ends cleanly without [DONE] is whole', async () => {
  await sim.setModel('sf-nodone', { tokens: 60, script: [{ action: 'no_done' }] });
  const res = await streamChat('nodone', { stream_options: { include_usage: true } });
  assert.equal(res.status, 200);
  const { text, broken } = await readStream(res);
  assert.equal(broken, false, text.slice(-300));
  assert.ok(!text.includes('"error"'), text.slice(-300));
  assert.equal(streamedText(text), whole60);
  const ev = events(text);
  assert.equal(ev.at(-1), '[DONE]');
  assert.equal(JSON.parse(ev.at(-2)).usage.completion_tokens, 60);
  const access = await accessLine(res.headers.get('x-request-id'));
  assert.equal(access.termination, 'ok');
  assert.equal(await calls('sf-nodone'), 1);
});

test('a stream cut before any finish_reason stays an interruption', async () => {
  await sim.setModel('sf-cutfin', { tokens: 60, script: [{ action: 'cut', after_events: 41 }] });
  const res = await streamChat('cutfin');
  const { text, broken } = await readStream(res);
  assert.ok(broken);
  assert.match(JSON.parse(events(text).at(-1)).error.code, /upstream_interrupted/);
});

test('context overflow skips a window declared no larger and tries one not declared', async () => {
  await sim.setModel('sf-small', { script: [{ action: 'status', status: 400, error_code: 'context_length_exceeded', message: 'too long' }] });
  await sim.setModel('sf-equal', {});
  await sim.setModel('sf-open', { tokens: 60 });
  const res = await streamChat('overflow');
  assert.equal(res.status, 200);
  const { text, broken } = await readStream(res);
  assert.equal(broken, false);
  assert.equal(streamedText(text), whole60);
  assert.equal(await calls('sf-small'), 1);
  assert.equal(await calls('sf-equal'), 0);
  assert.equal(await calls('sf-open'), 1);
});
