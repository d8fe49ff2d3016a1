// Task routing: a route with `select` hands each request to the route of its first rule that
// holds (tools, images, json_schema, stream, input size, message count, metadata from body or
// header, a pattern on the last user message), on every API; the selected route's tiers give
// escalation; the answer says which route served, the access log which rule chose it.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { startSim, startGateway, bins, waitFor } from '../lib/harness.mjs';

let sim, gw;
const CAPS = 'capabilities: [text, streaming, tools, vision, json_schema, json_object]';

before(async () => {
  sim = await startSim();
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 2
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-sel"], health: { probe: none } }
targets:
  small: { provider: sim, model: sel-small, ${CAPS} }
  large: { provider: sim, model: sel-large, ${CAPS} }
  esc-small: { provider: sim, model: sel-esc-small, ${CAPS} }
  esc-large: { provider: sim, model: sel-esc-large, ${CAPS} }
routes:
  support-small: { primary: [small] }
  support-large: { primary: [large] }
  escalating:
    primary: [esc-small]
    fallback: [esc-large]
    envelope: { allow_cross_model_fallback: true }
  support:
    select:
      - if: { tools: false, max_input_tokens: 400, images: false }
        route: support-small
      - if: { metadata: { tier: premium } }
        route: support-large
      - if: { last_user_matches: "(?i)refund|chargeback|legal" }
        route: support-large
      - route: support-small
  flags:
    select:
      - if: { tools: true }
        route: support-large
      - if: { images: true }
        route: support-large
      - if: { json_schema: true }
        route: support-large
      - if: { stream: true }
        route: support-large
      - route: support-small
  sizes:
    select:
      - if: { min_messages: 3 }
        route: support-large
      - if: { min_input_tokens: 1000 }
        route: support-large
      - route: support-small
  meta:
    select:
      - if: { metadata: { tier: premium, region: eu } }
        route: support-large
      - route: support-small
  strict:
    select:
      - if: { tools: true }
        route: support-large
  escalate:
    select:
      - route: escalating
`,
  });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

let seq = 0;
function chat(model, extra = {}, headers = {}) {
  const id = `sel-${++seq}`;
  const res = fetch(`${gw.base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-request-id': id, ...headers },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], ...extra }),
  });
  return res.then((r) => Object.assign(r, { id }));
}

async function counts() {
  const s = await sim.stats();
  const c = (m) => s.models[m]?.calls ?? 0;
  return { small: c('sel-small'), large: c('sel-large') };
}

/** Sends the request, checks it was served by <route> (header and the sim's call counts). */
async function expectRoute(send, route, rule) {
  const before_ = await counts();
  const res = await send();
  const text = await res.text();
  assert.equal(res.status, 200, text);
  assert.equal(res.headers.get('x-bascule-route'), route);
  const after_ = await counts();
  const want = route === 'support-large' ? { small: 0, large: 1 } : { small: 1, large: 0 };
  assert.deepEqual({ small: after_.small - before_.small, large: after_.large - before_.large }, want);
  if (rule && res.id) {
    const line = await waitFor(() => gw.accessLog().find((l) => l.type === 'access' && l.request_id === res.id),
      { what: `the access line of ${res.id}` });
    assert.equal(line.route, route);
    assert.equal(line.selected_by, rule);
  }
  return res;
}

const tools = [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: {} } } }];

test('a short plain request goes to the small route; the log names the rule', async () => {
  await expectRoute(() => chat('support'), 'support-small', 'support#1');
});

test('a long request escalates by the pattern on the last user message, case-insensitive', async () => {
  const long = 'x'.repeat(2000);
  await expectRoute(() => chat('support', { messages: [{ role: 'user', content: `${long} I want a REFUND` }] }),
    'support-large', 'support#3');
  await expectRoute(() => chat('support', { messages: [{ role: 'user', content: `${long} thanks` }] }),
    'support-small', 'support#4');
  // Only the last user message counts, and text parts are read.
  await expectRoute(() => chat('support', { messages: [
    { role: 'user', content: `${long} refund please` },
    { role: 'assistant', content: 'done' },
    { role: 'user', content: [{ type: 'text', text: `${long} and one more thing: Legal` }] },
  ] }), 'support-large', 'support#3');
  await expectRoute(() => chat('support', { messages: [
    { role: 'user', content: `${long} refund please` },
    { role: 'assistant', content: 'done' },
    { role: 'user', content: `${long} all good` },
  ] }), 'support-small', 'support#4');
});

test('metadata from the body or from X-Bascule-Meta-*; the header wins', async () => {
  const long = { messages: [{ role: 'user', content: 'y'.repeat(2000) }] };
  await expectRoute(() => chat('support', { ...long, metadata: { tier: 'premium' } }), 'support-large', 'support#2');
  await expectRoute(() => chat('support', long, { 'X-Bascule-Meta-Tier': 'premium' }), 'support-large', 'support#2');
  await expectRoute(() => chat('support', long, { 'x-bascule-meta-tier': 'basic' }), 'support-small', 'support#4');
  await expectRoute(() => chat('support', { ...long, metadata: { tier: 'premium' } }, { 'X-Bascule-Meta-Tier': 'basic' }),
    'support-small', 'support#4');
  // Every key of the condition must hold.
  await expectRoute(() => chat('meta', { metadata: { tier: 'premium', region: 'eu' } }), 'support-large', 'meta#1');
  await expectRoute(() => chat('meta', { metadata: { tier: 'premium' } }, { 'X-Bascule-Meta-Region': 'eu' }),
    'support-large', 'meta#1');
  await expectRoute(() => chat('meta', { metadata: { tier: 'premium', region: 'us' } }), 'support-small', 'meta#2');
});

test('each boolean condition: tools, images, json_schema, stream', async () => {
  await expectRoute(() => chat('flags', { tools }), 'support-large', 'flags#1');
  await expectRoute(() => chat('flags', { messages: [{ role: 'user', content: [
    { type: 'text', text: 'what is this' },
    { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }] }] }), 'support-large', 'flags#2');
  await expectRoute(() => chat('flags', { response_format: { type: 'json_schema', json_schema: { name: 'a', schema: { type: 'object' } } } }),
    'support-large', 'flags#3');
  await expectRoute(() => chat('flags', { stream: true }), 'support-large', 'flags#4');
  await expectRoute(() => chat('flags', { response_format: { type: 'json_object' } }), 'support-small', 'flags#5');
  // tools: false in the first rule of 'support' sends a request with tools on.
  await expectRoute(() => chat('support', { tools }), 'support-small', 'support#4');
});

test('message counts and the input-token estimate', async () => {
  const three = [{ role: 'system', content: 's' }, { role: 'user', content: 'a' }, { role: 'user', content: 'b' }];
  await expectRoute(() => chat('sizes', { messages: three }), 'support-large', 'sizes#1');
  await expectRoute(() => chat('sizes', { messages: three.slice(1) }), 'support-small', 'sizes#3');
  await expectRoute(() => chat('sizes', { messages: [{ role: 'user', content: 'z'.repeat(4400) }] }), 'support-large', 'sizes#2');
  await expectRoute(() => chat('sizes', { messages: [{ role: 'user', content: 'z'.repeat(3000) }] }), 'support-small', 'sizes#3');
});

test('no rule holds: 400 no_route_selected, nothing sent upstream', async () => {
  const before_ = await counts();
  const res = await chat('strict');
  assert.equal(res.status, 400);
  assert.equal((await res.json()).error.code, 'no_route_selected');
  assert.equal(res.headers.get('x-bascule-route'), 'strict');
  assert.deepEqual(await counts(), before_);
  await expectRoute(() => chat('strict', { tools }), 'support-large', 'strict#1');
});

test('escalation: the selected route answers a contract failure from its fallback', async () => {
  await sim.setModel('sel-esc-small', { content: '{"answer": "forty-two"}' });
  await sim.setModel('sel-esc-large', { content: '{"answer": 42}' });
  const response_format = { type: 'json_schema', json_schema: { name: 'a', strict: true,
    schema: { type: 'object', properties: { answer: { type: 'integer' } }, required: ['answer'], additionalProperties: false } } };
  const res = await chat('escalate', { response_format });
  const body = await res.json();
  assert.equal(res.status, 200);
  assert.deepEqual(JSON.parse(body.choices[0].message.content), { answer: 42 });
  assert.equal(res.headers.get('x-bascule-route'), 'escalating');
  assert.equal(res.headers.get('x-bascule-target'), 'esc-large');
  assert.equal(res.headers.get('x-bascule-recovery-reason'), 'contract_failure');
  assert.equal(await sim.calls('sel-esc-small'), 1);
  assert.equal(await sim.calls('sel-esc-large'), 1);
});

test('/v1/messages (Anthropic) and /v1/responses select on the same facts', async () => {
  const long = 'w'.repeat(2000);
  await expectRoute(() => fetch(`${gw.base}/messages`, {
    method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: 'support', max_tokens: 50, messages: [{ role: 'user', content: `${long} chargeback!` }] }),
  }), 'support-large');
  await expectRoute(() => fetch(`${gw.base}/messages`, {
    method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: 'support', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] }),
  }), 'support-small');
  await expectRoute(() => fetch(`${gw.base}/responses`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'support', store: false, input: `${long} talk to legal`, metadata: { x: 'y' } }),
  }), 'support-large');
  await expectRoute(() => fetch(`${gw.base}/responses`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'support', store: false, input: long, metadata: { tier: 'premium' } }),
  }), 'support-large');
});

test('/v1/models lists select routes like the others', async () => {
  const body = await (await fetch(`${gw.base}/models`)).json();
  const ids = body.data.map((m) => m.id);
  for (const id of ['support', 'flags', 'support-small', 'escalate']) assert.ok(ids.includes(id), id);
  assert.equal((await fetch(`${gw.base}/models/support`)).status, 200);
});

test('--check-config: select errors with file:line:column', () => {
  const dir = mkdtempSync(join(tmpdir(), 'bascule-sel-'));
  const file = join(dir, 'bad.yaml');
  writeFileSync(file, `listen: "127.0.0.1:1"
providers:
  p: { kind: openai_compatible, base_url: "http://127.0.0.1:9/v1" }
targets:
  t: { provider: p, model: m }
routes:
  a: { primary: [t] }
  s:
    primary: [t]
    select:
      - if: { tools: true, colour: red }
        route: ghost
      - if: { last_user_matches: "(?i)(unclosed" }
        route: s
      - route: a
      - route: a
`);
  const r = spawnSync(bins.bascule, ['--check-config', file], { encoding: 'utf8' });
  assert.equal(r.status, 1);
  const at = (l, c, re) => assert.match(r.stderr, new RegExp(`bad\\.yaml:${l}:${c}: error: .*${re}`));
  at(9, 5, "'primary' in route 's': a route with 'select' has no tiers");
  at(11, 28, "unknown key 'colour'");
  at(12, 16, "unknown route 'ghost'");
  at(13, 34, "bad pattern: missing '\\)'");
  at(14, 16, "names route 's', which has 'select' itself");
  at(16, 9, 'rule 4 is never used: rule 3 has no condition');
});
