// The relay timer of a committed stream: the envelope's deadline becomes the longest silence
// allowed between events (router/deliver.c, deliver_stream_arm). The timer is armed once and
// catches up when it fires, so a stream whose events keep coming runs past the deadline
// whole, and one that goes silent is cut with the stall error event.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startSim, startGateway, waitFor, readStream } from '../lib/harness.mjs';

let sim, gw;

before(async () => {
  sim = await startSim();
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 1
log: { level: info, format: json }
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-gap"], health: { probe: none } }
targets:
  steady@sim: { provider: sim, model: gap-steady }
  silent@sim: { provider: sim, model: gap-silent }
routes:
  steady: { primary: [steady@sim], envelope: { deadline_ms: 600 } }
  silent: { primary: [silent@sim], envelope: { deadline_ms: 600 } }
`,
  });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

function streamChat(model) {
  return fetch(`${gw.base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: 'x' }] }),
    signal: AbortSignal.timeout(30_000),
  });
}

function events(text) {
  return text.split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => e.slice(6));
}

async function accessLine(id) {
  return waitFor(() => gw.accessLog().find((l) => l.type === 'access' && l.request_id === id),
    { what: `the access line of ${id}` });
}

test('a stream with an event every 100 ms runs whole, far past a 600 ms gap bound', async () => {
  // 20 events 100 ms apart: two seconds in all. The relay timer, armed at the first event,
  // fires 600 ms later while events still come: it must arm again, not cut.
  await sim.setModel('gap-steady', { tokens: 20, token_delay_ms: 100 });
  const res = await streamChat('steady');
  assert.equal(res.status, 200);
  const { text, broken } = await readStream(res);
  assert.equal(broken, false, text.slice(-300));
  const ev = events(text);
  assert.equal(ev.at(-1), '[DONE]');
  assert.ok(!text.includes('"error"'), text.slice(-300));
  const id = JSON.parse(ev[0]).id ? res.headers.get('x-request-id') : null;
  const access = await accessLine(id);
  assert.equal(access.termination, 'ok');
});

test('a stream that goes silent past the gap bound is cut with the stall event', async () => {
  // The first event commits the stream; the next would come 5 s later, past the 600 ms bound.
  await sim.setModel('gap-silent', { tokens: 3, token_delay_ms: 5000 });
  const res = await streamChat('silent');
  assert.equal(res.status, 200);
  const { text, broken } = await readStream(res);
  assert.ok(broken);
  const ev = events(text);
  assert.equal(ev.length, 2, `the first event, then the error: ${text}`);
  const last = JSON.parse(ev.at(-1));
  assert.match(last.error.message, /stalled/);
  const access = await accessLine(res.headers.get('x-request-id'));
  assert.equal(access.termination, 'upstream_interrupted');
  const attempt = gw.accessLog().find((l) => l.type === 'attempt' && l.request_id === access.request_id);
  assert.equal(attempt.why, 'stream_stalled');
});
