// Accepting connections (src/server/listener.c): a gateway out of file descriptors leaves
// new connections waiting in the kernel's queue, says so once, and serves them as soon as
// descriptors free up, instead of accepting and dropping them.
import { test, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import net from 'node:net';
import { startGateway, waitFor, stopAll } from '../lib/harness.mjs';

after(stopAll);

const CONFIG = `
listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: info, format: json }
providers:
  p: { kind: openai_compatible, base_url: "http://127.0.0.1:9/v1", keys: ["k"] }
targets:
  t@p: { provider: p, model: m }
routes:
  r: { primary: [t@p] }
`;

function connect(port) {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => resolve(s));
    s.once('error', reject);
  });
}

/** Sends GET /health/live on <s>; resolves with the status line, or 'no answer'. */
function ask(s, ms) {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve('no answer'), ms);
    s.once('data', (d) => {
      clearTimeout(timer);
      resolve(String(d).split('\r\n')[0]);
    });
    s.once('close', () => {
      clearTimeout(timer);
      resolve('closed');
    });
    s.write('GET /health/live HTTP/1.1\r\nHost: localhost\r\n\r\n');
  });
}

test('out of file descriptors: connections wait in the queue and are served when fds free up', async () => {
  const gw = await startGateway({ config: CONFIG });
  const pid = gw.proc.pid;
  const open = readdirSync(`/proc/${pid}/fd`).length;
  // Room for 8 more descriptors from now on: the 20 connections below cannot all be taken.
  const lim = spawnSync('prlimit', [`--pid=${pid}`, `--nofile=${open + 8}:${open + 8}`]);
  assert.equal(lim.status, 0, `prlimit failed: ${lim.stderr}`);

  const socks = [];
  for (let i = 0; i < 20; i++) socks.push(await connect(gw.port)); // the kernel completes them all
  await waitFor(() => /retrying every 100 ms, connections wait in the queue/.test(gw.logs()), {
    what: 'the out-of-fds warning',
  });
  // The workers retry every 100 ms but say so once per shortage, not at every retry (an
  // fd freed meanwhile, such as an idle client connection of the harness timing out, may
  // end one shortage and start another: a few lines, not twenty a second).
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const warnings = gw.logs().match(/Too many open files/g).length;
  assert.ok(warnings >= 1 && warnings <= 4, `warnings in 1 s of shortage: ${warnings}`);
  // Some connections are served and the others wait: nothing was accepted and dropped.
  const first = await Promise.all(socks.map((s) => ask(s, 1500)));
  const served = first.filter((l) => l === 'HTTP/1.1 200 OK').length;
  assert.equal(first.filter((l) => l === 'closed').length, 0, first.join(', '));
  assert.ok(served >= 1 && served <= 10, `served ${served} of 20 with about 8 free fds`);

  // Closing the served ones frees their fds: every waiting connection is then served.
  const waiting = socks.filter((_, i) => first[i] === 'no answer');
  socks.filter((_, i) => first[i] !== 'no answer').forEach((s) => s.destroy());
  const later = await Promise.all(waiting.map((s) => new Promise((resolve) => {
    const timer = setTimeout(() => resolve('no answer'), 5000);
    s.once('data', (d) => {
      clearTimeout(timer);
      resolve(String(d).split('\r\n')[0]);
    });
  })));
  // Each waiting connection had sent its request already: it is answered once accepted,
  // unless it still waits behind others (8 fds for up to 19 connections).
  const nowServed = later.filter((l) => l === 'HTTP/1.1 200 OK').length;
  assert.ok(nowServed >= Math.min(waiting.length, 8) - 1, `served ${nowServed} of ${waiting.length} later`);
  waiting.forEach((s) => s.destroy());
  await waitFor(() => /srv: accepting again/.test(gw.logs()), { what: 'the recovery line' });
  // A fresh connection is served normally once the burst is gone.
  const res = await waitFor(async () => (await fetch(`${gw.url}/health/live`)).status === 200, {
    what: 'a fresh request served',
  });
  assert.ok(res);
  await gw.stop();
});
