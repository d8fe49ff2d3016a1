// Bodies and streams that would run forever: limits.body_timeout_ms bounds the time to
// receive a request body (a client trickling a byte now and then gets 408 and a close),
// limits.max_stream_bytes and limits.max_stream_ms bound a relayed stream (it ends with the
// usual error event and the access and attempt lines say why).
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startSim, startGateway, waitFor, readStream, stopAll } from '../lib/harness.mjs';

let sim, gw;

before(async () => {
  sim = await startSim();
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 1
limits: { body_timeout_ms: 500, max_stream_bytes: 20000, max_stream_ms: 1000 }
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-lim"], health: { probe: none } }
targets:
  big@sim: { provider: sim, model: lim-big }
  slow@sim: { provider: sim, model: lim-slow }
  sparse@sim: { provider: sim, model: lim-sparse }
routes:
  big: { primary: [big@sim], envelope: { deadline_ms: 60000 } }
  slow: { primary: [slow@sim], envelope: { deadline_ms: 60000 } }
  sparse: { primary: [sparse@sim], envelope: { deadline_ms: 60000 } }
`,
  });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
  await stopAll();
});

test('a body trickled a byte at a time gets 408 once body_timeout_ms has passed', async () => {
  const s = net.connect(gw.port, '127.0.0.1');
  let got = '';
  let trickle;
  try {
    await new Promise((resolve, reject) => {
      s.once('connect', resolve);
      s.once('error', reject);
    });
    s.on('error', () => {}); // the server may reset after its 408 while bytes still come
    s.on('data', (d) => { got += d; });
    const closed = new Promise((resolve) => s.once('close', resolve));
    s.write('POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n' +
      'Content-Length: 1000000\r\n\r\n{');
    // One byte every 100 ms: never a stall of header_timeout_ms (10 s), so only the total
    // body time can end it.
    trickle = setInterval(() => { if (!s.destroyed) s.write(' '); }, 100);
    await waitFor(() => /\r\n\r\n\{.*\}$/s.test(got), { timeoutMs: 10_000, what: 'the 408 answer' });
    assert.match(got, /^HTTP\/1\.1 408 /);
    assert.match(got, /"code":"request_timeout"/);
    assert.match(got, /not received in time/);
    assert.match(got, /Connection: close/i);
    clearInterval(trickle);
    await Promise.race([closed, waitFor(() => s.destroyed, { timeoutMs: 10_000, what: 'the close' })]);
  } finally {
    clearInterval(trickle);
    s.destroy();
  }
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

async function linesOf(id) {
  return waitFor(() => {
    const all = gw.accessLog().filter((l) => l.request_id === id);
    return all.some((l) => l.type === 'access') && all;
  }, { what: `the log lines of ${id}` });
}

test('a stream past max_stream_bytes ends with an error event and the log says why', async () => {
  // 4096 events of about 200 bytes each: far past 20000 bytes.
  await sim.setModel('lim-big', { tokens: 4096, token_delay_ms: 0 });
  const res = await streamChat('big');
  assert.equal(res.status, 200);
  const { text, broken } = await readStream(res);
  assert.ok(broken, 'the stream ends without its proper end');
  const ev = events(text);
  const last = JSON.parse(ev.at(-1));
  assert.equal(last.error.code, 'stream_too_large');
  assert.match(last.error.message, /max_stream_bytes/);
  assert.ok(!text.includes('[DONE]'));
  assert.ok(Buffer.byteLength(text) < 20000 + 1024, `${Buffer.byteLength(text)} bytes relayed`);
  const lines = await linesOf(last.request_id);
  const access = lines.find((l) => l.type === 'access');
  assert.equal(access.termination, 'stream_too_large');
  assert.ok(lines.some((l) => l.type === 'attempt' && l.why === 'stream_too_large'), JSON.stringify(lines));
});

test('a stream past max_stream_ms ends with an error event', async () => {
  // An event every 50 ms for 4096 tokens: about 200 s, far past 1 s.
  await sim.setModel('lim-slow', { tokens: 4096, token_delay_ms: 50 });
  const res = await streamChat('slow');
  const { text, broken } = await readStream(res);
  assert.ok(broken);
  const ev = events(text);
  const last = JSON.parse(ev.at(-1));
  assert.equal(last.error.code, 'stream_too_long');
  assert.match(last.error.message, /max_stream_ms/);
  assert.ok(ev.length > 2, `${ev.length} events before the cut`);
  const access = (await linesOf(last.request_id)).find((l) => l.type === 'access');
  assert.equal(access.termination, 'stream_too_long');
});

test('max_stream_ms ends a stream whose next event is later than the limit', async () => {
  // The first event commits the stream; the next one would come 5 s later, the limit is 1 s
  // after the commit: the timer ends it, not the next event.
  await sim.setModel('lim-sparse', { tokens: 4, token_delay_ms: 5000 });
  const res = await streamChat('sparse');
  const { text, broken } = await readStream(res);
  assert.ok(broken);
  const ev = events(text);
  assert.equal(JSON.parse(ev.at(-1)).error.code, 'stream_too_long');
  assert.equal(ev.length, 2, `the first event, then the error: ${text}`);
});
