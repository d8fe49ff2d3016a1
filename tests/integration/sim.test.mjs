// SPDX-License-Identifier: MIT
// sim.test.mjs -- bascule-sim driven directly with the official openai SDK: plain and
// streamed completions with usage, tool calls, embeddings, every fault action as a client
// sees it, script sequencing, the counters (cancellations included), the request log,
// the control API, and scripted content / tool arguments (in every dialect).
// Run: cd tests && BASCULE_SIM_BIN=../build/bascule-sim node --test integration/sim.test.mjs

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, beforeEach, describe, it } from '../lib/bounded_test.mjs';

import OpenAI from 'openai';

import { rawRequest, startSim, stopAll, waitFor } from '../lib/harness.mjs';

const TEXT12 = 'Hello héllo wörld! This is bascule-sim ✓ streaming 🚀 tokens';
const TOKENS = ['Hello', ' héllo', ' wörld', '!', ' This', ' is', ' bascule', '-sim', ' ✓', ' streaming', ' 🚀', ' tokens'];
const MSG = [{ role: 'user', content: 'Say something deterministic.' }];
const TOOLS = [
  { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: {} } } },
  { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: {} } } },
];

let sim;
let client;

before(async () => {
  sim = await startSim();
  client = new OpenAI({ baseURL: sim.base, apiKey: 'sk-test-1', maxRetries: 0, timeout: 10_000 });
});

after(async () => {
  // The sim must shut down cleanly: exit 0, and no sanitizer report (leaks included) when
  // it is a sanitizer build.
  const { code, signal } = await sim.stop();
  await stopAll();
  assert.equal(signal, null);
  assert.equal(code, 0, sim.logs());
  assert.doesNotMatch(sim.logs(), /Sanitizer|runtime error/);
});

beforeEach(async () => {
  await sim.reset();
});

/** Collects a stream's chunks; returns {chunks, error} (error: what iteration threw). */
async function collect(stream, { stopAfter = Infinity } = {}) {
  const chunks = [];
  try {
    for await (const chunk of stream) {
      chunks.push(chunk);
      if (chunks.length >= stopAfter) break;
    }
  } catch (error) {
    return { chunks, error };
  }
  return { chunks, error: null };
}

function header(err, name) {
  const h = err.headers;
  return typeof h?.get === 'function' ? h.get(name) : h?.[name];
}

async function modelStats(model) {
  return (await sim.stats()).models[model];
}

describe('completions', () => {
  it('answers a plain completion with the deterministic text and usage', async () => {
    const res = await client.chat.completions.create({ model: 'gpt-plain', messages: MSG });
    assert.equal(res.model, 'gpt-plain');
    assert.equal(res.object, 'chat.completion');
    assert.match(res.id, /^chatcmpl-sim-\d+$/);
    assert.equal(res.choices.length, 1);
    assert.equal(res.choices[0].message.role, 'assistant');
    assert.equal(res.choices[0].message.content, TEXT12);
    assert.equal(res.choices[0].finish_reason, 'stop');
    assert.equal(res.usage.completion_tokens, 12);
    assert.ok(res.usage.prompt_tokens > 0);
    assert.equal(res.usage.total_tokens, res.usage.prompt_tokens + 12);
  });

  it('caps tokens at max_tokens / max_completion_tokens and at the model spec', async () => {
    let res = await client.chat.completions.create({ model: 'gpt-cap', messages: MSG, max_tokens: 3 });
    assert.equal(res.choices[0].message.content, 'Hello héllo wörld');
    assert.equal(res.choices[0].finish_reason, 'length');
    assert.equal(res.usage.completion_tokens, 3);
    res = await client.chat.completions.create({ model: 'gpt-cap', messages: MSG, max_completion_tokens: 2 });
    assert.equal(res.usage.completion_tokens, 2);
    await sim.setModel('gpt-cap', { tokens: 20 });
    res = await client.chat.completions.create({ model: 'gpt-cap', messages: MSG });
    assert.equal(res.usage.completion_tokens, 20);
    assert.ok(res.choices[0].message.content.startsWith(TEXT12));
    assert.equal(res.choices[0].finish_reason, 'stop');
  });

  it('streams one chunk per token, role first, finish_reason, then the usage chunk', async () => {
    const stream = await client.chat.completions.create({
      model: 'gpt-stream',
      messages: MSG,
      stream: true,
      stream_options: { include_usage: true },
    });
    const { chunks, error } = await collect(stream);
    assert.equal(error, null);
    assert.equal(chunks.length, 1 + 12 + 1 + 1);
    assert.equal(chunks[0].choices[0].delta.role, 'assistant');
    const pieces = chunks.slice(1, 13).map((c) => c.choices[0].delta.content);
    assert.deepEqual(pieces, TOKENS);
    assert.equal(pieces.join(''), TEXT12);
    assert.equal(chunks[13].choices[0].finish_reason, 'stop');
    assert.deepEqual(chunks[14].choices, []);
    assert.equal(chunks[14].usage.completion_tokens, 12);
    for (const c of chunks) {
      assert.equal(c.model, 'gpt-stream');
      assert.equal(c.id, chunks[0].id);
    }
  });

  it('streams without a usage chunk unless asked', async () => {
    const stream = await client.chat.completions.create({ model: 'gpt-stream', messages: MSG, stream: true, max_tokens: 4 });
    const { chunks, error } = await collect(stream);
    assert.equal(error, null);
    assert.equal(chunks.length, 1 + 4 + 1);
    assert.equal(chunks.at(-1).choices[0].finish_reason, 'length');
    assert.ok(chunks.every((c) => c.usage == null));
  });

  it('streams 4096 tokens through back-pressure without losing one', async () => {
    await sim.setModel('gpt-big', { tokens: 4096 });
    const stream = await client.chat.completions.create({ model: 'gpt-big', messages: MSG, stream: true });
    const { chunks, error } = await collect(stream);
    assert.equal(error, null);
    assert.equal(chunks.length, 1 + 4096 + 1);
    const text = chunks.map((c) => c.choices[0].delta.content ?? '').join('');
    assert.ok(text.startsWith(TEXT12));
    assert.equal(chunks.at(-1).choices[0].finish_reason, 'stop');
    assert.equal((await modelStats('gpt-big')).completed, 1);
  });

  it('ends the raw stream with data: [DONE]', async () => {
    const res = await fetch(`${sim.base}/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer k', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'raw', messages: MSG, stream: true, max_tokens: 2 }),
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type'), /^text\/event-stream/);
    const text = await res.text();
    const events = text.split('\n\n').filter(Boolean);
    assert.equal(events.length, 1 + 2 + 1 + 1);
    assert.ok(events.every((e) => e.startsWith('data: ')));
    assert.equal(events.at(-1), 'data: [DONE]');
    assert.ok(text.endsWith('\n\n'));
  });

  it('answers tool calls with one call to the first (or the named) tool', async () => {
    const content = 'What is the weather in Köln 🚀 today and tomorrow, please?';
    let res = await client.chat.completions.create({ model: 'gpt-tools', messages: [{ role: 'user', content }], tools: TOOLS });
    const call = res.choices[0].message.tool_calls[0];
    assert.equal(res.choices[0].finish_reason, 'tool_calls');
    assert.equal(res.choices[0].message.content, null);
    assert.equal(call.type, 'function');
    assert.equal(call.function.name, 'get_weather');
    assert.deepEqual(JSON.parse(call.function.arguments), { echo: [...content].slice(0, 32).join('') });
    res = await client.chat.completions.create({
      model: 'gpt-tools',
      messages: [{ role: 'user', content }],
      tools: TOOLS,
      tool_choice: { type: 'function', function: { name: 'get_time' } },
    });
    assert.equal(res.choices[0].message.tool_calls[0].function.name, 'get_time');
    res = await client.chat.completions.create({ model: 'gpt-tools', messages: [{ role: 'user', content }], tools: TOOLS, tool_choice: 'none' });
    assert.equal(res.choices[0].message.content, TEXT12);
  });

  it('streams tool calls as deltas: id and name first, arguments in pieces', async () => {
    const stream = await client.chat.completions.create({
      model: 'gpt-tools',
      messages: [{ role: 'user', content: 'Book a table for two at 19:00 in Zürich' }],
      tools: TOOLS,
      stream: true,
    });
    const { chunks, error } = await collect(stream);
    assert.equal(error, null);
    const deltas = chunks.flatMap((c) => c.choices[0].delta.tool_calls ?? []);
    assert.ok(deltas.length > 2, 'arguments come in several pieces');
    assert.equal(deltas[0].id.startsWith('call_'), true);
    assert.equal(deltas[0].function.name, 'get_weather');
    assert.ok(deltas.slice(1).every((d) => d.index === 0 && d.id === undefined && d.function.name === undefined));
    const args = deltas.map((d) => d.function.arguments).join('');
    assert.deepEqual(JSON.parse(args), { echo: 'Book a table for two at 19:00 in' });
    assert.equal(chunks.at(-1).choices[0].finish_reason, 'tool_calls');
  });

  it('lists models and returns deterministic 8-float embeddings', async () => {
    await client.chat.completions.create({ model: 'seen-model', messages: MSG });
    const ids = [];
    for await (const m of client.models.list()) ids.push(m.id);
    assert.ok(ids.includes('seen-model'));
    assert.ok(ids.includes('gpt-4o-mini'));
    const one = await client.models.retrieve('anything');
    assert.equal(one.id, 'anything');
    const a = await client.embeddings.create({ model: 'text-embedding-3-small', input: ['alpha', 'beta'] });
    const b = await client.embeddings.create({ model: 'text-embedding-3-small', input: 'alpha', encoding_format: 'float' });
    assert.equal(a.data.length, 2);
    assert.equal(a.data[0].embedding.length, 8);
    assert.notDeepEqual(a.data[0].embedding, a.data[1].embedding);
    // The SDK asked for base64 the first time; floats must decode to the same vector.
    a.data[0].embedding.forEach((v, i) => assert.ok(Math.abs(v - b.data[0].embedding[i]) < 1e-6));
    const norm = Math.hypot(...b.data[0].embedding);
    assert.ok(Math.abs(norm - 1) < 1e-4);
  });
});

// ---- scripted content and tool arguments (docs/internals/sim.md, "Step fields content and
// tool_arguments") ----

// 1-, 2-, 3- and 4-byte characters, so pieces fall on every alignment.
const CONTENT = 'Grüße aus Zürich: 北京 ✓ 🚀🎉 naïve café — fin.';
// Not JSON at all (a cut-off object): the sim must pass it on verbatim.
const BAD_ARGS = '{"city": "Zürich 🚀", "days": "three"';
const pieceCount = (s) => Math.max(1, Math.ceil(Buffer.byteLength(s, 'utf8') / 4));

/** POSTs <body> as JSON to <pathAndQuery> on the sim; resolves with {status, text}. */
async function post(pathAndQuery, headers, body) {
  const res = await fetch(`${sim.url}${pathAndQuery}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}

/** The JSON payloads of an SSE body's data lines ([DONE] and comments left out). */
function sseData(text) {
  return text
    .split(/\r?\n\r?\n/)
    .flatMap((ev) => ev.split(/\r?\n/).filter((l) => l.startsWith('data:')))
    .map((l) => l.slice(5).trim())
    .filter((d) => d && d !== '[DONE]')
    .map((d) => JSON.parse(d));
}

describe('scripted content and tool_arguments', () => {
  it('content: a plain answer says exactly the text, whatever max_tokens says', async () => {
    await sim.setModel('gpt-ct', { script: [{ action: 'ok', content: CONTENT, times: 2 }, { action: 'ok', content: '' }] });
    let res = await client.chat.completions.create({ model: 'gpt-ct', messages: MSG });
    assert.equal(res.choices[0].message.content, CONTENT);
    assert.equal(res.choices[0].finish_reason, 'stop');
    assert.equal(res.usage.completion_tokens, pieceCount(CONTENT));
    res = await client.chat.completions.create({ model: 'gpt-ct', messages: MSG, max_tokens: 2 });
    assert.equal(res.choices[0].message.content, CONTENT);
    assert.equal(res.choices[0].finish_reason, 'stop');
    res = await client.chat.completions.create({ model: 'gpt-ct', messages: MSG });
    assert.equal(res.choices[0].message.content, '');
    assert.equal(res.usage.completion_tokens, 1);
  });

  it('content: a stream carries it in pieces of whole characters that join to the text', async () => {
    await sim.setModel('gpt-cs', { script: [{ action: 'trickle', interval_ms: 1, content: CONTENT }] });
    const stream = await client.chat.completions.create({
      model: 'gpt-cs',
      messages: MSG,
      stream: true,
      stream_options: { include_usage: true },
    });
    const { chunks, error } = await collect(stream);
    assert.equal(error, null);
    const pieces = chunks.slice(1, -2).map((c) => c.choices[0].delta.content);
    assert.equal(pieces.length, pieceCount(CONTENT));
    assert.ok(pieces.length > 1);
    assert.equal(pieces.join(''), CONTENT);
    for (const p of pieces) {
      const chars = [...p].length;
      assert.ok(chars >= 1 && chars <= 4, `piece ${JSON.stringify(p)}`);
      assert.ok(!p.includes('\ufffd'), 'no character split');
    }
    assert.equal(chunks.at(-2).choices[0].finish_reason, 'stop');
    assert.equal(chunks.at(-1).usage.completion_tokens, pieces.length);
    // cut: the events before the break are pieces of the same text.
    await sim.setModel('gpt-cs', { script: [{ action: 'cut', after_events: 3, content: CONTENT }] });
    const cut = await collect(await client.chat.completions.create({ model: 'gpt-cs', messages: MSG, stream: true }));
    assert.ok(cut.error);
    assert.equal(cut.chunks.length, 3);
    assert.ok(CONTENT.startsWith(cut.chunks.slice(1).map((c) => c.choices[0].delta.content).join('')));
  });

  it('tool_arguments come back verbatim, plain and streamed, JSON or not', async () => {
    const valid = '{ "city" : 42,\n  "extra": [true] }'; // JSON, but not what a schema wants
    await sim.setModel('gpt-ta', {
      script: [
        { action: 'ok', tool_arguments: BAD_ARGS, times: 2 },
        { action: 'delay', delay_ms: 1, tool_arguments: valid, times: 2 },
      ],
    });
    const messages = [{ role: 'user', content: 'weather?' }];
    let res = await client.chat.completions.create({ model: 'gpt-ta', messages, tools: TOOLS });
    assert.equal(res.choices[0].finish_reason, 'tool_calls');
    assert.equal(res.choices[0].message.tool_calls[0].function.name, 'get_weather');
    assert.equal(res.choices[0].message.tool_calls[0].function.arguments, BAD_ARGS);
    let { chunks, error } = await collect(await client.chat.completions.create({ model: 'gpt-ta', messages, tools: TOOLS, stream: true }));
    assert.equal(error, null);
    let deltas = chunks.flatMap((c) => c.choices[0].delta.tool_calls ?? []);
    assert.ok(deltas.length > 2, 'arguments come in several pieces');
    assert.equal(deltas.map((d) => d.function.arguments).join(''), BAD_ARGS);
    res = await client.chat.completions.create({ model: 'gpt-ta', messages, tools: TOOLS });
    assert.equal(res.choices[0].message.tool_calls[0].function.arguments, valid);
    ({ chunks, error } = await collect(await client.chat.completions.create({ model: 'gpt-ta', messages, tools: TOOLS, stream: true })));
    deltas = chunks.flatMap((c) => c.choices[0].delta.tool_calls ?? []);
    assert.equal(deltas.map((d) => d.function.arguments).join(''), valid);
    // Without tools in the request there is no call: tool_arguments change nothing.
    await sim.setModel('gpt-ta', { script: [{ action: 'ok', tool_arguments: BAD_ARGS }] });
    res = await client.chat.completions.create({ model: 'gpt-ta', messages });
    assert.equal(res.choices[0].message.content, TEXT12);
  });

  it('content turns a tool call into text unless tool_arguments are given too', async () => {
    await sim.setModel('gpt-tc', {
      script: [
        { action: 'ok', content: CONTENT },
        { action: 'ok', content: CONTENT, tool_arguments: BAD_ARGS },
        { action: 'ok', content: CONTENT, tool_arguments: BAD_ARGS },
      ],
    });
    const messages = [{ role: 'user', content: 'weather?' }];
    let res = await client.chat.completions.create({ model: 'gpt-tc', messages, tools: TOOLS });
    assert.equal(res.choices[0].message.content, CONTENT);
    assert.equal(res.choices[0].message.tool_calls, undefined);
    assert.equal(res.choices[0].finish_reason, 'stop');
    res = await client.chat.completions.create({ model: 'gpt-tc', messages, tools: TOOLS });
    assert.equal(res.choices[0].message.content, null);
    assert.equal(res.choices[0].message.tool_calls[0].function.arguments, BAD_ARGS);
    // tool_choice "none": no call to make, so the content is the answer.
    res = await client.chat.completions.create({ model: 'gpt-tc', messages, tools: TOOLS, tool_choice: 'none' });
    assert.equal(res.choices[0].message.content, CONTENT);
  });

  it('the step says first, then the model spec; "*" lends its own to models without one', async () => {
    await sim.setModel('gpt-pr', {
      content: 'model text',
      tool_arguments: '{"from":"model"}',
      script: [
        { action: 'ok', content: 'step text' },
        { action: 'delay', delay_ms: 1 },
        { action: 'ok', tool_arguments: '{"from":"step"}' },
      ],
    });
    const say = async (extra = {}) => {
      const res = await client.chat.completions.create({ model: 'gpt-pr', messages: MSG, ...extra });
      const m = res.choices[0].message;
      return m.tool_calls ? m.tool_calls[0].function.arguments : m.content;
    };
    assert.equal(await say(), 'step text');
    assert.equal(await say(), 'model text');
    // Per field: the step's tool_arguments, and the model's content does not stop the call.
    assert.equal(await say({ tools: TOOLS }), '{"from":"step"}');
    // The script is exhausted: the model's values still apply.
    assert.equal(await say({ tools: TOOLS }), '{"from":"model"}');
    assert.equal(await say(), 'model text');
    await sim.setModel('*', { content: 'star text' });
    const res = await client.chat.completions.create({ model: 'gpt-no-spec', messages: MSG });
    assert.equal(res.choices[0].message.content, 'star text');
    assert.equal(await say(), 'model text'); // a model with its own spec never looks at "*"
    const got = (await sim.requests('gpt-pr')).length;
    assert.equal(got, 6);
  });

  it('rejects content and tool_arguments of the wrong type, naming the step and field', async () => {
    await assert.rejects(sim.setModel('m', { script: [{ action: 'ok' }, { action: 'ok', content: 3 }] }),
      /HTTP 400: model m: script\[1\]: "content" must be a string/);
    await assert.rejects(sim.setModel('m', { script: [{ action: 'cut', tool_arguments: { a: 1 } }] }),
      /HTTP 400: model m: script\[0\]: "tool_arguments" must be a string/);
    await assert.rejects(sim.setModel('m', { script: [{ action: 'status', status: 500, content: 'x' }] }),
      /HTTP 400: model m: script\[0\]: "content" does not apply to action "status"/);
    await assert.rejects(sim.setModel('m', { content: ['x'] }), /HTTP 400: model m: "content" must be a string/);
    await assert.rejects(sim.setModel('m', { tool_arguments: null, content: false }), /"content" must be a string/);
  });

  it('every dialect says the scripted content and passes tool_arguments on', async () => {
    const script = (n) => ({ script: [{ action: 'ok', content: CONTENT, times: n }, { action: 'ok', tool_arguments: BAD_ARGS, times: 2 }] });
    const user = 'weather?';

    // DashScope and Azure: the OpenAI shapes under their own paths.
    const oaiLike = [
      ['ds-ct', '/compatible-mode/v1/chat/completions', { authorization: 'Bearer k' }, {}],
      ['az-ct', '/openai/deployments/az-ct/chat/completions?api-version=2024-10-21', { 'api-key': 'k' }, {}],
    ];
    for (const [model, p, headers] of oaiLike) {
      await sim.setModel(model, script(2));
      const body = { model, messages: [{ role: 'user', content: user }] };
      let r = await post(p, headers, body);
      assert.equal(r.status, 200, r.text);
      assert.equal(JSON.parse(r.text).choices[0].message.content, CONTENT);
      r = await post(p, headers, { ...body, stream: true });
      const text = sseData(r.text).flatMap((c) => c.choices ?? []).map((c) => c.delta?.content ?? '').join('');
      assert.equal(text, CONTENT, model);
      r = await post(p, headers, { ...body, tools: TOOLS });
      assert.equal(JSON.parse(r.text).choices[0].message.tool_calls[0].function.arguments, BAD_ARGS);
      r = await post(p, headers, { ...body, tools: TOOLS, stream: true });
      const args = sseData(r.text).flatMap((c) => c.choices ?? []).flatMap((c) => c.delta?.tool_calls ?? []);
      assert.equal(args.map((t) => t.function.arguments).join(''), BAD_ARGS, model);
    }

    // Anthropic: text blocks and text_delta events; tool_use input, input_json_delta events.
    const ah = { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' };
    const ab = { model: 'an-ct', max_tokens: 5, messages: [{ role: 'user', content: user }] };
    const atools = { tools: [{ name: 'get_weather', input_schema: { type: 'object' } }], tool_choice: { type: 'any' } };
    await sim.setModel('an-ct', {
      script: [
        { action: 'ok', content: CONTENT, times: 2 },
        { action: 'ok', tool_arguments: BAD_ARGS, times: 2 },
        { action: 'ok', tool_arguments: '{"city":\n"Köln"}' },
      ],
    });
    let r = await post('/v1/messages', ah, ab);
    let msg = JSON.parse(r.text);
    assert.equal(msg.content[0].text, CONTENT);
    assert.equal(msg.stop_reason, 'end_turn');
    assert.equal(msg.usage.output_tokens, pieceCount(CONTENT));
    r = await post('/v1/messages', ah, { ...ab, stream: true });
    let evs = sseData(r.text);
    assert.equal(evs.filter((e) => e.delta?.type === 'text_delta').map((e) => e.delta.text).join(''), CONTENT);
    r = await post('/v1/messages', ah, { ...ab, ...atools });
    msg = JSON.parse(r.text);
    assert.equal(msg.stop_reason, 'tool_use');
    assert.equal(msg.content.at(-1).input, BAD_ARGS); // not JSON: sent as a string
    r = await post('/v1/messages', ah, { ...ab, ...atools, stream: true });
    evs = sseData(r.text);
    assert.equal(evs.filter((e) => e.delta?.type === 'input_json_delta').map((e) => e.delta.partial_json).join(''), BAD_ARGS);
    r = await post('/v1/messages', ah, { ...ab, ...atools });
    assert.deepEqual(JSON.parse(r.text).content.at(-1).input, { city: 'Köln' }); // JSON: as a value

    // Gemini: text parts, one per streamed event; functionCall.args.
    const gh = { 'x-goog-api-key': 'k' };
    const gb = { contents: [{ role: 'user', parts: [{ text: user }] }] };
    const gtools = { tools: [{ functionDeclarations: [{ name: 'get_weather', parameters: { type: 'OBJECT' } }] }] };
    await sim.setModel('gem-ct', {
      script: [
        { action: 'ok', content: CONTENT, times: 2 },
        { action: 'ok', tool_arguments: BAD_ARGS },
        { action: 'ok', tool_arguments: '{"city":\n"Köln"}', times: 2 },
      ],
    });
    r = await post('/v1beta/models/gem-ct:generateContent', gh, gb);
    let g = JSON.parse(r.text);
    assert.equal(g.candidates[0].content.parts[0].text, CONTENT);
    assert.equal(g.usageMetadata.candidatesTokenCount, pieceCount(CONTENT));
    r = await post('/v1beta/models/gem-ct:streamGenerateContent?alt=sse', gh, gb);
    evs = sseData(r.text);
    assert.equal(evs.length, pieceCount(CONTENT));
    assert.equal(evs.map((e) => e.candidates[0].content.parts[0].text).join(''), CONTENT);
    r = await post('/v1beta/models/gem-ct:generateContent', gh, { ...gb, ...gtools });
    assert.equal(JSON.parse(r.text).candidates[0].content.parts[0].functionCall.args, BAD_ARGS);
    r = await post('/v1beta/models/gem-ct:generateContent', gh, { ...gb, ...gtools });
    assert.deepEqual(JSON.parse(r.text).candidates[0].content.parts[0].functionCall.args, { city: 'Köln' });
    r = await post('/v1beta/models/gem-ct:streamGenerateContent?alt=sse', gh, { ...gb, ...gtools });
    evs = sseData(r.text); // the newline inside the JSON must not break the SSE framing
    assert.equal(evs.length, 1);
    assert.deepEqual(evs[0].candidates[0].content.parts[0].functionCall.args, { city: 'Köln' });
  });
});

describe('requests the sim refuses', () => {
  it('401 without an Authorization header, and for sk-sim-bad keys', async () => {
    const res = await fetch(`${sim.base}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-auth', messages: MSG }),
    });
    assert.equal(res.status, 401);
    assert.equal((await res.json()).error.type, 'invalid_request_error');
    const bad = new OpenAI({ baseURL: sim.base, apiKey: 'sk-sim-bad', maxRetries: 0 });
    await assert.rejects(bad.chat.completions.create({ model: 'gpt-auth', messages: MSG }), (err) => {
      assert.ok(err instanceof OpenAI.AuthenticationError);
      assert.equal(err.status, 401);
      assert.equal(err.code, 'invalid_api_key');
      return true;
    });
    const st = await modelStats('gpt-auth');
    assert.equal(st.calls, 2);
    assert.equal(st.faults, 2);
  });

  it('400 for malformed JSON and missing fields, 404 for unknown paths', async () => {
    const post = (body) =>
      fetch(`${sim.base}/chat/completions`, {
        method: 'POST',
        headers: { authorization: 'Bearer k', 'content-type': 'application/json' },
        body,
      });
    let res = await post('{"model": "x", "messages": [');
    assert.equal(res.status, 400);
    assert.equal((await res.json()).error.type, 'invalid_request_error');
    res = await post('{"messages": []}');
    assert.equal(res.status, 400);
    await res.arrayBuffer();
    res = await fetch(`${sim.url}/v1/nothing`, { headers: { authorization: 'Bearer k' } });
    assert.equal(res.status, 404);
    await res.arrayBuffer();
  });
});

describe('faults', () => {
  it('status: any code, extra headers, default and overridden OpenAI error bodies', async () => {
    await sim.setModel('gpt-f', {
      script: [
        { action: 'status', status: 429, headers: { 'retry-after': '1', 'retry-after-ms': '1500' } },
        { action: 'status', status: 429, error_code: 'insufficient_quota', error_type: 'insufficient_quota', message: 'You exceeded your current quota' },
        { action: 'status', status: 503 },
        { action: 'status', status: 529 },
        { action: 'status', status: 502, body: '<html>bad gateway</html>' },
      ],
    });
    await assert.rejects(client.chat.completions.create({ model: 'gpt-f', messages: MSG }), (err) => {
      assert.ok(err instanceof OpenAI.RateLimitError);
      assert.equal(err.code, 'rate_limit_exceeded');
      assert.equal(header(err, 'retry-after'), '1');
      assert.equal(header(err, 'retry-after-ms'), '1500');
      return true;
    });
    await assert.rejects(client.chat.completions.create({ model: 'gpt-f', messages: MSG }), (err) => {
      assert.equal(err.status, 429);
      assert.equal(err.code, 'insufficient_quota');
      assert.equal(err.type, 'insufficient_quota');
      assert.match(err.message, /exceeded your current quota/);
      return true;
    });
    await assert.rejects(client.chat.completions.create({ model: 'gpt-f', messages: MSG }), (err) => {
      assert.ok(err instanceof OpenAI.InternalServerError);
      assert.equal(err.status, 503);
      assert.equal(err.code, 'server_is_overloaded');
      return true;
    });
    await assert.rejects(client.chat.completions.create({ model: 'gpt-f', messages: MSG }), (err) => {
      assert.equal(err.status, 529);
      assert.equal(err.code, 'overloaded');
      return true;
    });
    const res = await fetch(`${sim.base}/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer k' },
      body: JSON.stringify({ model: 'gpt-f', messages: MSG }),
    });
    assert.equal(res.status, 502);
    assert.equal(await res.text(), '<html>bad gateway</html>');
    const st = await modelStats('gpt-f');
    assert.equal(st.calls, 5);
    assert.equal(st.faults, 5);
    assert.equal(st.ok, 0);
  });

  it('delay: waits before the head, then answers normally', async () => {
    await sim.setModel('gpt-d', { script: [{ action: 'delay', delay_ms: 300 }, { action: 'status', status: 500, delay_ms: 200 }] });
    let t0 = Date.now();
    const res = await client.chat.completions.create({ model: 'gpt-d', messages: MSG });
    assert.equal(res.choices[0].message.content, TEXT12);
    assert.ok(Date.now() - t0 >= 280, `took ${Date.now() - t0} ms`);
    t0 = Date.now();
    await assert.rejects(client.chat.completions.create({ model: 'gpt-d', messages: MSG }), { status: 500 });
    assert.ok(Date.now() - t0 >= 180);
  });

  it('reset: the connection is reset before any response byte', async () => {
    await sim.setModel('gpt-r', { script: [{ action: 'reset' }] });
    await assert.rejects(client.chat.completions.create({ model: 'gpt-r', messages: MSG }), (err) => {
      assert.ok(err instanceof OpenAI.APIConnectionError);
      return true;
    });
    const body = JSON.stringify({ model: 'gpt-r', messages: MSG });
    await sim.setModel('gpt-r', { script: [{ action: 'reset' }] });
    const raw = await rawRequest(
      sim.port,
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      { timeoutMs: 3000 },
    );
    assert.equal(raw.length, 0);
    assert.equal((await modelStats('gpt-r')).completed, 2);
  });

  it('hang: never answers; the client aborting is counted as cancelled', async () => {
    await sim.setModel('gpt-h', { script: [{ action: 'hang' }] });
    const ac = new AbortController();
    const t0 = Date.now();
    setTimeout(() => ac.abort(), 300);
    await assert.rejects(client.chat.completions.create({ model: 'gpt-h', messages: MSG }, { signal: ac.signal }), (err) => {
      assert.ok(err instanceof OpenAI.APIUserAbortError);
      return true;
    });
    assert.ok(Date.now() - t0 >= 280);
    const st = await waitFor(async () => {
      const s = await modelStats('gpt-h');
      return s.cancelled === 1 ? s : null;
    }, { what: 'cancelled = 1' });
    assert.equal(st.in_flight, 0);
    assert.equal(st.completed, 0);
  });

  it('cut: a 200 stream stops after N events without [DONE]', async () => {
    await sim.setModel('gpt-c', { script: [{ action: 'cut', after_events: 3 }, { action: 'cut' }] });
    const stream = await client.chat.completions.create({ model: 'gpt-c', messages: MSG, stream: true });
    const { chunks, error } = await collect(stream);
    assert.ok(error, 'the SDK sees the stream break');
    assert.equal(chunks.length, 3);
    assert.equal(chunks[0].choices[0].delta.role, 'assistant');
    assert.equal(chunks[2].choices[0].delta.content, ' héllo');
    // Non-stream: Content-Length promises more than arrives.
    await assert.rejects(client.chat.completions.create({ model: 'gpt-c', messages: MSG }));
    const st = await modelStats('gpt-c');
    assert.equal(st.faults, 2);
    assert.equal(st.completed, 2);
  });

  it('error_200: an error object under HTTP 200, in-band for streams', async () => {
    await sim.setModel('gpt-e', {
      script: [{ action: 'error_200' }, { action: 'error_200', after_events: 2, error_code: 'boom', message: 'in-band failure' }],
    });
    const res = await client.chat.completions.create({ model: 'gpt-e', messages: MSG });
    assert.equal(res.error.type, 'server_error');
    assert.equal(res.choices, undefined);
    const stream = await client.chat.completions.create({ model: 'gpt-e', messages: MSG, stream: true });
    const { chunks, error } = await collect(stream);
    assert.equal(chunks.length, 2);
    assert.ok(error instanceof OpenAI.APIError);
    assert.match(error.message, /in-band failure/);
  });

  it('malformed: invalid JSON bodies and SSE data lines', async () => {
    await sim.setModel('gpt-m', { script: [{ action: 'malformed', times: 2 }] });
    await assert.rejects(client.chat.completions.create({ model: 'gpt-m', messages: MSG }));
    const stream = await client.chat.completions.create({ model: 'gpt-m', messages: MSG, stream: true });
    const { chunks, error } = await collect(stream);
    assert.equal(chunks.length, 1); // the role chunk, then the bad line
    assert.ok(error, 'parsing the malformed event fails');
  });

  it('trickle and token_delay_ms pace the stream with timers', async () => {
    await sim.setModel('gpt-t', { tokens: 4, script: [{ action: 'trickle', interval_ms: 60 }] });
    let t0 = Date.now();
    let { chunks, error } = await collect(await client.chat.completions.create({ model: 'gpt-t', messages: MSG, stream: true }));
    let took = Date.now() - t0;
    assert.equal(error, null);
    assert.equal(chunks.length, 6);
    // 6 events and [DONE]: 6 pauses of 60 ms; loosely bounded.
    assert.ok(took >= 300 && took < 5000, `trickle took ${took} ms`);
    await sim.setModel('gpt-t', { tokens: 4, token_delay_ms: 40 });
    t0 = Date.now();
    ({ chunks, error } = await collect(await client.chat.completions.create({ model: 'gpt-t', messages: MSG, stream: true })));
    took = Date.now() - t0;
    assert.equal(error, null);
    assert.equal(chunks.length, 6);
    assert.ok(took >= 200 && took < 5000, `token_delay_ms took ${took} ms`);
    // A trickled non-stream body arrives in pieces but whole.
    await sim.setModel('gpt-t', { script: [{ action: 'trickle', interval_ms: 50 }] });
    t0 = Date.now();
    const res = await client.chat.completions.create({ model: 'gpt-t', messages: MSG });
    assert.equal(res.choices[0].message.content, TEXT12);
    assert.ok(Date.now() - t0 >= 150);
  });
});

describe('scripts and counters', () => {
  it('consumes steps in order, honours times, then succeeds (or repeats)', async () => {
    await sim.setModel('gpt-s', { script: [{ action: 'status', status: 500, times: 2 }, { action: 'status', status: 429 }] });
    const outcome = async () => {
      try {
        await client.chat.completions.create({ model: 'gpt-s', messages: MSG });
        return 200;
      } catch (err) {
        return err.status;
      }
    };
    const seen = [];
    for (let i = 0; i < 5; i++) seen.push(await outcome());
    assert.deepEqual(seen, [500, 500, 429, 200, 200]);
    await sim.setModel('gpt-s', { repeat: true, script: [{ action: 'status', status: 503 }, { action: 'ok', times: 2 }] });
    const again = [];
    for (let i = 0; i < 6; i++) again.push(await outcome());
    assert.deepEqual(again, [503, 200, 200, 503, 200, 200]);
    const st = await modelStats('gpt-s');
    assert.equal(st.calls, 11);
    assert.equal(st.faults, 5);
    assert.equal(st.ok, 6);
  });

  it('"*" is one script shared by every model without its own', async () => {
    await sim.setModel('*', { script: [{ action: 'status', status: 500, times: 2 }] });
    await sim.setModel('own', { script: [] });
    await assert.rejects(client.chat.completions.create({ model: 'a', messages: MSG }), { status: 500 });
    await client.chat.completions.create({ model: 'own', messages: MSG });
    await assert.rejects(client.chat.completions.create({ model: 'b', messages: MSG }), { status: 500 });
    await client.chat.completions.create({ model: 'a', messages: MSG });
  });

  it('counts a stream aborted mid-way as cancelled', async () => {
    await sim.setModel('gpt-x', { tokens: 50, token_delay_ms: 50 });
    const stream = await client.chat.completions.create({ model: 'gpt-x', messages: MSG, stream: true });
    const { chunks } = await collect(stream, { stopAfter: 3 }); // break → the SDK aborts
    assert.equal(chunks.length, 3);
    const st = await waitFor(async () => {
      const s = await modelStats('gpt-x');
      return s.cancelled === 1 ? s : null;
    }, { what: 'cancelled = 1' });
    assert.equal(st.calls, 1);
    assert.equal(st.completed, 0);
    assert.equal(st.in_flight, 0);
    // A finished stream is completed, not cancelled.
    await sim.setModel('gpt-x', { tokens: 3, token_delay_ms: 0 });
    await collect(await client.chat.completions.create({ model: 'gpt-x', messages: MSG, stream: true }));
    const s2 = await modelStats('gpt-x');
    assert.equal(s2.completed, 1);
    assert.equal(s2.cancelled, 1);
    assert.equal((await sim.stats()).total, 2);
  });

  it('logs requests per model with lower-case headers and parsed bodies, newest last', async () => {
    const other = new OpenAI({ baseURL: sim.base, apiKey: 'sk-rotated-2', maxRetries: 0 });
    await client.chat.completions.create({ model: 'gpt-log', messages: MSG, max_tokens: 2 });
    await other.chat.completions.create({ model: 'gpt-log', messages: MSG, max_tokens: 3 });
    await client.chat.completions.create({ model: 'gpt-other', messages: MSG });
    const reqs = await sim.requests('gpt-log');
    assert.equal(reqs.length, 2);
    assert.equal(reqs[0].method, 'POST');
    assert.equal(reqs[0].path, '/v1/chat/completions');
    assert.equal(reqs[0].headers.authorization, 'Bearer sk-test-1');
    assert.equal(reqs[1].headers.authorization, 'Bearer sk-rotated-2');
    assert.ok(Object.keys(reqs[0].headers).every((k) => k === k.toLowerCase()));
    assert.equal(reqs[0].body.model, 'gpt-log');
    assert.equal(reqs[0].body.max_tokens, 2);
    assert.equal(reqs[1].body.max_tokens, 3);
    assert.ok(reqs[0].seq < reqs[1].seq);
    assert.equal((await sim.requests()).length, 3);
    // Only the last 32 are kept.
    for (let i = 0; i < 35; i++) await client.chat.completions.create({ model: 'gpt-log', messages: MSG, max_tokens: 1, seed: i });
    const last = await sim.requests('gpt-log');
    assert.equal(last.length, 32);
    assert.equal(last.at(-1).body.seed, 34);
    assert.equal(last[0].body.seed, 3);
  });

  it('POST /_sim/reset clears scripts, counters and logs', async () => {
    await sim.setModel('gpt-z', { script: [{ action: 'status', status: 500 }] });
    await client.chat.completions.create({ model: 'gpt-y', messages: MSG });
    await sim.reset();
    assert.deepEqual(await sim.stats(), { total: 0, models: {} });
    assert.deepEqual(await sim.requests(), []);
    const res = await client.chat.completions.create({ model: 'gpt-z', messages: MSG });
    assert.equal(res.choices[0].finish_reason, 'stop');
  });

  it('rejects invalid specs with a reason', async () => {
    await assert.rejects(sim.setModel('m', { script: [{ action: 'explode' }] }), /unknown action/);
    await assert.rejects(sim.setModel('m', { script: [{ action: 'status' }] }), /needs "status"/);
    await assert.rejects(sim.setModel('m', { tokenz: 3 }), /unknown field/);
    await assert.rejects(sim.setModel('m', '{not json'), /invalid JSON/);
  });
});

describe('process', () => {
  it('loads --script at start, uses --token-delay-ms, and exits 0 on SIGTERM', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'sim-script-'));
    const file = path.join(dir, 'script.json');
    writeFileSync(file, JSON.stringify({ models: { 'gpt-file': { tokens: 2, script: [{ action: 'status', status: 418 }] } } }));
    const other = await startSim({ args: ['--script', file, '--token-delay-ms', '30'] });
    try {
      const c = new OpenAI({ baseURL: other.base, apiKey: 'k', maxRetries: 0 });
      await assert.rejects(c.chat.completions.create({ model: 'gpt-file', messages: MSG }), { status: 418 });
      const res = await c.chat.completions.create({ model: 'gpt-file', messages: MSG });
      assert.equal(res.choices[0].message.content, 'Hello héllo');
      const t0 = Date.now();
      const { chunks } = await collect(await c.chat.completions.create({ model: 'paced', messages: MSG, stream: true, max_tokens: 4 }));
      assert.equal(chunks.length, 6);
      assert.ok(Date.now() - t0 >= 150, 'the CLI default pacing applies');
      // A hanging request must not keep the process from exiting.
      await other.setModel('gpt-hang', { script: [{ action: 'hang' }] });
      const pending = c.chat.completions.create({ model: 'gpt-hang', messages: MSG }).catch((e) => e);
      await waitFor(async () => (await other.stats()).models['gpt-hang']?.in_flight === 1, { what: 'hang in flight' });
      const { code, signal } = await other.stop();
      assert.equal(signal, null);
      assert.equal(code, 0, other.logs());
      assert.doesNotMatch(other.logs(), /Sanitizer|runtime error/);
      assert.ok((await pending) instanceof OpenAI.APIConnectionError);
    } finally {
      await other.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a bad script file with exit code 2', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'sim-script-'));
    const file = path.join(dir, 'bad.json');
    writeFileSync(file, JSON.stringify({ models: { m: { script: [{ action: 'nope' }] } } }));
    try {
      await assert.rejects(startSim({ args: ['--script', file] }), /exited \(2\)[\s\S]*unknown action/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
