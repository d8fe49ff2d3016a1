// The bedrock provider kind end to end: the official openai and @anthropic-ai/sdk clients ->
// bascule -> bascule-sim's Bedrock dialect (Converse and ConverseStream). The sim verifies
// every request's SigV4 signature against its test credential, so a signing bug fails these
// tests. Plain, streamed (the AWS event-stream framing), tools with a full round trip,
// structured output, images, usage with cache reads and writes; Bedrock's exceptions in the
// taxonomy (HTTP ThrottlingException -> rate_limited, a wrong secret -> auth), a throttling
// exception inside ConverseStream before any content (failed over) and after it (the
// client's stream ends with an error); Claude on Anthropic failing over to Claude on Bedrock
// as its equivalent tier, with exact call counts.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startSim, startGateway, waitFor } from '../lib/harness.mjs';

let sim, gw, client, anthropic;

const TEXT = 'Hello héllo wörld! This is bascule-sim ✓ streaming 🚀 tokens';
const CAPS = '[text, vision, streaming, tools, json_schema, json_object]';
const KEY_ID = 'AKIDSIMEXAMPLE';
const SECRET = 'sim/Secret+Access/KeyEXAMPLE';
const M = 'anthropic.claude-sonnet-4-5-20250929-v1:0';

function config(simUrl) {
  const aws = (secret, extra = '') =>
    `{ access_key_id: ${KEY_ID}, secret_access_key: "${secret}"${extra} }`;
  const br = (secret, extra) =>
    `kind: bedrock, region: us-west-2, base_url: "${simUrl}", aws: ${aws(secret, extra)}, health: { probe: none }`;
  return `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: info, format: json }
retry:
  backoff: { base_ms: 20, max_ms: 100, jitter: 0.1 }
providers:
  br-a: { ${br(SECRET)} }
  br-b: { ${br(SECRET)} }
  br-c: { ${br(SECRET)} }
  br-d: { ${br(SECRET)} }
  br-tmp: { ${br(SECRET, ', session_token: sim-session-token')} }
  br-wrong: { ${br('not-the-secret')} }
  br-probed: { kind: bedrock, region: us-west-2, base_url: "${simUrl}", aws: ${aws(SECRET)}, health: { probe: completion, interval_ms: 150 } }
  anth: { kind: anthropic, base_url: "${simUrl}/anthropic/v1", keys: ["sk-ant-1"], health: { probe: none } }
targets:
  plain: { provider: br-a, model: "${M}", capabilities: ${CAPS} }
  tmp: { provider: br-tmp, model: br-tmp-model, capabilities: ${CAPS} }
  wrong: { provider: br-wrong, model: br-wrong-model, capabilities: ${CAPS} }
  wrong-e: { provider: br-b, model: br-wrong-e-model, capabilities: ${CAPS} }
  thr-p: { provider: br-c, model: br-thr-p, capabilities: ${CAPS} }
  thr-e: { provider: br-d, model: br-thr-e, capabilities: ${CAPS} }
  probed: { provider: br-probed, model: br-probed-model, capabilities: ${CAPS} }
  claude-anth: { provider: anth, model: claude-sonnet-4-5, capabilities: ${CAPS} }
  claude-br: { provider: br-b, model: "us.anthropic.claude-sonnet-4-5-v1:0", capabilities: ${CAPS} }
routes:
  plain: { primary: [plain] }
  probed: { primary: [probed] }
  tmp: { primary: [tmp] }
  wrong: { primary: [wrong], equivalent: [wrong-e] }
  wrong-only: { primary: [wrong] }
  thr: { primary: [thr-p], equivalent: [thr-e], envelope: { max_same_target_attempts: 1 } }
  claude:
    primary: [claude-anth]
    equivalent: [claude-br]
    envelope: { deadline_ms: 10000, max_same_target_attempts: 1 }
`;
}

before(async () => {
  sim = await startSim();
  gw = await startGateway({ config: config(sim.url) });
  client = new OpenAI({ baseURL: gw.base, apiKey: 'client-key', maxRetries: 0 });
  anthropic = new Anthropic({ baseURL: gw.url, apiKey: 'client-key', maxRetries: 0 });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

async function attempts(res, n = 1) {
  const id = res.headers.get('x-request-id');
  const lines = () => gw.accessLog().filter((l) => l.type === 'attempt' && l.request_id === id);
  await waitFor(() => lines().length >= n, { timeoutMs: 3000, what: `${n} attempt line(s)` });
  return lines();
}

const bodyOf = (r) => (typeof r.body === 'string' ? JSON.parse(r.body) : r.body);

function chat(route, body = {}) {
  return fetch(`${gw.base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: route, messages: [{ role: 'user', content: 'hi' }], ...body }),
  });
}

test('plain Converse: SigV4-signed, model id percent-encoded in the path, usage read', async () => {
  const { data, response } = await client.chat.completions
    .create({ model: 'plain', messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hello bedrock' }] })
    .withResponse();
  assert.equal(data.choices[0].message.content, TEXT);
  assert.equal(data.choices[0].finish_reason, 'stop');
  assert.equal(data.usage.completion_tokens, 12);
  assert.ok(data.usage.prompt_tokens > 0);
  assert.equal(response.headers.get('x-bascule-target'), 'plain');
  const r = await sim.lastRequest(M);
  assert.equal(r.path, '/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse');
  assert.match(r.headers.authorization,
    /^AWS4-HMAC-SHA256 Credential=AKIDSIMEXAMPLE\/\d{8}\/us-west-2\/bedrock\/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature=[0-9a-f]{64}$/);
  const body = bodyOf(r);
  assert.deepEqual(body.system, [{ text: 'be brief' }]);
  assert.deepEqual(body.messages, [{ role: 'user', content: [{ text: 'hello bedrock' }] }]);
  assert.equal(typeof body.inferenceConfig.maxTokens, 'number');
});

test('ConverseStream: event-stream frames decoded into OpenAI chunks, usage chunk', async () => {
  const stream = await client.chat.completions.create({
    model: 'plain', stream: true, stream_options: { include_usage: true },
    messages: [{ role: 'user', content: 'stream please' }],
  });
  let text = '';
  let usage = null;
  let finish = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      text += c.delta?.content ?? '';
      finish = c.finish_reason ?? finish;
    }
  }
  assert.equal(text, TEXT);
  assert.equal(finish, 'stop');
  assert.equal(usage.completion_tokens, 12);
  const r = await sim.lastRequest(M);
  assert.equal(r.path, '/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream');
});

test('cache reads and writes in Converse usage reach the usage record', async () => {
  await sim.setModel(M, {
    script: [{ action: 'ok', usage: { inputTokens: 10, outputTokens: 12, totalTokens: 152, cacheReadInputTokens: 100, cacheWriteInputTokens: 30 } }],
  });
  const res = await chat('plain');
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  assert.equal(body.usage.prompt_tokens, 140); // input + cache reads + cache writes
  assert.equal(body.usage.prompt_tokens_details.cached_tokens, 100);
  await sim.deleteModel(M);
});

test('health probes are signed with the current time: Bedrock refuses a stale x-amz-date', async () => {
  await waitFor(async () => (await sim.stats()).models['br-probed-model']?.calls >= 2, { timeoutMs: 5000, what: 'two probes' });
  const s = (await sim.stats()).models['br-probed-model'];
  assert.equal(s.faults, 0, JSON.stringify(s));
  const r = await sim.lastRequest('br-probed-model');
  assert.equal(bodyOf(r).inferenceConfig.maxTokens, 1);
});

test('temporary credentials: x-amz-security-token sent and signed', async () => {
  const res = await chat('tmp');
  assert.equal(res.status, 200, await res.text());
  const r = await sim.lastRequest('br-tmp-model');
  assert.equal(r.headers['x-amz-security-token'], 'sim-session-token');
  assert.match(r.headers.authorization, /SignedHeaders=content-type;host;x-amz-date;x-amz-security-token,/);
});

test('tools: a round trip through toolUse and toolResult blocks', async () => {
  const tools = [{ type: 'function', function: { name: 'get_weather', description: 'weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
  const first = await client.chat.completions.create({
    model: 'plain', tools, tool_choice: { type: 'function', function: { name: 'get_weather' } },
    messages: [{ role: 'user', content: 'weather in Paris?' }],
  });
  const call = first.choices[0].message.tool_calls[0];
  assert.equal(first.choices[0].finish_reason, 'tool_calls');
  assert.equal(call.function.name, 'get_weather');
  assert.equal(typeof JSON.parse(call.function.arguments).city, 'string');
  const second = await client.chat.completions.create({
    model: 'plain', tools,
    messages: [
      { role: 'user', content: 'weather in Paris?' },
      first.choices[0].message,
      { role: 'tool', tool_call_id: call.id, content: 'sunny' },
    ],
  });
  assert.equal(second.choices[0].message.content, TEXT);
  const body = bodyOf(await sim.lastRequest(M));
  assert.deepEqual(body.messages[1].content.at(-1), { toolUse: { toolUseId: call.id, name: 'get_weather', input: JSON.parse(call.function.arguments) } });
  assert.deepEqual(body.messages[2].content[0], { toolResult: { toolUseId: call.id, content: [{ text: 'sunny' }] } });
  assert.equal(body.toolConfig.tools[0].toolSpec.name, 'get_weather');
});

test('tools streamed: the toolUse input deltas become tool_call argument chunks', async () => {
  const tools = [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] } } }];
  const stream = await client.chat.completions.create({
    model: 'plain', stream: true, tools, tool_choice: 'required',
    messages: [{ role: 'user', content: 'find it' }],
  });
  let args = '';
  let name = null;
  let finish = null;
  for await (const chunk of stream)
    for (const c of chunk.choices) {
      for (const tc of c.delta?.tool_calls ?? []) {
        name = tc.function?.name ?? name;
        args += tc.function?.arguments ?? '';
      }
      finish = c.finish_reason ?? finish;
    }
  assert.equal(name, 'lookup');
  assert.equal(typeof JSON.parse(args).q, 'string');
  assert.equal(finish, 'tool_calls');
});

test('structured output: a json_schema answer through the forced-tool emulation', async () => {
  const res = await client.chat.completions.create({
    model: 'plain',
    response_format: { type: 'json_schema', json_schema: { name: 'p', schema: { type: 'object', properties: { name: { type: 'string' }, age: { type: 'integer' } }, required: ['name', 'age'], additionalProperties: false } } },
    messages: [{ role: 'user', content: 'a person' }],
  });
  const v = JSON.parse(res.choices[0].message.content);
  assert.equal(typeof v.name, 'string');
  assert.equal(typeof v.age, 'number');
  assert.equal(res.choices[0].finish_reason, 'stop');
});

test('images: a data URL goes as image bytes with its format', async () => {
  const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
  const res = await client.chat.completions.create({
    model: 'plain',
    messages: [{ role: 'user', content: [{ type: 'text', text: 'what is this' }, { type: 'image_url', image_url: { url: `data:image/png;base64,${png}` } }] }],
  });
  assert.equal(res.choices[0].message.content, TEXT);
  const body = bodyOf(await sim.lastRequest(M));
  assert.deepEqual(body.messages[0].content[1], { image: { format: 'png', source: { bytes: png } } });
});

test('Anthropic SDK client: plain and streamed Messages through a bedrock target', async () => {
  const msg = await anthropic.messages.create({ model: 'plain', max_tokens: 64, messages: [{ role: 'user', content: 'hi from anthropic sdk' }] });
  assert.equal(msg.content[0].text, TEXT);
  assert.equal(msg.stop_reason, 'end_turn');
  let text = '';
  const stream = anthropic.messages.stream({ model: 'plain', max_tokens: 64, messages: [{ role: 'user', content: 'stream it' }] });
  for await (const ev of stream)
    if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') text += ev.delta.text;
  assert.equal(text, TEXT);
  const body = bodyOf(await sim.lastRequest(M));
  assert.equal(body.inferenceConfig.maxTokens, 64);
});

test('a wrong secret: 403 InvalidSignatureException is auth, and the equivalent tier answers', async () => {
  const before = await sim.calls('br-wrong-model');
  const res = await chat('wrong');
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  assert.equal(res.headers.get('x-bascule-target'), 'wrong-e');
  assert.equal(await sim.calls('br-wrong-model'), before + 1);
  const a = await attempts(res, 2);
  assert.equal(a[0].kind, 'auth');
  assert.equal(a[0].status, 403);
  const only = await chat('wrong-only');
  assert.ok(only.status >= 500, `status ${only.status}`);
  await only.arrayBuffer();
});

test('HTTP ThrottlingException (x-amzn-ErrorType) is rate_limited and fails over', async () => {
  await sim.setModel('br-thr-p', { script: [{ action: 'status', status: 429 }] });
  const res = await chat('thr');
  assert.equal(res.status, 200, await res.clone().text());
  assert.equal(res.headers.get('x-bascule-target'), 'thr-e');
  const a = await attempts(res, 2);
  assert.equal(a[0].kind, 'rate_limited');
  await res.arrayBuffer();
});

test('a throttlingException inside ConverseStream before any content fails over unseen', async () => {
  await sim.setModel('br-thr-p', { script: [{ action: 'error_200', after_events: 1, error_type: 'ThrottlingException', message: 'Too many tokens' }] });
  const p = await sim.calls('br-thr-p');
  const e = await sim.calls('br-thr-e');
  const res = await chat('thr', { stream: true });
  const text = await res.text();
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-bascule-target'), 'thr-e');
  assert.ok(text.includes('[DONE]'));
  assert.equal(await sim.calls('br-thr-p'), p + 1);
  assert.equal(await sim.calls('br-thr-e'), e + 1);
  const a = await attempts(res, 2);
  assert.equal(a[0].kind, 'rate_limited');
});

test('a throttlingException after content ends the client stream with an error', async () => {
  // messageStart, one text delta ("Hello"): then the exception message.
  await sim.setModel('br-thr-p', { script: [{ action: 'error_200', after_events: 2, error_type: 'ThrottlingException', message: 'Too many tokens' }] });
  const e = await sim.calls('br-thr-e');
  const stream = await client.chat.completions.create({ model: 'thr', stream: true, messages: [{ role: 'user', content: 'x' }] });
  let text = '';
  await assert.rejects(async () => {
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  }, (err) => {
    assert.ok(err instanceof OpenAI.APIError, `an APIError, got ${err}`);
    return true;
  });
  assert.equal(text, 'Hello', 'what was relayed before the error stays');
  assert.equal(await sim.calls('br-thr-e'), e, 'no failover after the commit point');
});

test('a CRC-broken event-stream frame is a protocol failure, never relayed', async () => {
  await sim.setModel('br-thr-p', { script: [{ action: 'malformed', after_events: 1 }] });
  const res = await chat('thr', { stream: true });
  const text = await res.text();
  assert.equal(res.headers.get('x-bascule-target'), 'thr-e');
  assert.ok(!text.includes('"content":"x"'), text);
  await sim.deleteModel('br-thr-p');
});

test('Claude on Anthropic fails over to Claude on Bedrock (the equivalent tier), exact calls', async () => {
  await sim.setModel('claude-sonnet-4-5', { script: [{ action: 'status', status: 529 }] });
  const bm = 'us.anthropic.claude-sonnet-4-5-v1:0';
  const a0 = await sim.calls('claude-sonnet-4-5');
  const b0 = await sim.calls(bm);
  const res = await chat('claude');
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  assert.equal(body.choices[0].message.content, TEXT);
  assert.equal(res.headers.get('x-bascule-target'), 'claude-br');
  assert.equal(res.headers.get('x-bascule-workflow'), 'equivalent_failover');
  assert.equal(await sim.calls('claude-sonnet-4-5'), a0 + 1);
  assert.equal(await sim.calls(bm), b0 + 1);
  const a = await attempts(res, 2);
  assert.equal(a[0].kind, 'overloaded');
});
