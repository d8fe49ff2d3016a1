// SPDX-License-Identifier: MIT
// The in-memory response cache stays within cache.memory_mb under a flood of distinct
// requests (docs/internals/cache.md): the least recently used answers are evicted, the
// bytes charged never pass the bound (GET /admin/cache), the oldest request misses again
// and the newest still hits. Bounded: 120 requests.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startSim, startGateway } from '../lib/harness.mjs';

const ADMIN = 'admin-cache-mem-0123456789abcdef';
const FLOOD = 120;
let sim, gw;

before(async () => {
  sim = await startSim();
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 2
admin: { key: "${ADMIN}" }
cache: { memory_mb: 0.02, store: memory }
providers:
  oai: { kind: openai, base_url: "${sim.url}/v1", keys: ["sk-oai"], health: { probe: none } }
targets:
  t: { provider: oai, model: m-flood }
routes:
  flood: { primary: [t], cache: { mode: exact, scope: route } }
`,
  });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

async function ask(i) {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'flood', messages: [{ role: 'user', content: `question ${i}` }] }),
  });
  await res.text();
  assert.equal(res.status, 200);
  return res.headers.get('x-bascule-cache');
}

async function usage() {
  const res = await fetch(`${gw.url}/admin/cache`, { headers: { authorization: `Bearer ${ADMIN}` } });
  assert.equal(res.status, 200);
  return res.json();
}

test('a flood of distinct requests stays within memory_mb; the oldest are evicted', async () => {
  for (let i = 0; i < FLOOD; i++) {
    assert.equal(await ask(i), 'miss');
    const u = await usage();
    assert.ok(u.bytes <= u.limit_bytes, `${u.bytes} bytes charged, bound ${u.limit_bytes}`);
  }
  const u = await usage();
  assert.equal(u.limit_bytes, Math.floor(0.02 * 1048576));
  assert.ok(u.evicted > 0, 'entries were evicted');
  assert.ok(u.entries > 1 && u.entries < FLOOD, `${u.entries} entries kept`);
  assert.equal(await ask(FLOOD - 1), 'hit', 'the newest is kept');
  assert.equal(await ask(0), 'miss', 'the oldest was evicted');
});
