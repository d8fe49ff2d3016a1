// SIGTERM drains (docs/configuration.md limits.drain_timeout_ms, docs/internals/server.md):
// the gateway stops accepting, lets the requests and streams in flight finish, and exits 0;
// a stream still running at the drain timeout ends with one error event; a second signal
// closes everything at once. Each test starts its own gateway, since each ends it.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startSim, startGateway, waitFor, readStream } from '../lib/harness.mjs';

let sim;
const gws = [];

function config(simBase, drainMs) {
  return `
listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: info, format: json }
limits: { drain_timeout_ms: ${drainMs}, idle_timeout_ms: 60000 }
providers:
  sim: { kind: openai_compatible, base_url: "${simBase}", keys: ["sk-drain"] }
targets:
  held@sim: { provider: sim, model: held }
  slow@sim: { provider: sim, model: slow }
  endless@sim: { provider: sim, model: endless }
routes:
  held: { primary: [held@sim] }
  slow: { primary: [slow@sim] }
  endless: { primary: [endless@sim] }
`;
}

async function gateway(drainMs) {
  const gw = await startGateway({ config: config(sim.base, drainMs) });
  gws.push(gw);
  return gw;
}

before(async () => {
  sim = await startSim();
  // A plain answer held 1.5 s upstream; a stream of 30 events 50 ms apart (1.5 s); a stream
  // of 4096 events 50 ms apart (about 200 s: it never ends on its own within a test).
  await sim.setModel('held', { script: [{ action: 'delay', delay_ms: 1500 }], repeat: true });
  await sim.setModel('slow', { tokens: 30, token_delay_ms: 50 });
  await sim.setModel('endless', { tokens: 4096, token_delay_ms: 50 });
});

after(async () => {
  for (const gw of gws) await gw.stop();
  await sim?.stop();
});

function chat(gw, model, stream) {
  return fetch(`${gw.base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer k' },
    body: JSON.stringify({ model, stream, messages: [{ role: 'user', content: 'drain me' }] }),
  });
}

/** Resolves with the first chunk of <res>'s body and a reader for the rest. */
async function firstChunk(res) {
  const reader = res.body.getReader();
  const step = await reader.read();
  assert.ok(!step.done, 'the stream has a first event');
  return { first: new TextDecoder().decode(step.value), reader };
}

/** Reads the rest of a stream: {text, broken} as readStream does. */
async function readRest(reader, first) {
  const decoder = new TextDecoder();
  let text = first;
  for (;;) {
    let step;
    try {
      step = await reader.read();
    } catch {
      return { text: text + decoder.decode(), broken: true };
    }
    if (step.done) return { text: text + decoder.decode(), broken: false };
    text += decoder.decode(step.value, { stream: true });
  }
}

/** Resolves with the connect's error code ('ECONNREFUSED'), or 'connected'. */
function tryConnect(port) {
  return new Promise((resolve) => {
    const sock = net.connect({ port, host: '127.0.0.1' });
    sock.on('connect', () => {
      sock.destroy();
      resolve('connected');
    });
    sock.on('error', (err) => resolve(err.code));
  });
}

const events = (text) =>
  text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6));

test('SIGTERM: in-flight plain and streamed requests complete, new connections are refused, exit 0', async () => {
  const gw = await gateway(60000);
  const plain = chat(gw, 'held', false);
  const streamed = await chat(gw, 'slow', true);
  assert.equal(streamed.status, 200);
  const { first, reader } = await firstChunk(streamed);
  await waitFor(async () => (await sim.stats()).models.held?.in_flight === 1, { what: 'the plain request upstream' });

  gw.signal('SIGTERM');
  await waitFor(() => /draining/.test(gw.logs()), { what: 'the "draining" log line' });
  // The listener closes on each worker's loop: from then on the kernel refuses connects.
  await waitFor(async () => (await tryConnect(gw.port)) === 'ECONNREFUSED', { what: 'connects refused' });

  const res = await plain;
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.equal(body.object, 'chat.completion');
  assert.ok(body.choices[0].message.content.length > 0);
  const rest = await readRest(reader, first);
  assert.equal(rest.broken, false, 'the stream ends properly');
  assert.equal(events(rest.text).at(-1), '[DONE]');
  assert.ok(!rest.text.includes('"error"'), rest.text.slice(-400));

  assert.deepEqual(await gw.exited, { code: 0, signal: null });
  // It exited because the work was done, not because the drain timed out.
  assert.doesNotMatch(gw.logs(), /drain timeout/);
  assert.match(gw.logs(), /bascule stopped/);
});

test('SIGTERM: a stream still running at drain_timeout_ms ends with one error event, then exit 0', async () => {
  const drainMs = 1500;
  const gw = await gateway(drainMs);
  const res = await chat(gw, 'endless', true);
  assert.equal(res.status, 200);
  const { first, reader } = await firstChunk(res);
  const sentAt = Date.now();
  gw.signal('SIGTERM');
  const { text, broken } = await readRest(reader, first);
  const endedAfter = Date.now() - sentAt;
  assert.ok(broken, 'the stream ends without its proper end');
  const ev = events(text);
  assert.ok(!ev.includes('[DONE]'));
  const last = JSON.parse(ev.at(-1));
  assert.equal(last.error.code, 'shutting_down', text.slice(-400));
  assert.match(last.error.message, /drain_timeout_ms/);
  assert.ok(ev.length > 3, `events relayed during the drain: ${ev.length}`);
  // The drain timer, not the stream, ended it: never before the timeout.
  assert.ok(endedAfter >= drainMs - 50, `ended ${endedAfter} ms after SIGTERM`);
  assert.match(gw.logs(), /drain timeout/);
  assert.deepEqual(await gw.exited, { code: 0, signal: null });
  const access = gw.accessLog().find((l) => l.type === 'access' && l.route === 'endless');
  assert.equal(access?.termination, 'shutting_down', JSON.stringify(access));
});

test('a second signal during the drain closes everything at once, exit 0; SIGHUP is ignored', async () => {
  const gw = await gateway(600000);
  const res = await chat(gw, 'endless', true);
  const { first, reader } = await firstChunk(res);
  gw.signal('SIGTERM');
  await waitFor(() => /draining/.test(gw.logs()), { what: 'the "draining" log line' });
  // A reload signal during the drain neither reloads nor kills (its default action).
  gw.signal('SIGHUP');
  await waitFor(() => /SIGHUP while draining/.test(gw.logs()), { what: 'SIGHUP ignored' });
  gw.signal('SIGINT');
  // Bounded by the 600 s drain: only the second signal ends the stream and the process.
  const { broken } = await readRest(reader, first);
  assert.ok(broken, 'the stream is cut');
  assert.deepEqual(await gw.exited, { code: 0, signal: null });
  assert.match(gw.logs(), /bascule stopped/);
});
