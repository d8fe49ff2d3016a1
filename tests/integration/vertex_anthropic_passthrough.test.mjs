// Claude on Vertex speaks Anthropic Messages: an Anthropic client (POST /v1/messages) on a
// vertex target serving a claude-* model has its own bytes forwarded to :rawPredict /
// :streamRawPredict with only "model" replaced, in place, by "anthropic_version":
// "vertex-2023-10-16", and Vertex's answer and events (Anthropic's own format) come back as
// they came -- as for a kind: anthropic target. Fields a translation through the OpenAI shape
// would drop, rename or refuse (top_k, metadata, thinking, cache_control on system and
// message blocks, tool cache_control) arrive unchanged; scripted usage members and the ping
// event reach the client; cost counts the cache tokens; errors are still the gateway's own
// (normalized); failover from Anthropic to Vertex keeps the pass-through; an OpenAI client
// on the same target and Gemini on Vertex are still translated.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import http from 'node:http';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startSim, startGateway, readStream, waitFor } from '../lib/harness.mjs';
import { writeTokenFile } from '../lib/vertex_sa.mjs';

const CAPS = 'capabilities: [text, streaming, tools, json_schema, vision]';
const PRICE = 'price: { input_per_mtok: 3, output_per_mtok: 15 }';
const VERSION = 'vertex-2023-10-16';
const PREFIX = '/v1/projects/sim-project/locations/us-east5/publishers/anthropic/models/';
let sim, gw, anthropic, openai, raw;

// A Vertex of our own for byte-exact checks: it records the raw request and answers with
// bytes no translator would write (blanks, an escape, a member Anthropic may add one day).
const RAW_ANSWER = '{ "id" : "msg_raw_1", "type":"message", "role":"assistant", "model":"claude-raw@1",\n' +
  '  "content":[{"type":"text","text":"caf\\u00e9 \u2713"}], "stop_reason":"end_turn", "stop_sequence":null,\n' +
  '  "usage":{"input_tokens":7,"output_tokens":3}, "x_vertex_extra":{"a":[1, 2.50]} }';

function startRawVertex() {
  const seen = [];
  const server = http.createServer((req, res) => {
    const parts = [];
    req.on('data', (c) => parts.push(c));
    req.on('end', () => {
      seen.push({ url: req.url, headers: req.headers, body: Buffer.concat(parts).toString('utf8') });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(RAW_ANSWER);
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, seen, port: server.address().port })));
}

function config(simUrl, rawPort) {
  const token = writeTokenFile('ya29.sim-static-token');
  const vx = `kind: vertex, project: sim-project, region: us-east5, base_url: "${simUrl}/v1", vertex: { token_file: "${token}" }, health: { probe: none }`;
  return `listen: "127.0.0.1:{{PORT}}"
workers: 1
log: { level: info, format: json }
retry:
  backoff: { base_ms: 10, max_ms: 50, jitter: 0.1 }
providers:
  vx: { ${vx} }
  vx-raw: { kind: vertex, project: p, region: r, base_url: "http://127.0.0.1:${rawPort}/v1", vertex: { token_file: "${token}" }, health: { probe: none } }
  ant: { kind: anthropic, base_url: "${simUrl}/anthropic/v1", keys: ["sk-ant-1"], health: { probe: none } }
targets:
  vc: { provider: vx, model: "claude-pass@1", ${CAPS}, ${PRICE} }
  vc-s: { provider: vx, model: "claude-stream@1", ${CAPS}, ${PRICE} }
  vc-oai: { provider: vx, model: "claude-both@1", ${CAPS} }
  vc-err: { provider: vx, model: "claude-err@1", ${CAPS} }
  a-first: { provider: ant, model: claude-first, ${CAPS} }
  vc-after: { provider: vx, model: "claude-after@1", ${CAPS} }
  vc-early: { provider: vx, model: "claude-early@1", ${CAPS} }
  vc-spare: { provider: vx, model: "claude-spare@1", ${CAPS} }
  vc-late: { provider: vx, model: "claude-late@1", ${CAPS} }
  vc-count: { provider: vx, model: "claude-count@1", ${CAPS} }
  a-count: { provider: ant, model: claude-count, ${CAPS} }
  gem: { provider: vx, model: gemini-2.5-flash, ${CAPS} }
  vc-raw: { provider: vx-raw, model: "claude-raw@1", ${CAPS} }
  vc-cont: { provider: vx, model: "claude-cont@1", capabilities: [text, streaming, prefill] }
routes:
  cont: { primary: [vc-cont], envelope: { on_stream_failure: continue, deadline_ms: 20000 } }
  vc: { primary: [vc] }
  vcs: { primary: [vc-s] }
  both: { primary: [vc-oai] }
  err: { primary: [vc-err], envelope: { max_attempts: 1 } }
  failover: { primary: [a-first], equivalent: [vc-after], envelope: { max_same_target_attempts: 1 } }
  early: { primary: [vc-early], equivalent: [vc-spare], envelope: { max_same_target_attempts: 1 } }
  late: { primary: [vc-late], envelope: { max_same_target_attempts: 1 } }
  count:
    primary: [vc-count]
    fallback: [a-count]
    envelope: { max_same_target_attempts: 1, allow_cross_model_fallback: true }
  vcount: { primary: [vc-count] }
  gem: { primary: [gem] }
  raw: { primary: [vc-raw] }
`;
}

before(async () => {
  sim = await startSim();
  raw = await startRawVertex();
  gw = await startGateway({ config: config(sim.url, raw.port) });
  anthropic = new Anthropic({ baseURL: gw.url, apiKey: 'client-key', maxRetries: 0 });
  openai = new OpenAI({ baseURL: gw.base, apiKey: 'client-key', maxRetries: 0 });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
  await new Promise((resolve) => (raw ? raw.server.close(resolve) : resolve()));
});

function post(path, body, headers = {}) {
  return fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

function events(text) {
  return text.split('\n\n').filter((f) => f.startsWith('event: ')).map((f) => {
    const [ev, data] = f.split('\n');
    return { name: ev.slice(7), data: JSON.parse(data.slice(6)) };
  });
}

// What the client's body becomes upstream: "model" swapped in place for anthropic_version.
function upstreamOf(body) {
  const out = {};
  for (const [k, v] of Object.entries(body)) {
    if (k === 'model') out.anthropic_version = VERSION;
    else out[k] = v;
  }
  return out;
}

// Fields a translation through the OpenAI shape drops (cache_control, system blocks),
// renames (metadata.user_id -> user) or refuses (top_k, thinking).
const RICH = {
  model: 'vc',
  max_tokens: 64,
  top_k: 5,
  temperature: 0.5,
  metadata: { user_id: 'user-42' },
  thinking: { type: 'enabled', budget_tokens: 1024 },
  stop_sequences: ['END'],
  system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral', ttl: '1h' } }],
  tools: [{
    name: 'get_weather', description: 'The weather.',
    input_schema: { type: 'object', properties: { city: { type: 'string' } } },
    cache_control: { type: 'ephemeral' },
  }],
  tool_choice: { type: 'none' },
  messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi héllo 🚀', cache_control: { type: 'ephemeral' } }] }],
};

// Anthropic's usage with members no translation writes (service_tier, the cache_creation
// split): 100 + 10000 read + 3000 written (2000 at 5 min, 1000 at 1 h), 500 out.
const USAGE = {
  input_tokens: 100, cache_read_input_tokens: 10000, cache_creation_input_tokens: 3000,
  cache_creation: { ephemeral_5m_input_tokens: 2000, ephemeral_1h_input_tokens: 1000 },
  output_tokens: 500, service_tier: 'standard',
};
// 100 x 3 + 10000 x 0.3 + 2000 x 3.75 + 1000 x 6 + 500 x 15, per million tokens.
const COST = '0.0243';

async function requestLine(res) {
  const id = res.headers.get('x-request-id');
  return waitFor(() => gw.accessLog().find((l) => l.request_id === id && 'cost_usd' in l),
    { timeoutMs: 3000, what: 'the access line' });
}

test('plain: the client body reaches rawPredict unchanged but for model -> anthropic_version; the answer comes back as sent', async () => {
  await sim.setModel('claude-pass@1', { script: [{ action: 'ok', usage: USAGE }], repeat: true });
  const res = await post('/v1/messages', RICH, { 'anthropic-beta': 'context-1m-2025-08-07' });
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  const seen = await sim.lastRequest('claude-pass@1');
  assert.equal(seen.path, `${PREFIX}claude-pass@1:rawPredict`);
  assert.equal(seen.headers.authorization, 'Bearer ya29.sim-static-token');
  assert.equal(seen.headers['anthropic-beta'], 'context-1m-2025-08-07');
  assert.equal(seen.headers['x-api-key'], undefined);
  assert.equal(seen.body.model, undefined);
  assert.equal(seen.body.anthropic_version, VERSION);
  assert.deepEqual(seen.body, upstreamOf(RICH));
  // In place: the members keep their order, anthropic_version where model was.
  assert.deepEqual(Object.keys(seen.body), Object.keys(upstreamOf(RICH)));
  // The answer is Vertex's message as it came: its id, its usage whole.
  assert.equal(body.type, 'message');
  assert.match(body.id, /^msg_sim_\d+$/);
  assert.deepEqual(body.usage, USAGE);
  assert.ok('stop_sequence' in body);
  assert.equal(res.headers.get('x-bascule-cost-usd'), COST);
  const line = await requestLine(res);
  assert.equal(line.cost_usd.toFixed(8), Number(COST).toFixed(8));
  assert.equal(line.input_tokens, 13100);
  assert.equal(line.cached_input_tokens, 10000);
  assert.equal(line.cache_write_tokens, 3000);
  assert.equal(line.output_tokens, 500);
});

test('byte for byte: the client body with only its model member replaced goes up; the answer comes back as it came', async () => {
  // "m\u006fdel" is model; blanks, escapes and the number's spelling stay as written. Only
  // fields a translation carries: the old translating path answered 200 here, re-written.
  const body = '{ "max_tokens" : 16,\n  "m\\u006fdel" :\t"raw" , "temperature":0.50,\n' +
    ' "messages":[{"role":"user","content":"caf\\u00e9"}] }';
  const res = await post('/v1/messages', body);
  const text = await res.text();
  assert.equal(res.status, 200, text);
  assert.equal(text, RAW_ANSWER);
  const up = raw.seen.at(-1);
  assert.equal(up.url, '/v1/projects/p/locations/r/publishers/anthropic/models/claude-raw@1:rawPredict');
  assert.equal(up.body, body.replace('"m\\u006fdel" :\t"raw"', `"anthropic_version":"${VERSION}"`));
  assert.equal(up.headers.authorization, 'Bearer ya29.sim-static-token');
  // The gateway owns anthropic_version: a client body with its own is refused for Vertex
  // (a contract failure, no upstream call), never sent with the member twice.
  const n = raw.seen.length;
  const twice = await post('/v1/messages', { model: 'raw', anthropic_version: 'x', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] });
  const err = await twice.json();
  assert.equal(twice.status, 502, JSON.stringify(err));
  assert.equal(err.reason, 'contract_failure');
  assert.match(err.error.message, /anthropic_version: the gateway sets it for Vertex/);
  assert.equal(raw.seen.length, n);
});

test('stream with @anthropic-ai/sdk: streamRawPredict, the events as Vertex sent them', async () => {
  const start = { ...USAGE, output_tokens: 1 };
  await sim.setModel('claude-stream@1', {
    script: [{ action: 'ok', usage_start: start, usage: { output_tokens: 500 } }], repeat: true,
  });
  const req = { ...RICH, model: 'vcs', tool_choice: undefined, tools: undefined };
  const stream = anthropic.messages.stream(req);
  const seenEvents = [];
  let text = '';
  for await (const ev of stream) {
    seenEvents.push(structuredClone(ev)); // the SDK updates its snapshot in place
    if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') text += ev.delta.text;
  }
  const final = await stream.finalMessage();
  assert.equal(text, 'Hello héllo wörld! This is bascule-sim ✓ streaming 🚀 tokens');
  assert.equal(seenEvents[0].type, 'message_start');
  // message_start's usage is Vertex's own, members no translation writes included.
  assert.deepEqual(seenEvents[0].message.usage, start);
  assert.match(final.id, /^msg_sim_\d+$/);
  assert.equal(final.usage.output_tokens, 500);
  assert.equal(final.usage.cache_read_input_tokens, 10000);
  const seen = await sim.lastRequest('claude-stream@1');
  assert.equal(seen.path, `${PREFIX}claude-stream@1:streamRawPredict`);
  const { model, tool_choice, tools, ...rest } = req;
  assert.deepEqual(seen.body, { anthropic_version: VERSION, ...rest, stream: true });
});

test('stream, raw: the ping event passes, no carrier frame leaks, the cost counts the cache tokens', async () => {
  // Only fields a translation carries: the translating path streamed this too, without ping.
  const res = await post('/v1/messages', {
    model: 'vcs', max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'Hi' }],
  });
  assert.equal(res.status, 200);
  const { text } = await readStream(res);
  const evs = events(text);
  const names = evs.map((e) => e.name);
  assert.equal(names[0], 'message_start');
  assert.ok(names.includes('ping'), 'the upstream ping passes too');
  assert.equal(names.at(-1), 'message_stop');
  for (const e of evs) assert.equal(e.data.type, e.name);
  assert.ok(!text.includes('bascule_'), 'no carrier frame reaches the client');
  assert.ok(text.includes(`: x-bascule-cost-usd: ${COST}\n\n`), 'the closing cost comment');
  const line = await requestLine(res);
  assert.equal(line.cached_input_tokens, 10000);
  assert.equal(line.cache_write_tokens, 3000);
});

test('one target, two clients: the Anthropic one passes through, the OpenAI one is translated', async () => {
  const system = [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }];
  const msg = await anthropic.messages.create({
    model: 'both', max_tokens: 32, top_k: 4, system, messages: [{ role: 'user', content: 'hi' }],
  });
  assert.equal(msg.type, 'message');
  let seen = await sim.lastRequest('claude-both@1');
  assert.deepEqual(seen.body, {
    max_tokens: 32, top_k: 4, system, messages: [{ role: 'user', content: 'hi' }], anthropic_version: VERSION,
  });
  const chat = await openai.chat.completions.create({
    model: 'both', max_tokens: 32, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hello' }],
  });
  assert.equal(chat.object, 'chat.completion');
  assert.equal(chat.choices[0].message.content, 'Hello héllo wörld! This is bascule-sim ✓ streaming 🚀 tokens');
  assert.ok(chat.usage.prompt_tokens > 0);
  seen = await sim.lastRequest('claude-both@1');
  assert.equal(seen.path, `${PREFIX}claude-both@1:rawPredict`);
  assert.equal(seen.body.model, undefined);
  assert.equal(seen.body.anthropic_version, VERSION);
  assert.equal(seen.body.system, 'Be brief.', 'translated: the system message becomes the system string');
  assert.deepEqual(seen.body.messages, [{ role: 'user', content: [{ type: 'text', text: 'hello' }] }]);
});

test('errors stay the gateway\'s own, in Anthropic\'s shape: Google\'s RESOURCE_EXHAUSTED and Anthropic\'s overloaded_error', async () => {
  await sim.setModel('claude-err@1', {
    script: [
      { action: 'status', status: 429, error_type: 'RESOURCE_EXHAUSTED', message: 'Quota exceeded' },
      { action: 'status', status: 529, error_type: 'overloaded_error', message: 'Overloaded' },
    ],
  });
  const req = { model: 'err', max_tokens: 16, top_k: 3, messages: [{ role: 'user', content: 'hi' }] };
  const first = await post('/v1/messages', req);
  const a = await first.json();
  assert.equal(first.status, 429, JSON.stringify(a));
  assert.equal(a.type, 'error');
  assert.equal(a.error.type, 'rate_limit_error');
  assert.match(a.request_id, /^req_/);
  const second = await post('/v1/messages', req);
  const b = await second.json();
  assert.equal(b.type, 'error');
  assert.equal(b.error.type, 'overloaded_error', JSON.stringify(b));
  assert.match(b.request_id, /^req_/);
  assert.equal(await sim.calls('claude-err@1'), 2, 'each reached Vertex once');
});

test('failover from Claude on Anthropic to Claude on Vertex keeps the pass-through', async () => {
  await sim.setModel('claude-first', { script: [{ action: 'status', status: 529 }] });
  const req = { ...RICH, model: 'failover' };
  const res = await post('/v1/messages', req);
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  assert.equal(res.headers.get('x-bascule-target'), 'vc-after');
  assert.equal(res.headers.get('x-bascule-attempts'), '2');
  assert.equal(await sim.calls('claude-first'), 1);
  assert.equal(await sim.calls('claude-after@1'), 1);
  assert.deepEqual((await sim.lastRequest('claude-first')).body, { ...req, model: 'claude-first' });
  assert.deepEqual((await sim.lastRequest('claude-after@1')).body, upstreamOf(req));
  assert.match(body.id, /^msg_sim_\d+$/);
});

test('stream: an error event before any content fails over invisibly; after content ends the stream', async () => {
  await sim.setModel('claude-early@1', {
    script: [{ action: 'error_200', after_events: 3, error_type: 'overloaded_error', message: 'Overloaded' }],
  });
  const req = { model: 'early', max_tokens: 20, top_k: 2, stream: true, messages: [{ role: 'user', content: 'Hello' }] };
  let res = await post('/v1/messages', req);
  let evs = events((await readStream(res)).text);
  assert.equal(res.headers.get('x-bascule-target'), 'vc-spare');
  assert.equal(evs.filter((e) => e.name === 'message_start').length, 1);
  assert.equal(evs[0].data.message.model, 'claude-spare@1');
  assert.ok(evs.some((e) => e.name === 'ping'));
  assert.equal(evs.at(-1).name, 'message_stop');
  assert.ok(!evs.some((e) => e.name === 'error'));
  assert.equal((await sim.lastRequest('claude-spare@1')).body.top_k, 2);

  await sim.setModel('claude-late@1', {
    script: [{ action: 'error_200', after_events: 4, error_type: 'overloaded_error', message: 'Overloaded' }],
  });
  res = await post('/v1/messages', { ...req, model: 'late' });
  evs = events((await readStream(res)).text);
  assert.deepEqual(evs.map((e) => e.name),
    ['message_start', 'content_block_start', 'ping', 'content_block_delta', 'error']);
  assert.equal(evs.at(-1).data.error.type, 'api_error');
  assert.match(evs.at(-1).data.request_id, /^req_/);
});

test('a cut pass-through stream on Claude on Vertex goes on by prefill, in the client\'s own events', async () => {
  await sim.setModel('claude-cont@1', { tokens: 60 });
  const whole = await anthropic.messages.create({ model: 'cont', max_tokens: 500, messages: [{ role: 'user', content: 'x' }] });
  const wholeText = whole.content[0].text;
  await sim.setModel('claude-cont@1', { tokens: 60, script: [{ action: 'cut', after_events: 43 }] });
  const before = (await sim.stats()).models['claude-cont@1'].calls;
  const res = await post('/v1/messages', { model: 'cont', max_tokens: 500, stream: true, messages: [{ role: 'user', content: 'x' }] });
  const { text, broken } = await readStream(res);
  assert.equal(broken, false, text.slice(-400));
  const evs = events(text);
  assert.equal(evs.filter((e) => e.name === 'message_start').length, 1);
  assert.equal(evs.at(-1).name, 'message_stop');
  assert.ok(!evs.some((e) => e.name === 'error'));
  const said = evs.filter((e) => e.name === 'content_block_delta').map((e) => e.data.delta.text).join('');
  assert.equal(said, wholeText);
  assert.ok(text.includes(': bascule continued on vc-cont by prefill'), text.slice(-600));
  assert.equal((await sim.stats()).models['claude-cont@1'].calls, before + 2);
  const second = (await sim.lastRequest('claude-cont@1')).body;
  assert.equal(second.anthropic_version, VERSION);
  assert.equal(second.model, undefined);
  assert.equal(second.messages.at(-1).role, 'assistant');
  assert.ok(wholeText.startsWith(second.messages.at(-1).content));
});

test('count_tokens: Claude on Vertex does not count (the anthropic target does); alone, the gateway estimates', async () => {
  const req = { model: 'count', messages: [{ role: 'user', content: 'count me' }] };
  const res = await post('/v1/messages/count_tokens', req);
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  assert.equal(typeof body.input_tokens, 'number');
  assert.equal(res.headers.get('x-bascule-target'), 'a-count');
  assert.equal(await sim.calls('claude-count@1'), 0);
  assert.equal((await sim.lastRequest('claude-count')).path, '/anthropic/v1/messages/count_tokens');
  const alone = await post('/v1/messages/count_tokens', { ...req, model: 'vcount' });
  assert.equal(alone.headers.get('x-bascule-token-count'), 'estimate');
  await alone.arrayBuffer();
  assert.equal(await sim.calls('claude-count@1'), 0);
});

test('Gemini on Vertex does not speak Anthropic: translated, and top_k is refused', async () => {
  const ok = await anthropic.messages.create({ model: 'gem', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] });
  assert.equal(ok.type, 'message');
  const seen = await sim.lastRequest('gemini-2.5-flash');
  assert.ok(seen.path.endsWith('/publishers/google/models/gemini-2.5-flash:generateContent'));
  assert.ok(Array.isArray(seen.body.contents));
  const res = await post('/v1/messages', { model: 'gem', max_tokens: 16, top_k: 3, messages: [{ role: 'user', content: 'hi' }] });
  const body = await res.json();
  assert.equal(res.status, 400);
  assert.match(body.error.message, /^top_k: not supported by the targets of this route/);
});
