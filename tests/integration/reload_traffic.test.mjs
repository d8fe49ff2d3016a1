// SPDX-License-Identifier: MIT
// Config reloads under traffic: SIGHUP swaps the snapshot, the log settings and the routing
// state on the main thread while four workers serve requests. Every request must still
// succeed. Run against the ThreadSanitizer build (make test-tsan) this is the test that
// makes the main thread and the workers touch the shared state at the same time.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startSim, startGateway, freePort, waitFor } from '../lib/harness.mjs';

let sim, gw;

function config(port, simBase, i) {
  // Each reload changes what the workers read: the log level and format, the target set,
  // and the route's primary list.
  const log = i % 2 ? '{ level: debug, format: json }' : '{ level: info, format: text }';
  const extraTarget = i % 2 ? '  m3@sim: { provider: sim, model: upstream-m3 }\n' : '';
  const primary = i % 2 ? '[m1@sim, m3@sim]' : '[m1@sim, m2@sim]';
  return `
listen: "127.0.0.1:${port}"
workers: 4
log: ${log}
providers:
  sim:
    kind: openai_compatible
    base_url: "${simBase}"
    keys: ["sk-test-a", "sk-test-b"]
targets:
  m1@sim: { provider: sim, model: upstream-m1 }
  m2@sim: { provider: sim, model: upstream-m2 }
${extraTarget}routes:
  chat:
    primary: ${primary}
`;
}

before(async () => {
  sim = await startSim();
  const port = await freePort();
  gw = await startGateway({ config: config(port, sim.base, 0) });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

async function one(stream) {
  const res = await fetch(`${gw.base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer client-key' },
    body: JSON.stringify({ model: 'chat', stream, messages: [{ role: 'user', content: 'hi' }] }),
  });
  const text = await res.text();
  return { status: res.status, text };
}

test('SIGHUP while four workers serve: every request succeeds across six reloads', async () => {
  const MAX_PER_CLIENT = 400; // bound: the reloads below need far fewer
  let stop = false;
  let done = 0;
  const failures = [];
  const client = async (c) => {
    for (let i = 0; i < MAX_PER_CLIENT && !stop; i++) {
      const r = await one((i + c) % 2 === 0);
      if (r.status !== 200) failures.push(`${r.status} ${r.text.slice(0, 200)}`);
      done++;
    }
  };
  const clients = [0, 1, 2, 3, 4, 5].map(client);
  try {
    for (let i = 1; i <= 6; i++) {
      const before = done;
      // Requests are in flight across each reload: wait until some finish, then reload.
      await waitFor(() => done >= before + 3, { timeoutMs: 20_000, what: 'requests between reloads' });
      assert.match(await gw.reload(config(gw.port, sim.base, i)), /reloaded/);
    }
    const after = done;
    await waitFor(() => done >= after + 3, { timeoutMs: 20_000, what: 'requests after the last reload' });
  } finally {
    stop = true;
    await Promise.all(clients);
  }
  assert.deepEqual(failures, []);
});
