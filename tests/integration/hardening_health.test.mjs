// SPDX-License-Identifier: MIT
// Health that a client cannot poison, refused keys that come back, honest failure labels:
//  * ten crafted requests (upstream 400s, answers in the other shape) do not open a circuit
//    whose breaker opens after three failures, and a normal request is served after them;
//  * a key refused once (a 401 for one model) is re-verified with a list-models request and
//    put back, so another route on the same provider is served; a key refused by the
//    re-verification too stays out;
//  * a reset in the middle of an answer is upstream_reset, bad chunked framing
//    protocol_error (neither is connect with status 0), also for a buffered stream; the
//    access log counts the client's body for streamed and Anthropic-dialect requests.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startSim, startGateway, waitFor } from '../lib/harness.mjs';

const ADMIN = 'hardening-admin-key-0123456789';
let sim, gw, raw;
const rawModes = new Map(); // model -> what the raw upstream does

// A bare-socket upstream for faults the sim cannot produce: bad chunked framing.
function startRaw() {
  return new Promise((resolve) => {
    const server = net.createServer((sock) => {
      let buf = '';
      sock.on('error', () => {});
      sock.on('data', (d) => {
        buf += d.toString('latin1');
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const len = Number(/content-length:\s*(\d+)/i.exec(buf.slice(0, end))?.[1] ?? 0);
        if (buf.length < end + 4 + len) return;
        const body = JSON.parse(buf.slice(end + 4, end + 4 + len));
        buf = '';
        if (rawModes.get(body.model) === 'bad_chunk') {
          sock.end('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n' +
            'Transfer-Encoding: chunked\r\n\r\nzz-not-hex\r\n{"id":1}\r\n0\r\n\r\n');
        }
      });
    });
    server.listen(0, '127.0.0.1', () => resolve({ server, port: server.address().port }));
  });
}

before(async () => {
  sim = await startSim();
  raw = await startRaw();
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 1
admin: { key: "${ADMIN}" }
providers:
  p: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-p"], health: { probe: none, key_reverify_ms: 100 } }
  p2: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-p2"], health: { probe: none } }
  q: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-sim-bad-q"], health: { probe: none, key_reverify_ms: 100 } }
  raw: { kind: openai_compatible, base_url: "http://127.0.0.1:${raw.port}/v1", keys: ["sk-raw"], health: { probe: none } }
targets:
  poison@p: { provider: p, model: m-poison, capabilities: [text, streaming], breaker: { consecutive_failures: 3, min_requests: 4, failure_rate: 0.5, open_ms: 60000 } }
  one@p: { provider: p, model: m-one, capabilities: [text, streaming] }
  two@p: { provider: p, model: m-two, capabilities: [text, streaming] }
  bad@q: { provider: q, model: m-bad, capabilities: [text, streaming] }
  cut@p2: { provider: p2, model: m-cut, capabilities: [text, streaming] }
  three@p2: { provider: p2, model: m-three, capabilities: [text, streaming] }
  chunk@raw: { provider: raw, model: m-chunk, capabilities: [text, streaming] }
routes:
  poison: { primary: [poison@p], envelope: { max_attempts: 1 } }
  one: { primary: [one@p], envelope: { max_attempts: 1 } }
  two: { primary: [two@p], envelope: { max_attempts: 1 } }
  bad: { primary: [bad@q], envelope: { max_attempts: 1 } }
  three: { primary: [three@p2], envelope: { max_attempts: 1 } }
  cut: { primary: [cut@p2], envelope: { max_attempts: 2 } }
  cutbuf: { primary: [cut@p2], envelope: { max_attempts: 2, on_stream_failure: buffer } }
  chunk: { primary: [chunk@raw], envelope: { max_attempts: 1 } }
`,
  });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
  raw?.server.close();
});

const msgs = [{ role: 'user', content: 'hi' }];

function chat(body, headers = {}) {
  return fetch(`${gw.base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

async function drain(res) {
  try {
    return await res.text();
  } catch {
    return null; // a stream ended broken
  }
}

async function targets() {
  const res = await fetch(`${gw.url}/admin/targets`, { headers: { authorization: `Bearer ${ADMIN}` } });
  return Object.fromEntries((await res.json()).targets.map((t) => [t.id, t]));
}

async function metric(name, labels) {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  const line = text.split('\n').find((l) => l.startsWith(name + '{') && want.every((w) => l.includes(w)));
  return line ? Number(line.split(' ').pop()) : 0;
}

/** The attempt lines of request <id>, once its access line is out. */
async function attemptsOf(id) {
  await waitFor(() => gw.accessLog().some((l) => l.type === 'access' && l.request_id === id),
    { timeoutMs: 5000, what: `the access line of ${id}` });
  return gw.accessLog().filter((l) => l.type === 'attempt' && l.request_id === id);
}

function accessOf(id) {
  return gw.accessLog().find((l) => l.type === 'access' && l.request_id === id);
}

test('ten requests that provoke 400s and answers in the other shape leave the circuit closed', async () => {
  // In this order the old code saw: two answers it delivered, five neutral 400s, then
  // three server_errors in a row -- enough to open a breaker of consecutive_failures 3.
  await sim.setModel('m-poison', {
    script: [
      { action: 'ok', stream: false, times: 2 }, // a single answer to a request for a stream
      { action: 'status', status: 400, times: 5 }, // the upstream refuses the request
      { action: 'ok', stream: true, times: 3 }, // a stream to a request for a single answer
    ],
  });
  const statuses = [];
  for (let i = 0; i < 10; i++) {
    const stream = i < 2;
    const res = await chat({ model: 'poison', messages: msgs, stream });
    await drain(res);
    statuses.push(res.status);
  }
  const res = await chat({ model: 'poison', messages: msgs });
  assert.equal(res.status, 200, 'a normal request after them is served');
  assert.equal((await res.json()).object, 'chat.completion');
  assert.equal((await targets())['poison@p'].circuit, 'closed');
  assert.equal(await metric('bascule_breaker_transitions_total', { target: 'poison@p', to: 'open' }), 0);
  assert.deepEqual(statuses.slice(2, 7), [400, 400, 400, 400, 400], 'the upstream 400 reaches the client');
  for (const s of [...statuses.slice(0, 2), ...statuses.slice(7)])
    assert.ok(s >= 500, `an answer in the other shape is not passed off as a success (${statuses})`);
});

test('malformed answers to well-formed requests still count against the target', async () => {
  await sim.setModel('m-poison', { script: [{ action: 'malformed', times: 3 }] });
  for (let i = 0; i < 3; i++) await drain(await chat({ model: 'poison', messages: msgs }));
  assert.equal((await targets())['poison@p'].circuit, 'open');
});

test('a key refused for one model is re-verified and restored for the other routes', async () => {
  await sim.setModel('m-one', { script: [{ action: 'status', status: 401 }] });
  const first = await chat({ model: 'one', messages: msgs });
  await drain(first);
  assert.equal(first.status >= 500, true, 'our credential was refused: never a 401 to the client');
  assert.equal(await metric('bascule_key_cooldowns_total', { provider: 'p', reason: 'auth' }), 1);
  await waitFor(async () => (await metric('bascule_key_reverifications_total', { provider: 'p', result: 'restored' })) >= 1,
    { timeoutMs: 5000, what: 'the refused key to be re-verified and restored' });
  const res = await chat({ model: 'two', messages: msgs });
  assert.equal(res.status, 200, 'another route on the same provider is served');
  await drain(res);
  const probes = (await sim.requests()).filter((r) => r.path === '/v1/models');
  assert.ok(probes.length >= 1);
  assert.equal(probes[probes.length - 1].headers.authorization, 'Bearer sk-p', 'the probe used the refused key');
});

test('a key the re-verification refuses too stays out, re-verified with a growing wait', async () => {
  const first = await chat({ model: 'bad', messages: msgs });
  await drain(first);
  assert.ok(first.status >= 500);
  await waitFor(async () => (await metric('bascule_key_reverifications_total', { provider: 'q', result: 'refused' })) >= 2,
    { timeoutMs: 5000, what: 'two refused re-verifications' });
  assert.equal(await metric('bascule_key_reverifications_total', { provider: 'q', result: 'restored' }), 0);
  const again = await chat({ model: 'bad', messages: msgs });
  const body = JSON.parse(await drain(again));
  // A refused key is a credential problem, not a rate limit: a 503 saying so (issue 24).
  assert.equal(again.status, 503, 'the only key still cools: no upstream call');
  assert.match(body.error.message, /all keys cooled: auth_failed/);
  const ra = Number(again.headers.get('retry-after'));
  assert.ok(ra >= 1 && ra <= 30, `Retry-After says when the key is looked at next, not 600 s (${ra})`);
});

test('a reset in the middle of an answer is upstream_reset with the status it had', async () => {
  await sim.setModel('m-cut', { script: [{ action: 'cut' }] });
  const res = await chat({ model: 'cut', messages: msgs });
  assert.equal(res.status, 200, 'replayed once and served');
  await drain(res);
  assert.equal(res.headers.get('x-bascule-recovery-reason'), 'upstream_reset');
  const [a1] = await attemptsOf(res.headers.get('x-request-id'));
  assert.equal(a1.kind, 'upstream_reset');
  assert.equal(a1.status, 200);
});

test('a buffered stream cut after it began is upstream_reset, not connect', async () => {
  await sim.setModel('m-cut', { script: [{ action: 'cut', after_events: 3 }] });
  const res = await chat({ model: 'cutbuf', messages: msgs, stream: true });
  assert.equal(res.status, 200);
  const text = await drain(res);
  assert.match(text, /\[DONE\]/);
  assert.equal(res.headers.get('x-bascule-recovery-reason'), 'upstream_reset');
  const [a1] = await attemptsOf(res.headers.get('x-request-id'));
  assert.equal(a1.kind, 'upstream_reset');
  assert.equal(a1.status, 200);
});

test('bad chunked framing is protocol_error', async () => {
  rawModes.set('m-chunk', 'bad_chunk');
  const res = await chat({ model: 'chunk', messages: msgs });
  await drain(res);
  assert.ok(res.status >= 500);
  const [a1] = await attemptsOf(res.headers.get('x-request-id'));
  assert.equal(a1.kind, 'protocol_error');
  assert.equal(a1.status, 200);
});

test('bytes_in counts the body of streamed and Anthropic-dialect requests', async () => {
  await sim.setModel('m-three', { token_delay_ms: 0 });
  const body = { model: 'three', messages: msgs, stream: true };
  const res = await chat(body);
  await drain(res);
  const line = await waitFor(() => accessOf(res.headers.get('x-request-id')), { what: 'the access line' });
  assert.equal(line.bytes_in, JSON.stringify(body).length);

  const abody = { model: 'three', max_tokens: 16, stream: true, messages: msgs };
  const ares = await fetch(`${gw.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-api-key': 'x' },
    body: JSON.stringify(abody),
  });
  assert.equal(ares.status, 200);
  await drain(ares);
  const id = ares.headers.get('x-request-id') ?? ares.headers.get('request-id');
  await waitFor(() => accessOf(id), { timeoutMs: 5000, what: 'the access line' });
  assert.equal(accessOf(id).bytes_in, JSON.stringify(abody).length);

  // A client that leaves in the middle of a stream: its body was still received.
  await sim.setModel('m-three', { token_delay_ms: 50 });
  const slow = await chat(body);
  const sid = slow.headers.get('x-request-id');
  const reader = slow.body.getReader();
  await reader.read();
  await reader.cancel().catch(() => {}); // closes the connection
  await waitFor(() => accessOf(sid), { timeoutMs: 5000, what: 'the aborted request\'s access line' });
  assert.equal(accessOf(sid).bytes_in, JSON.stringify(body).length);
});
