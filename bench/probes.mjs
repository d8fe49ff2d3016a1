// SPDX-License-Identifier: MIT
// probes.mjs -- the probe pairs of streams.mjs, run in a worker thread: one stream straight
// to the upstream and one through the gateway, sent back to back (the order alternating),
// a pair every probeIntervalMs, while the main thread holds the N streams.
//
// The probes have an event loop of their own so that their clock is not read late: the
// main thread's loop is busy with the held streams' events (tens of thousands a second),
// and a probe timed there would wait behind them for every callback, adding that wait --
// the load generator's, not the gateway's -- to both sides of each pair at random.
//
// workerData: { direct, gateway, probeModelDirect, probeModelGateway, probes,
// probeIntervalMs }. Posts one message: { direct: [ttftMs], gateway: [ttftMs], bad:
// { direct, gateway }, errors: [msg], sent, newSockets }.

import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import { openStream } from './sse-stream.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const idle = (ms) => new Promise((r) => setTimeout(r, ms).unref());
const WARM = 32; // keep-alive connections opened per side before the probes

async function run(o) {
  const agents = {
    direct: new http.Agent({ keepAlive: true, maxSockets: Infinity }),
    gateway: new http.Agent({ keepAlive: true, maxSockets: Infinity }),
  };
  const out = { direct: [], gateway: [], bad: { direct: 0, gateway: 0 }, errors: [], sent: 0, newSockets: 0 };
  // Warm keep-alive connections on both sides first, as an application's pool has them:
  // a probe that had to open one would add a connect and an accept (to the direct side or
  // to the gateway, at random) to what is measured. The unmeasured warm-up streams run
  // WARM at once per side; a probe that still finds no free socket is counted.
  await Promise.race([
    Promise.all(['direct', 'gateway'].flatMap((which) =>
      Array.from({ length: WARM }, () => openStream(which === 'direct' ? o.direct : o.gateway,
        which === 'direct' ? o.probeModelDirect : o.probeModelGateway, agents[which], true).done))),
    idle(15000),
  ]);
  const done = [];
  const streams = [];
  // A loaded machine stretches the pacing; the probes stop being sent after their planned
  // window plus 10 s whatever count they reached.
  const until = performance.now() + o.probes * o.probeIntervalMs + 10000;
  for (let i = 0; i < o.probes && performance.now() < until; i++) {
    const order = i % 2 === 0 ? ['direct', 'gateway'] : ['gateway', 'direct'];
    for (const which of order) {
      const url = which === 'direct' ? o.direct : o.gateway;
      const model = which === 'direct' ? o.probeModelDirect : o.probeModelGateway;
      const s = openStream(url, model, agents[which], true);
      streams.push(s);
      done.push(
        s.done.then((st) => {
          if (st.reused === false) out.newSockets++;
          if (st.ttft !== null && st.sawDone && !st.error) out[which].push(st.ttft);
          else {
            out.bad[which]++;
            out.errors.push(`probe ${which}: ${st.error ?? (st.sawDone ? 'no token' : 'no [DONE]')}`);
          }
        }),
      );
    }
    await sleep(o.probeIntervalMs);
  }
  out.sent = streams.length;
  await Promise.race([Promise.all(done), idle(15000)]);
  for (const s of streams) if (!s.st.ended) s.close();
  agents.direct.destroy();
  agents.gateway.destroy();
  return out;
}

run(workerData).then(
  (out) => parentPort.postMessage(out),
  (e) => parentPort.postMessage({ fatal: e.stack ?? String(e) }),
);
