// SPDX-License-Identifier: MIT
// The streaming part of `make bench` (bench/streams.mjs, bench/probes.mjs), small: N held
// streams through a gateway, the probe pairs sent from their worker thread over warm
// keep-alive connections, the held streams closed and their fds released. The full-size
// run is `make bench`; this checks that every figure it reports is produced, and from
// what: each probe pair counted once per side, the warm-up not counted, the events of the
// held streams counted for the CPU per event.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, startGateway, startSim } from '../lib/harness.mjs';
import { basculeYaml } from '../../bench/configs.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const STREAMS = path.join(HERE, '..', '..', 'bench', 'streams.mjs');

let sim, gw;

before(async () => {
  sim = await startSim();
  await sim.setModel('sim-hold', { tokens: 400, token_delay_ms: 50 });
  await sim.setModel('sim-probe', { tokens: 5, token_delay_ms: 10 });
  gw = await startGateway({
    config: basculeYaml({
      port: await freePort(), workers: 2, maxConnections: 1000,
      providers: [{ id: 'sim', baseUrl: sim.base }],
      targets: [{ id: 'hold@sim', provider: 'sim', model: 'sim-hold' }, { id: 'probe@sim', provider: 'sim', model: 'sim-probe' }],
      routes: [{ id: 'bench-hold', target: 'hold@sim' }, { id: 'bench-probe', target: 'probe@sim' }],
    }),
  });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

function runStreams(opts) {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [STREAMS, JSON.stringify(opts)], { timeout: 60000 }, (err, stdout, stderr) => {
      const line = stdout.trim().split('\n').pop();
      try {
        resolve(JSON.parse(line));
      } catch {
        reject(new Error(`streams.mjs: ${err?.message ?? 'no JSON'}\n${stderr}\n${stdout}`));
      }
    });
  });
}

test('bench streams: held streams, probe pairs from the worker, fds released', async () => {
  const calls0 = (await sim.stats()).models?.['sim-probe']?.calls ?? 0;
  const r = await runStreams({
    gateway: `${gw.url}/v1/chat/completions`,
    direct: `${sim.base}/chat/completions`,
    holdModel: 'bench-hold', probeModelGateway: 'bench-probe', probeModelDirect: 'sim-probe',
    streams: 40, openConcurrency: 20, probes: 30, probeIntervalMs: 10, holdMs: 500,
    pids: [gw.proc.pid], rampTimeoutMs: 20000,
  });
  assert.equal(r.fatal, undefined, r.fatal);
  assert.equal(r.streams_first_token, 40);
  assert.equal(r.streams_failed, 0);
  assert.equal(r.held_open, 40);
  // Every pair measured once per side; the 32 warm-up streams per side are not figures.
  assert.deepEqual(r.probe_failed, { direct: 0, gateway: 0 });
  assert.equal(r.ttft_probe_direct_ms.n, 30);
  assert.equal(r.ttft_probe_gateway_ms.n, 30);
  assert.ok(r.ttft_probe_gateway_ms.p50 > 0 && r.ttft_probe_direct_ms.p50 > 0);
  assert.equal(r.ttft_added_ms.p50, Math.round((r.ttft_probe_gateway_ms.p50 - r.ttft_probe_direct_ms.p50) * 1000) / 1000);
  assert.equal(typeof r.probe_new_sockets, 'number');
  assert.ok(r.probe_new_sockets <= 60, `${r.probe_new_sockets} probes opened a connection`);
  // The sim served the warm-up and the probes: 32 + 30 straight, 32 + 30 through the gateway.
  const calls = ((await sim.stats()).models?.['sim-probe']?.calls ?? 0) - calls0;
  assert.equal(calls, 2 * (32 + 30));
  // The held streams' later events were counted, and the gateway let go of them all.
  assert.ok(r.hold_events > 0, 'no token events counted while holding');
  assert.ok(r.cpu_us_per_event > 0);
  assert.ok(r.fds_after_close <= r.fds_idle + 16 + r.upstream_idle_after_close,
    `fds idle ${r.fds_idle}, after close ${r.fds_after_close}, pooled ${r.upstream_idle_after_close}`);
});
