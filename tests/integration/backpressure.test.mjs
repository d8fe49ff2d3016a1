// Back-pressure (docs/design.md §5): a client that stops reading a stream must not make the
// gateway buffer it. Past limits.max_stream_buffer_bytes the upstream transfer pauses
// (the rest waits in the kernel's socket buffers and the provider's), and the stream
// completes once the client reads again.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import net from 'node:net';
import { readFileSync } from 'node:fs';
import { startSim, startGateway, waitFor } from '../lib/harness.mjs';

let sim, gw;

before(async () => {
  sim = await startSim();
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 1
limits: { max_stream_buffer_bytes: 65536 }
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-bp"], health: { probe: none } }
targets:
  big@sim: { provider: sim, model: bp-big }
routes:
  big: { primary: [big@sim], envelope: { deadline_ms: 60000 } }
`,
  });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

const pauses = (metrics) =>
  Number(/^bascule_stream_pauses_total\{route="big"\} (\d+)/m.exec(metrics)?.[1] ?? 0);

function rssKiB(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m[1]);
}

test('a client that stops reading pauses the upstream instead of filling memory', async () => {
  // 4096 tokens of 4-character pieces ~ 200-byte chunks each: about 9 MB of events, past
  // the 64 KiB bound and the kernel socket buffers together.
  await sim.setModel('bp-big', { tokens: 4096, token_delay_ms: 0, content: "x".repeat(200000) });
  const rssBefore = rssKiB(gw.proc.pid);
  const body = JSON.stringify({ model: 'big', stream: true, messages: [{ role: 'user', content: 'x' }] });
  const sock = net.connect({ port: gw.port, host: '127.0.0.1' });
  await new Promise((r) => sock.once('connect', r));
  sock.pause(); // read nothing
  sock.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  // The gateway paused the upstream transfer (its counter says so, the event itself), and
  // the sim's stream waits for the gateway to read (its "held") once the kernel's socket
  // buffers filled. A gateway reading on into its own memory never counts a pause.
  await waitFor(async () => pauses(await (await fetch(`${gw.url}/metrics`)).text()) >= 1,
    { timeoutMs: 20000, what: 'the upstream transfer paused' });
  await waitFor(async () => (await sim.stats()).models['bp-big']?.held === 1,
    { timeoutMs: 20000, what: 'the sim held by the paused transfer' });
  assert.equal((await sim.stats()).models['bp-big'].completed, 0, 'the upstream did not finish');
  // The kernel's socket buffers may absorb several MB on loopback; what must not happen is
  // the gateway holding the stream in its own memory.
  const grown = rssKiB(gw.proc.pid) - rssBefore;
  assert.ok(grown < 4096, `gateway RSS grew ${grown} KiB while the client did not read`);
  // Read again: everything arrives and the stream ends properly.
  let received = 0;
  let tail = '';
  sock.on('data', (d) => { received += d.length; tail = (tail + d.toString('latin1')).slice(-64); });
  sock.resume();
  await new Promise((r) => sock.once('close', r));
  assert.ok(received > 8_000_000, `received ${received} bytes`);
  assert.match(tail, /data: \[DONE\]/);
  await waitFor(async () => (await sim.stats()).models['bp-big'].completed === 1, { what: 'upstream completed' });
});
