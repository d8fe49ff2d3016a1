// SPDX-License-Identifier: MIT
// upstream_shapes.test.mjs -- a 200 whose JSON lacks what an answer must hold ("choices")
// on a route that checks its contract: the attempt fails as an unreadable answer, the
// gateway keeps serving (json-c asserts on a missing array; the contract check must not
// hand it one).
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startSim, startGateway } from '../lib/harness.mjs';

let sim, gw;

before(async () => {
  sim = await startSim();
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
providers:
  s: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-shape"], health: { probe: none } }
targets:
  odd@s: { provider: s, model: shape-odd, capabilities: [text, streaming, tools, json_schema] }
  good@s: { provider: s, model: shape-good, capabilities: [text, streaming, tools, json_schema] }
routes:
  shapes: { primary: [odd@s], equivalent: [good@s], envelope: { max_same_target_attempts: 1 } }
`,
  });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

const schema = {
  type: 'json_schema',
  json_schema: { name: 'r', strict: true, schema: { type: 'object', properties: { a: { type: 'string' } }, required: ['a'], additionalProperties: false } },
};

for (const body of [{ id: 'chatcmpl-odd', object: 'chat.completion' }, { id: 'x', choices: {} }, { choices: [] }]) {
  test(`a 200 answer ${JSON.stringify(body)} on a contract route does not take the gateway down`, async () => {
    await sim.setModel('shape-odd', { script: [{ action: 'status', status: 200, body, times: 1 }] });
    const res = await fetch(`${gw.base}/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'shapes', response_format: schema, messages: [{ role: 'user', content: 'x' }] }),
    });
    await res.arrayBuffer();
    assert.ok(res.status === 200 || res.status >= 500, `status ${res.status}`);
    assert.equal(gw.proc.exitCode, null, 'the gateway is still running');
    const live = await fetch(`${gw.url}/health/live`);
    assert.equal(live.status, 200);
  });
}
