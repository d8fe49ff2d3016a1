// The gemini provider kind end to end: the official openai SDK talks to bascule, whose
// targets are bascule-sim speaking the Gemini API (generativelanguage v1beta under
// /v1beta). Plain, streamed, tools with a full round trip (thought signatures carried in
// extra_content and replayed), response_format json_schema (responseJsonSchema), usage,
// embeddings (embedContent / batchEmbedContents, base64 for the SDK), and the failure
// paths: RESOURCE_EXHAUSTED failover, per-day quota, the bare JSON error object in a
// stream before and after the first byte, a cut stream, a blocked prompt, context
// overflow, a bad key, and the models health probe. Every scenario has its own route and
// upstream model, so scripts and breakers never leak between tests.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startSim, startGateway, waitFor } from '../lib/harness.mjs';
import { drain, weatherTool } from '../lib/sdk_stream.mjs';

const ADMIN = 'gemini-admin-key-0123456789';
const TEXT = 'Hello héllo wörld! This is bascule-sim ✓ streaming 🚀 tokens';
const CAPS = 'capabilities: [text, vision, streaming, tools, parallel_tool_calls, json_schema, json_object]';
const SIM_SIGNATURE = 'YmFzY3VsZS1zaW0gdGhvdWdodCBzaWduYXR1cmU=';
let sim, gw, client;

function config(simUrl) {
  const gem = `kind: gemini, base_url: "${simUrl}/v1beta"`;
  // Keys cool down per provider after a rate limit or quota error: every scenario that
  // provokes one gets a provider (and key) of its own.
  const own = ['rl-p', 'day', 'late-p', 'early-p', 'cut', 'block', 'ctx'];
  return `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: info, format: json }
admin: { key: "${ADMIN}" }
retry:
  backoff: { base_ms: 50, max_ms: 400, jitter: 0.2 }
  budget: { ratio: 10, min_per_s: 1000, window_ms: 10000 }
providers:
  gem: { ${gem}, keys: ["AIza-main"], health: { probe: none } }
${own.map((n) => `  gem-${n}: { ${gem}, keys: ["AIza-${n}"], health: { probe: none } }`).join('\n')}
  gemkeys: { ${gem}, keys: ["sk-sim-bad-1", "AIza-good"], health: { probe: none } }
  gemprobe: { ${gem}, keys: ["AIza-probe"], health: { interval_ms: 150, probe: models } }
targets:
  g-plain: { provider: gem, model: gemini-3-plain, ${CAPS} }
  g-old: { provider: gem, model: gemini-2.5-old, ${CAPS} }
  g-capped: { provider: gem, model: gemini-3-capped, ${CAPS} }
  g-rl-e: { provider: gem, model: gemini-3-rl-e, ${CAPS} }
  g-late-e: { provider: gem, model: gemini-3-late-e, ${CAPS} }
  g-early-e: { provider: gem, model: gemini-3-early-e, ${CAPS} }
${own.map((n) => `  g-${n}: { provider: gem-${n}, model: gemini-3-${n}, ${CAPS} }`).join('\n')}
  g-keys: { provider: gemkeys, model: gemini-3-keys, ${CAPS} }
  g-emb: { provider: gem, model: text-embedding-004, capabilities: [text, embeddings] }
  g-probe: { provider: gemprobe, model: gemini-3-probe, ${CAPS} }
routes:
  plain: { primary: [g-plain] }
  old: { primary: [g-old] }
  capped: { primary: [g-capped] }
  rl:
    primary: [g-rl-p]
    equivalent: [g-rl-e]
    envelope: { max_same_target_attempts: 1 }
  day: { primary: [g-day] }
  late:
    primary: [g-late-p]
    equivalent: [g-late-e]
    envelope: { max_same_target_attempts: 1 }
  early:
    primary: [g-early-p]
    equivalent: [g-early-e]
    envelope: { max_same_target_attempts: 1 }
  cut: { primary: [g-cut], envelope: { max_same_target_attempts: 1 } }
  block: { primary: [g-block] }
  ctx: { primary: [g-ctx] }
  keys: { primary: [g-keys] }
  emb: { primary: [g-emb] }
  probe: { primary: [g-probe] }
`;
}

before(async () => {
  sim = await startSim();
  gw = await startGateway({ config: config(sim.url) });
  client = new OpenAI({ baseURL: gw.base, apiKey: 'client-key', maxRetries: 0 });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

/** The attempt lines of the access log for the request that got <response>. */
function attempts(response) {
  const id = response.headers.get('x-request-id');
  return gw.accessLog().filter((l) => l.type === 'attempt' && l.request_id === id);
}

const calls = (model) => sim.calls(model);

const lastRequest = (model) => sim.lastRequest(model);

test('plain: the generateContent request is well-formed and the answer is OpenAI-shaped', async () => {
  const res = await client.chat.completions.create({
    model: 'plain',
    messages: [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hi there' },
    ],
    temperature: 0.4,
    top_p: 0.9,
    stop: ['###'],
    user: 'user-7',
  });
  assert.equal(res.object, 'chat.completion');
  assert.equal(res.choices[0].message.role, 'assistant');
  assert.equal(res.choices[0].message.content, TEXT);
  assert.equal(res.choices[0].finish_reason, 'stop');
  assert.match(res.id, /^chatcmpl-sim-\d+$/);
  assert.equal(res.model, 'gemini-3-plain');
  assert.ok(res.usage.prompt_tokens > 0);
  assert.equal(res.usage.completion_tokens, 12);
  assert.equal(res.usage.total_tokens, res.usage.prompt_tokens + 12);

  const seen = await lastRequest('gemini-3-plain');
  assert.equal(seen.method, 'POST');
  assert.equal(seen.path, '/v1beta/models/gemini-3-plain:generateContent');
  assert.equal(seen.outcome, 'ok');
  assert.equal(seen.headers['x-goog-api-key'], 'AIza-main');
  assert.equal(seen.headers.authorization, undefined);
  assert.deepEqual(seen.body.systemInstruction, { parts: [{ text: 'Be brief.' }] });
  assert.deepEqual(seen.body.contents, [{ role: 'user', parts: [{ text: 'Hi there' }] }]);
  assert.deepEqual(seen.body.generationConfig, { temperature: 0.4, topP: 0.9, stopSequences: ['###'] });
  assert.equal(seen.body.model, undefined);
  assert.equal(seen.body.user, undefined);
});

test('streaming: alt=sse, text deltas, one role, finish stop, usage chunk only when asked', async () => {
  const out = await drain(await client.chat.completions.create({
    model: 'plain',
    messages: [{ role: 'user', content: 'Stream please' }],
    stream: true,
    stream_options: { include_usage: true },
  }));
  assert.equal(out.text, TEXT);
  assert.equal(out.finish, 'stop');
  assert.equal(out.roles, 1);
  assert.ok(out.usage, 'a usage chunk');
  assert.equal(out.usage.completion_tokens, 12);
  assert.ok(out.usage.prompt_tokens > 0);
  const seen = await lastRequest('gemini-3-plain');
  assert.equal(seen.path, '/v1beta/models/gemini-3-plain:streamGenerateContent');
  assert.equal(seen.query, 'alt=sse');
  assert.equal(seen.body.stream_options, undefined, 'no OpenAI-only field leaks upstream');

  const quiet = await drain(await client.chat.completions.create({
    model: 'plain', messages: [{ role: 'user', content: 'Again' }], stream: true }));
  assert.equal(quiet.text, TEXT);
  assert.equal(quiet.usage, null);
});

test('max_tokens from the client becomes maxOutputTokens: finish length', async () => {
  const res = await client.chat.completions.create({
    model: 'capped', messages: [{ role: 'user', content: 'x' }], max_completion_tokens: 2 });
  assert.equal(res.choices[0].message.content, 'Hello héllo');
  assert.equal(res.choices[0].finish_reason, 'length');
  assert.equal(res.usage.completion_tokens, 2);
  assert.equal((await lastRequest('gemini-3-capped')).body.generationConfig.maxOutputTokens, 2);
});

test('tools: a full round trip with the thought signature carried and replayed', async () => {
  const messages = [{ role: 'user', content: 'Weather in Oslo?' }];
  const first = await client.chat.completions.create({
    model: 'plain', messages, tools: [weatherTool], tool_choice: 'auto' });
  const msg = first.choices[0].message;
  assert.equal(first.choices[0].finish_reason, 'tool_calls');
  assert.equal(msg.content, null);
  assert.equal(msg.tool_calls.length, 1);
  const call = msg.tool_calls[0];
  assert.equal(call.type, 'function');
  assert.equal(call.function.name, 'get_weather');
  assert.match(call.id, /^call_[0-9a-f]{8}_0$/);
  assert.deepEqual(JSON.parse(call.function.arguments), { city: 'Oslo' });
  assert.deepEqual(call.extra_content, { google: { thought_signature: SIM_SIGNATURE } });
  let seen = await lastRequest('gemini-3-plain');
  assert.deepEqual(seen.body.tools, [{ functionDeclarations: [{
    name: 'get_weather', description: 'Current weather for a city',
    parametersJsonSchema: weatherTool.function.parameters }] }]);
  assert.deepEqual(seen.body.toolConfig, { functionCallingConfig: { mode: 'AUTO' } });

  // The next turn: the assistant's message as the SDK returned it, then the tool result.
  messages.push(msg, { role: 'tool', tool_call_id: call.id, content: '{"temp_c":4}' });
  const second = await client.chat.completions.create({ model: 'plain', messages, tools: [weatherTool] });
  assert.equal(second.choices[0].finish_reason, 'stop');
  assert.equal(second.choices[0].message.content, TEXT);
  seen = await lastRequest('gemini-3-plain');
  assert.equal(seen.outcome, 'ok');
  assert.deepEqual(seen.body.contents[1], {
    role: 'model',
    parts: [{ functionCall: { name: 'get_weather', args: { city: 'Oslo' } },
      thoughtSignature: SIM_SIGNATURE }],
  });
  assert.deepEqual(seen.body.contents[2], {
    role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { temp_c: 4 } } }] });

  // A client that rebuilt the message without extra_content: Gemini 3 gets the placeholder.
  const bare = { role: 'assistant', content: null, tool_calls: [{
    id: call.id, type: 'function', function: { name: 'get_weather', arguments: call.function.arguments } }] };
  const third = await client.chat.completions.create({
    model: 'plain', tools: [weatherTool],
    messages: [messages[0], bare, { role: 'tool', tool_call_id: call.id, content: 'sunny' }] });
  assert.equal(third.choices[0].message.content, TEXT);
  seen = await lastRequest('gemini-3-plain');
  assert.equal(seen.body.contents[1].parts[0].thoughtSignature, 'skip_thought_signature_validator');
  assert.deepEqual(seen.body.contents[2].parts[0].functionResponse.response, { content: 'sunny' });

  // Streamed: the call comes whole, with id, name and signature in its one fragment.
  const out = await drain(await client.chat.completions.create({
    model: 'plain', messages: [{ role: 'user', content: 'Wetter in Zürich?' }],
    tools: [weatherTool], tool_choice: { type: 'function', function: { name: 'get_weather' } },
    stream: true }));
  assert.equal(out.finish, 'tool_calls');
  assert.equal(out.text, '');
  assert.equal(out.toolCalls.length, 1);
  assert.equal(out.toolCalls[0].name, 'get_weather');
  assert.match(out.toolCalls[0].id, /^call_[0-9a-f]{8}_0$/);
  assert.deepEqual(JSON.parse(out.toolCalls[0].arguments), { city: 'Oslo' });
  assert.deepEqual(out.toolCalls[0].extra, { google: { thought_signature: SIM_SIGNATURE } });
  seen = await lastRequest('gemini-3-plain');
  assert.deepEqual(seen.body.toolConfig,
    { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_weather'] } });
});

test('a Gemini 2.5 target replays calls without a placeholder signature', async () => {
  // bascule-sim validates like Gemini 3, so a signature-less replay is refused with the
  // API's 400: proof that the adapter sent none for a 2.5 model.
  const call = { id: 'call_x', type: 'function', function: { name: 'get_weather', arguments: '{}' } };
  await assert.rejects(
    client.chat.completions.create({
      model: 'old', tools: [weatherTool],
      messages: [{ role: 'user', content: 'q' }, { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'tool', tool_call_id: 'call_x', content: 'ok' }] }),
    (err) => {
      assert.equal(err.status, 400);
      assert.match(err.message, /thought_signature/);
      return true;
    });
  const seen = await lastRequest('gemini-2.5-old');
  assert.equal(seen.body.contents[1].parts[0].thoughtSignature, undefined);
});

test('response_format json_schema goes out as responseJsonSchema; json_object as the MIME type', async () => {
  const schema = { type: 'object', properties: { echo: { type: 'string' } }, required: ['echo'],
    additionalProperties: false };
  const res = await client.chat.completions.create({
    model: 'plain',
    messages: [{ role: 'user', content: 'Give JSON' }],
    response_format: { type: 'json_schema', json_schema: { name: 'echo', strict: true, schema } },
  });
  assert.equal(res.choices[0].finish_reason, 'stop');
  let seen = await lastRequest('gemini-3-plain');
  assert.deepEqual(seen.body.generationConfig,
    { responseMimeType: 'application/json', responseJsonSchema: schema });
  assert.equal(seen.body.response_format, undefined);

  await client.chat.completions.create({
    model: 'plain', messages: [{ role: 'user', content: 'JSON please' }],
    response_format: { type: 'json_object' } });
  seen = await lastRequest('gemini-3-plain');
  assert.deepEqual(seen.body.generationConfig, { responseMimeType: 'application/json' });
});

test('a request Gemini cannot express is refused before any upstream call', async () => {
  const before = await calls('gemini-3-plain');
  await assert.rejects(
    client.chat.completions.create({
      model: 'plain', messages: [{ role: 'user', content: 'x' }], logprobs: true }),
    (err) => err.status >= 400 && err.status < 600);
  assert.equal(await calls('gemini-3-plain'), before);
});

test('RESOURCE_EXHAUSTED (429) on the primary fails over to the equivalent target', async () => {
  await sim.setModel('gemini-3-rl-p', { script: [{ action: 'status', status: 429 }] });
  const res = await client.chat.completions.create(
    { model: 'rl', messages: [{ role: 'user', content: 'x' }] }).withResponse();
  assert.equal(res.data.choices[0].message.content, TEXT);
  assert.equal(res.response.headers.get('x-bascule-target'), 'g-rl-e');
  assert.equal(await calls('gemini-3-rl-p'), 1);
  assert.equal(await calls('gemini-3-rl-e'), 1);
  const failed = await lastRequest('gemini-3-rl-p');
  assert.equal(failed.outcome, 'status');
  await waitFor(() => attempts(res.response).length === 2, { timeoutMs: 2000, what: 'attempt lines' });
  const [a1, a2] = attempts(res.response);
  assert.equal(a1.target, 'g-rl-p');
  assert.equal(a1.kind, 'rate_limited');
  assert.equal(a1.status, 429);
  assert.equal(a2.target, 'g-rl-e');
});

test('a per-day quota 429 is quota_exhausted: not retried on the same key', async () => {
  await sim.setModel('gemini-3-day', {
    script: [{ action: 'status', status: 429, error_code: 'GenerateRequestsPerDayPerProjectPerModel-FreeTier' }],
  });
  const res = await fetch(`${gw.base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'day', messages: [{ role: 'user', content: 'x' }] }),
  });
  assert.equal(res.status, 429);
  await waitFor(() => attempts(res).length === 1, { timeoutMs: 2000, what: 'the attempt line' });
  assert.equal(attempts(res)[0].kind, 'quota_exhausted');
  assert.equal(await calls('gemini-3-day'), 1, 'a day quota is not retried on the same key');
});

test('a bare JSON error mid-stream after the first byte ends the client stream with an error', async () => {
  await sim.setModel('gemini-3-late-p', {
    script: [{ action: 'error_200', after_events: 3, error_type: 'UNAVAILABLE', message: 'The model is overloaded.' }],
  });
  const stream = await client.chat.completions.create({
    model: 'late', messages: [{ role: 'user', content: 'x' }], stream: true });
  let text = '';
  await assert.rejects(async () => {
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  }, (err) => {
    assert.ok(err instanceof OpenAI.APIError, `an APIError, got ${err}`);
    return true;
  });
  assert.equal(text, 'Hello héllo wörld', 'what was relayed before the error stays');
  assert.equal(await calls('gemini-3-late-e'), 0, 'no failover after the commit point');
});

test('a bare JSON error before any event fails over invisibly', async () => {
  await sim.setModel('gemini-3-early-p', {
    script: [{ action: 'error_200', after_events: 0, error_type: 'RESOURCE_EXHAUSTED', message: 'slow down' }],
  });
  const out = await drain(await client.chat.completions.create({
    model: 'early', messages: [{ role: 'user', content: 'x' }], stream: true,
    stream_options: { include_usage: true } }));
  assert.equal(out.text, TEXT);
  assert.equal(out.finish, 'stop');
  assert.equal(out.roles, 1);
  assert.ok(out.usage);
  assert.equal(await calls('gemini-3-early-p'), 1);
  assert.equal(await calls('gemini-3-early-e'), 1);
});

test('a stream cut before the finishReason chunk is a partial failure, not a clean end', async () => {
  await sim.setModel('gemini-3-cut', { script: [{ action: 'cut', after_events: 5 }] });
  const stream = await client.chat.completions.create({
    model: 'cut', messages: [{ role: 'user', content: 'x' }], stream: true });
  let text = '';
  await assert.rejects(async () => {
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  });
  assert.ok(text.length > 0 && TEXT.startsWith(text), `a prefix was relayed: "${text}"`);
});

test('a blocked prompt (200 with promptFeedback.blockReason) is content_policy_violation', async () => {
  await sim.setModel('gemini-3-block', {
    script: [{ action: 'status', status: 200,
      body: { promptFeedback: { blockReason: 'PROHIBITED_CONTENT' }, usageMetadata: { promptTokenCount: 4 } } }],
  });
  await assert.rejects(
    client.chat.completions.create({ model: 'block', messages: [{ role: 'user', content: 'x' }] }),
    (err) => {
      assert.equal(err.status, 400);
      assert.equal(err.code, 'content_policy_violation');
      return true;
    });
  assert.equal(await calls('gemini-3-block'), 1);
});

test('input token count over the window is context_length_exceeded, not retried', async () => {
  await sim.setModel('gemini-3-ctx', {
    script: [{ action: 'status', status: 400,
      message: 'The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).' }],
  });
  await assert.rejects(
    client.chat.completions.create({ model: 'ctx', messages: [{ role: 'user', content: 'x' }] }),
    (err) => {
      assert.equal(err.status, 400);
      assert.equal(err.code, 'context_length_exceeded');
      return true;
    });
  assert.equal(await calls('gemini-3-ctx'), 1);
});

test('an invalid key (400 API_KEY_INVALID) rotates to the next key', async () => {
  const res = await client.chat.completions.create({ model: 'keys', messages: [{ role: 'user', content: 'x' }] });
  assert.equal(res.choices[0].message.content, TEXT);
  const log = await sim.requests('gemini-3-keys');
  assert.deepEqual(log.map((e) => e.headers['x-goog-api-key']), ['sk-sim-bad-1', 'AIza-good']);
  assert.equal(log[0].outcome, 'unauthorized');
});

test('embeddings: one input -> embedContent, several -> batchEmbedContents, base64 for the SDK', async () => {
  const many = await client.embeddings.create({ model: 'emb', input: ['alpha', 'beta'] });
  assert.equal(many.object, 'list');
  assert.equal(many.data.length, 2);
  assert.equal(many.model, 'text-embedding-004');
  for (const [i, d] of many.data.entries()) {
    assert.equal(d.index, i);
    assert.equal(d.embedding.length, 8);
    const norm = Math.sqrt(d.embedding.reduce((s, x) => s + x * x, 0));
    assert.ok(Math.abs(norm - 1) < 1e-4, `a unit vector, norm ${norm}`);
  }
  assert.notDeepEqual(many.data[0].embedding, many.data[1].embedding);
  let seen = await lastRequest('text-embedding-004');
  assert.equal(seen.path, '/v1beta/models/text-embedding-004:batchEmbedContents');
  assert.deepEqual(seen.body.requests.map((r) => [r.model, r.content.parts[0].text]),
    [['models/text-embedding-004', 'alpha'], ['models/text-embedding-004', 'beta']]);

  const one = await client.embeddings.create({ model: 'emb', input: 'alpha', dimensions: 8 });
  assert.equal(one.data.length, 1);
  assert.deepEqual(one.data[0].embedding, many.data[0].embedding, 'deterministic per input');
  seen = await lastRequest('text-embedding-004');
  assert.equal(seen.path, '/v1beta/models/text-embedding-004:embedContent');
  assert.deepEqual(seen.body, { content: { parts: [{ text: 'alpha' }] }, outputDimensionality: 8 });

  // Floats on request: the numbers as Gemini wrote them.
  const res = await fetch(`${gw.base}/embeddings`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer client-key' },
    body: JSON.stringify({ model: 'emb', input: 'alpha', encoding_format: 'float' }),
  });
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.ok(Array.isArray(body.data[0].embedding));
  for (let k = 0; k < 8; k++)
    assert.ok(Math.abs(body.data[0].embedding[k] - many.data[0].embedding[k]) < 1e-6);
});

test('health probe: GET /v1beta/models with the key header', async () => {
  await waitFor(async () => {
    const log = await sim.requests();
    return log.some((e) => e.path === '/v1beta/models' && e.headers['x-goog-api-key'] === 'AIza-probe');
  }, { timeoutMs: 5000, what: 'a models probe' });
  const probe = (await sim.requests()).find(
    (e) => e.path === '/v1beta/models' && e.headers['x-goog-api-key'] === 'AIza-probe');
  assert.equal(probe.method, 'GET');
  assert.equal(probe.outcome, 'models');
  const res = await client.chat.completions.create({ model: 'probe', messages: [{ role: 'user', content: 'x' }] });
  assert.equal(res.choices[0].message.content, TEXT);
});
