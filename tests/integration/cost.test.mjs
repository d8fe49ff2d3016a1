// SPDX-License-Identifier: MIT
// Costs that match the invoice (docs/configuration.md "Cost"): each dialect's real usage
// shape -- OpenAI cached tokens, Anthropic cache reads plus 5-minute and 1-hour cache writes
// (plain, and streamed as message_start + message_delta), Gemini cached content and thinking
// tokens, DeepSeek cache hits -- priced by the target's cache prices, with the same figure in
// x-bascule-cost-usd (a stream: its closing ": x-bascule-cost-usd: N" comment), the access
// line and bascule_cost_usd_total; translated usage that keeps the cache facts; and a budget
// that stops cache-heavy traffic at the request its real spend crosses it. The real bascule
// binary against bascule-sim, whose steps script the usage objects verbatim.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startSim, startGateway, waitFor } from '../lib/harness.mjs';

const KEY = 'cost-client-key-0123456789abcdef';
const OPEN = 'open-client-key-0123456789abcdef';
let sim, gw;

// OpenAI: 1,000 prompt tokens of which 900 cached, 200 completion (50 reasoning).
// $2.50 / $1.25 cached / $10 per Mtok: 100*2.5 + 900*1.25 + 200*10 = 3,375 -> $0.003375.
const OAI_USAGE = {
  prompt_tokens: 1000, completion_tokens: 200, total_tokens: 1200,
  prompt_tokens_details: { cached_tokens: 900, audio_tokens: 0 },
  completion_tokens_details: { reasoning_tokens: 50, audio_tokens: 0 },
};
const OAI_COST = '0.003375';

// Anthropic: 100 uncached input, 10,000 read from cache, 3,000 written (2,000 for 5 minutes,
// 1,000 for an hour), 500 output; $3 input, defaults 0.1x / 1.25x / 2x, $15 output:
// 100*3 + 10000*0.3 + 2000*3.75 + 1000*6 + 500*15 = 24,300 -> $0.0243.
const ANT_START = {
  input_tokens: 100, cache_read_input_tokens: 10000, cache_creation_input_tokens: 3000,
  cache_creation: { ephemeral_5m_input_tokens: 2000, ephemeral_1h_input_tokens: 1000 },
  output_tokens: 1,
};
const ANT_USAGE = { ...ANT_START, output_tokens: 500 };
const ANT_COST = '0.0243';

// Gemini: 2,000 prompt tokens (1,500 of them cached content), 300 candidates + 700 thoughts
// (billed as output, not in candidatesTokenCount); $1.25 / $0.125 cached / $10 output:
// 500*1.25 + 1500*0.125 + 1000*10 = 10,812.5 -> $0.0108125.
const GEM_USAGE = {
  promptTokenCount: 2000, candidatesTokenCount: 300, thoughtsTokenCount: 700,
  cachedContentTokenCount: 1500, totalTokenCount: 3000,
};
const GEM_COST = '0.0108125';

// DeepSeek: prompt = 800 cache hits + 200 misses, 100 completion; $0.27 / $0.07 hit / $1.10:
// 200*0.27 + 800*0.07 + 100*1.1 = 220 -> $0.00022.
const DEEP_USAGE = {
  prompt_tokens: 1000, completion_tokens: 100, total_tokens: 1100,
  prompt_cache_hit_tokens: 800, prompt_cache_miss_tokens: 200,
};
const DEEP_COST = '0.00022';

const config = (simUrl) => `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: info, format: json }
providers:
  oai: { kind: openai, base_url: "${simUrl}/v1", keys: ["sk-oai"], health: { probe: none } }
  ant: { kind: anthropic, base_url: "${simUrl}/anthropic/v1", keys: ["sk-ant"], health: { probe: none } }
  gem: { kind: gemini, base_url: "${simUrl}/v1beta", keys: ["AIza-cost"], health: { probe: none } }
  deep: { kind: openai_compatible, base_url: "${simUrl}/v1", keys: ["sk-deep"], health: { probe: none } }
targets:
  oai-t:
    provider: oai
    model: cost-oai
    price: { input_per_mtok: 2.5, output_per_mtok: 10, cached_input_per_mtok: 1.25 }
  ant-t: { provider: ant, model: cost-ant, price: { input_per_mtok: 3, output_per_mtok: 15 } }
  ant-s: { provider: ant, model: cost-ant-s, price: { input_per_mtok: 3, output_per_mtok: 15 } }
  ant-b: { provider: ant, model: cost-ant-b, price: { input_per_mtok: 3, output_per_mtok: 15 } }
  gem-t:
    provider: gem
    model: cost-gem
    price: { input_per_mtok: 1.25, output_per_mtok: 10, cached_input_per_mtok: 0.125 }
  deep-t:
    provider: deep
    model: cost-deep
    price: { input_per_mtok: 0.27, output_per_mtok: 1.10, cached_input_per_mtok: 0.07 }
routes:
  oai: { primary: [oai-t] }
  ant: { primary: [ant-t] }
  ant-s: { primary: [ant-s] }
  ant-b: { primary: [ant-b] }
  gem: { primary: [gem-t] }
  deep: { primary: [deep-t] }
clients:
  cachy:
    key: "\${TEST_COST_KEY}"
    routes: [ant-b]
    budget: { usd: 0.07, period: day }
  open: { key: "\${TEST_OPEN_KEY}", routes: ["*"] }
`;

const usageSpec = (usage, usageStart) => ({
  script: [{ action: 'ok', usage, ...(usageStart ? { usage_start: usageStart } : {}) }],
  repeat: true,
});

before(async () => {
  sim = await startSim();
  await sim.setModel('cost-oai', usageSpec(OAI_USAGE));
  await sim.setModel('cost-ant', usageSpec(ANT_USAGE));
  await sim.setModel('cost-ant-s', usageSpec({ output_tokens: 500 }, ANT_START));
  await sim.setModel('cost-ant-b', usageSpec(ANT_USAGE));
  await sim.setModel('cost-gem', usageSpec(GEM_USAGE));
  await sim.setModel('cost-deep', usageSpec(DEEP_USAGE));
  gw = await startGateway({ config: config(sim.url), env: { TEST_COST_KEY: KEY, TEST_OPEN_KEY: OPEN } });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

const post = (path, body, key = OPEN) =>
  fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  });

const chat = (route, stream = false, key) =>
  post('/v1/chat/completions', {
    model: route,
    messages: [{ role: 'user', content: 'hi' }],
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
  }, key);

const messages = (route, stream = false) =>
  post('/v1/messages', {
    model: route, max_tokens: 64, messages: [{ role: 'user', content: 'hi' }], ...(stream ? { stream: true } : {}),
  });

// bascule_cost_usd_total of <route> (client <client>, target <target>): 0 when not there yet.
async function costTotal(route, target, client = 'open') {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const m = text.match(new RegExp(`\\nbascule_cost_usd_total\\{client="${client}",route="${route}",target="${target}"\\} (\\S+)\\n`));
  return m ? Number(m[1]) : 0;
}

async function tokens(route, direction) {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const m = text.match(new RegExp(`\\nbascule_tokens_total\\{route="${route}",direction="${direction}"\\} (\\S+)\\n`));
  return m ? Number(m[1]) : 0;
}

// The SSE events of a stream body: [{event, data}] (data parsed when JSON), and its comments.
function sse(text) {
  const events = [];
  const comments = [];
  for (const block of text.split('\n\n')) {
    let event = '';
    const data = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) comments.push(line.slice(1).trim());
      else if (line.startsWith('event:')) event = line.slice(6).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).trim());
    }
    if (!data.length) continue;
    const d = data.join('\n');
    let parsed = d;
    try { parsed = JSON.parse(d); } catch { /* [DONE] */ }
    events.push({ event, data: parsed });
  }
  return { events, comments };
}

// One request through <route>: its cost in the answer, the access line and the counter.
async function expectCost(route, target, want, { stream = false, dialect = 'openai', parts } = {}) {
  const before = await costTotal(route, target);
  const seen = gw.accessLog().length;
  const res = dialect === 'openai' ? await chat(route, stream) : await messages(route, stream);
  assert.equal(res.status, 200);
  const text = await res.text();
  let body;
  if (stream) {
    assert.equal(res.headers.get('x-bascule-cost-usd'), null, 'a stream cannot know its cost at its head');
    body = sse(text);
    assert.deepEqual(body.comments.filter((c) => c.startsWith('x-bascule-cost-usd')),
      [`x-bascule-cost-usd: ${want}`], 'the closing cost comment');
  } else {
    assert.equal(res.headers.get('x-bascule-cost-usd'), want);
    body = JSON.parse(text);
  }
  const line = await waitFor(() => gw.accessLog().slice(seen).find((l) => l.route === route && 'cost_usd' in l), {
    what: `the access line of ${route}`,
  });
  assert.equal(line.cost_usd.toFixed(8), Number(want).toFixed(8));
  if (parts) for (const [k, v] of Object.entries(parts)) assert.equal(line[k], v, k);
  const after = await waitFor(async () => {
    const v = await costTotal(route, target);
    return v !== before ? v : null;
  }, { what: 'the cost counter' });
  assert.ok(Math.abs(after - before - Number(want)) < 1e-12, `counter delta ${after - before} != ${want}`);
  return body;
}

test('OpenAI cached tokens are priced at cached_input_per_mtok, plain and streamed', async () => {
  const body = await expectCost('oai', 'oai-t', OAI_COST, {
    parts: { input_tokens: 1000, output_tokens: 200, cached_input_tokens: 900, reasoning_tokens: 50 },
  });
  assert.deepEqual(body.usage.prompt_tokens_details, OAI_USAGE.prompt_tokens_details);
  const s = await expectCost('oai', 'oai-t', OAI_COST, { stream: true });
  const last = s.events.filter((e) => e.data && e.data.usage).pop();
  assert.equal(last.data.usage.prompt_tokens_details.cached_tokens, 900);
  assert.ok((await tokens('oai', 'cached_input')) >= 1800);
  assert.ok((await tokens('oai', 'reasoning')) >= 100);
});

test('Anthropic cache reads and 5-minute and 1-hour writes, plain and streamed (message_start + message_delta)', async () => {
  const body = await expectCost('ant', 'ant-t', ANT_COST, {
    parts: { input_tokens: 13100, output_tokens: 500, cached_input_tokens: 10000, cache_write_tokens: 3000 },
  });
  // An OpenAI client sees every prompt token, the cache reads as cached_tokens.
  assert.equal(body.usage.prompt_tokens, 13100);
  assert.equal(body.usage.prompt_tokens_details.cached_tokens, 10000);
  assert.equal(body.usage.completion_tokens, 500);
  const s = await expectCost('ant-s', 'ant-s', ANT_COST, { stream: true });
  const last = s.events.filter((e) => e.data && e.data.usage).pop();
  assert.equal(last.data.usage.prompt_tokens, 13100);
  assert.equal(last.data.usage.prompt_tokens_details.cached_tokens, 10000);
  assert.equal(last.data.usage.completion_tokens, 500);
  // An Anthropic client gets the upstream's own usage (its bytes pass through), same cost.
  const native = await expectCost('ant', 'ant-t', ANT_COST, { dialect: 'anthropic' });
  assert.deepEqual(native.usage, ANT_USAGE);
  const ns = await expectCost('ant-s', 'ant-s', ANT_COST, { dialect: 'anthropic', stream: true });
  assert.deepEqual(ns.events.find((e) => e.event === 'message_start').data.message.usage, ANT_START);
  assert.ok((await tokens('ant', 'cache_write')) >= 3000);
  assert.ok((await tokens('ant-s', 'cache_write')) >= 3000);
});

test('Gemini cached content and thinking tokens, plain and streamed', async () => {
  const body = await expectCost('gem', 'gem-t', GEM_COST);
  assert.equal(body.usage.prompt_tokens, 2000);
  assert.equal(body.usage.completion_tokens, 1000);
  assert.equal(body.usage.prompt_tokens_details.cached_tokens, 1500);
  await expectCost('gem', 'gem-t', GEM_COST, { stream: true });
  assert.ok((await tokens('gem', 'reasoning')) >= 1400);
});

test('DeepSeek cache hits, plain and streamed', async () => {
  await expectCost('deep', 'deep-t', DEEP_COST);
  await expectCost('deep', 'deep-t', DEEP_COST, { stream: true });
  assert.ok((await tokens('deep', 'cached_input')) >= 1600);
});

test('an Anthropic client keeps the cache facts of other dialects, and message_start has no estimate', async () => {
  // OpenAI target: cache_read_input_tokens, input_tokens without them; same cost.
  const plain = await expectCost('oai', 'oai-t', OAI_COST, { dialect: 'anthropic' });
  assert.equal(plain.usage.input_tokens, 100);
  assert.equal(plain.usage.cache_read_input_tokens, 900);
  // Streamed from OpenAI: the prompt count comes only at the end, so message_start says 0
  // (never an estimate a client would take for the real count); message_delta has it.
  const s = await expectCost('oai', 'oai-t', OAI_COST, { dialect: 'anthropic', stream: true });
  const start = s.events.find((e) => e.event === 'message_start').data.message.usage;
  assert.equal(start.input_tokens, 0);
  assert.equal(start.cache_read_input_tokens, 0);
  const delta = s.events.find((e) => e.event === 'message_delta').data.usage;
  assert.equal(delta.input_tokens, 100);
  assert.equal(delta.cache_read_input_tokens, 900);
  // Streamed from Gemini: its usageMetadata rides on the first event, so message_start
  // carries the real count, split the Anthropic way.
  const g = await expectCost('gem', 'gem-t', GEM_COST, { dialect: 'anthropic', stream: true });
  const gstart = g.events.find((e) => e.event === 'message_start').data.message.usage;
  assert.equal(gstart.input_tokens, 500);
  assert.equal(gstart.cache_read_input_tokens, 1500);
});

test('a budget stops cache-heavy traffic at the request its real spend crosses', async () => {
  // $0.0243 a request against $0.07: the third crosses it ($0.0729), the fourth is refused.
  // Priced at the full input price ($0.0468) the third would already be refused.
  const calls = await sim.calls('cost-ant-b');
  for (let i = 1; i <= 3; i++) {
    const res = await chat('ant-b', false, KEY);
    assert.equal(res.status, 200, `request ${i}`);
    assert.equal(res.headers.get('x-bascule-cost-usd'), ANT_COST);
    await res.arrayBuffer();
  }
  const res = await chat('ant-b', false, KEY);
  assert.equal(res.status, 429);
  assert.equal(res.headers.get('x-bascule-limited-by'), 'budget');
  assert.equal((await res.json()).error.code, 'budget_exceeded');
  assert.equal(await sim.calls('cost-ant-b'), calls + 3, 'no upstream call once the budget is spent');
  assert.ok(Math.abs((await costTotal('ant-b', 'ant-b', 'cachy')) - 0.0729) < 1e-12);
});
