// SPDX-License-Identifier: MIT
// End to end: the official @anthropic-ai/sdk, unchanged, against bascule's POST /v1/messages
// in front of an OpenAI-dialect bascule-sim model -- plain, streaming (raw events, the
// messages.stream() helper and finalMessage()), a tool-use round trip, and errors (unknown
// model, invalid request, an upstream 400, a stream cut after the commit point).
// See docs/internals/anthropic-inbound.md.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { startSim, startGateway } from '../lib/harness.mjs';

let sim, gw, client;

before(async () => {
  sim = await startSim();
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 2
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-e2e"], health: { probe: none } }
  gem: { kind: gemini, base_url: "${sim.url}/v1beta", keys: ["gm-e2e"], health: { probe: none } }
  ant: { kind: anthropic, base_url: "${sim.url}/anthropic/v1", keys: ["sk-ant-e2e"], health: { probe: none } }
targets:
  gpt@sim: { provider: sim, model: gpt-anth, capabilities: [text, streaming, tools] }
  cont@sim: { provider: sim, model: gpt-anth-cont }
  cont@ant: { provider: ant, model: claude-anth-cont }
  flash@gem: { provider: gem, model: gemini-3-flash, capabilities: [text, streaming, tools] }
routes:
  assistant: { primary: [gpt@sim] }
  continued: { primary: [cont@sim], envelope: { on_stream_failure: continue } }
  continued-native: { primary: [cont@ant], envelope: { on_stream_failure: continue } }
  via-gemini: { primary: [flash@gem] }
`,
  });
  // The SDK appends /v1/messages to its baseURL itself: give it the bare gateway URL.
  client = new Anthropic({ baseURL: gw.url, apiKey: 'sk-ant-any', maxRetries: 0 });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

const tools = [{
  name: 'get_weather',
  description: 'weather for a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
}];

/** The last request the sim saw for our model (the canonical OpenAI form bascule sent). */
async function lastUpstream() {
  const seen = await sim.requests('gpt-anth');
  assert.ok(seen.length > 0, 'the sim saw a request');
  return seen[seen.length - 1].body;
}

test('a plain message comes back in Anthropic shape', async () => {
  await sim.reset();
  const { data: msg, response } = await client.messages
    .create({
      model: 'assistant',
      max_tokens: 64,
      system: 'Answer briefly.',
      messages: [{ role: 'user', content: 'hello there' }],
    })
    .withResponse();
  assert.equal(msg.type, 'message');
  assert.equal(msg.role, 'assistant');
  assert.equal(msg.model, 'gpt-anth'); // the upstream model the answer came from
  assert.match(msg.id, /^msg_/);
  assert.equal(msg.content[0].type, 'text');
  assert.match(msg.content[0].text, /héllo wörld/); // UTF-8 intact through both translations
  assert.equal(msg.stop_reason, 'end_turn');
  assert.equal(msg.stop_sequence, null);
  assert.ok(msg.usage.input_tokens > 0);
  assert.ok(msg.usage.output_tokens > 0);
  assert.equal(response.headers.get('x-bascule-target'), 'gpt@sim');
  assert.match(response.headers.get('x-request-id') ?? '', /\S/);
  const up = await lastUpstream();
  assert.equal(up.model, 'gpt-anth');
  assert.deepEqual(up.messages[0], { role: 'system', content: 'Answer briefly.' });
  assert.deepEqual(up.messages[1], { role: 'user', content: 'hello there' });
  assert.equal(up.max_tokens, 64);
});

test('max_tokens that bites gives stop_reason max_tokens', async () => {
  const msg = await client.messages.create({
    model: 'assistant', max_tokens: 3, messages: [{ role: 'user', content: 'hello' }],
  });
  assert.equal(msg.stop_reason, 'max_tokens');
  assert.equal(msg.usage.output_tokens, 3);
});

test('a raw stream has the exact Anthropic event order', async () => {
  const stream = await client.messages.create({
    model: 'assistant', max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'stream please' }],
  });
  const types = [];
  let text = '';
  let final = null;
  for await (const ev of stream) {
    types.push(ev.type);
    if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') text += ev.delta.text;
    if (ev.type === 'message_delta') final = ev;
  }
  assert.equal(types[0], 'message_start');
  assert.equal(types[1], 'content_block_start');
  assert.equal(types.at(-3), 'content_block_stop');
  assert.equal(types.at(-2), 'message_delta');
  assert.equal(types.at(-1), 'message_stop');
  assert.ok(types.slice(2, -3).every((t) => t === 'content_block_delta'));
  assert.match(text, /héllo wörld/);
  assert.equal(final.delta.stop_reason, 'end_turn');
  assert.ok(final.usage.output_tokens > 0);
  assert.ok(final.usage.input_tokens > 0);
});

test('messages.stream() and finalMessage() assemble the answer', async () => {
  let streamed = '';
  const stream = client.messages.stream({
    model: 'assistant', max_tokens: 64, messages: [{ role: 'user', content: 'hello' }],
  });
  stream.on('text', (t) => { streamed += t; });
  const msg = await stream.finalMessage();
  assert.equal(msg.content.length, 1);
  assert.equal(msg.content[0].type, 'text');
  assert.equal(msg.content[0].text, streamed);
  assert.equal(msg.stop_reason, 'end_turn');
  assert.ok(msg.usage.input_tokens > 0);
  assert.ok(msg.usage.output_tokens > 0);
  const up = await lastUpstream();
  assert.equal(up.stream, true);
  assert.equal(up.stream_options?.include_usage, true);
});

test('tool use, then the tool result on the next turn', async () => {
  const messages = [{ role: 'user', content: 'Weather in Oslo?' }];
  const first = await client.messages.create({ model: 'assistant', max_tokens: 128, tools, messages });
  assert.equal(first.stop_reason, 'tool_use');
  const call = first.content.find((b) => b.type === 'tool_use');
  assert.ok(call, 'a tool_use block came back');
  assert.equal(call.name, 'get_weather');
  assert.equal(typeof call.input, 'object');
  assert.deepEqual(call.input, { city: 'Oslo' }); // the sim answers an instance of input_schema
  let up = await lastUpstream();
  assert.equal(up.tools[0].type, 'function');
  assert.equal(up.tools[0].function.name, 'get_weather');
  assert.deepEqual(up.tools[0].function.parameters, tools[0].input_schema);

  messages.push({ role: 'assistant', content: first.content });
  messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '{"temp_c":4}' }] });
  const second = await client.messages.create({ model: 'assistant', max_tokens: 128, tools, messages });
  assert.equal(second.stop_reason, 'end_turn');
  assert.equal(second.content[0].type, 'text');
  assert.ok(second.content[0].text.length > 0);
  up = await lastUpstream();
  const asst = up.messages[1];
  assert.equal(asst.role, 'assistant');
  assert.equal(asst.tool_calls[0].id, call.id);
  assert.deepEqual(JSON.parse(asst.tool_calls[0].function.arguments), call.input);
  assert.deepEqual(up.messages[2], { role: 'tool', content: '{"temp_c":4}', tool_call_id: call.id });
});

test('a streamed tool call: input_json_delta fragments parse into the input', async () => {
  const stream = client.messages.stream({
    model: 'assistant', max_tokens: 128, tools,
    tool_choice: { type: 'tool', name: 'get_weather' },
    messages: [{ role: 'user', content: 'Weather in Tromsø, please?' }],
  });
  let fragments = 0;
  stream.on('inputJson', () => { fragments++; });
  const msg = await stream.finalMessage();
  assert.equal(msg.stop_reason, 'tool_use');
  const call = msg.content.find((b) => b.type === 'tool_use');
  assert.ok(call);
  assert.equal(call.name, 'get_weather');
  assert.deepEqual(call.input, { city: 'Oslo' });
  assert.ok(fragments > 1, 'the arguments arrived in several fragments');
  const up = await lastUpstream();
  assert.deepEqual(up.tool_choice, { type: 'function', function: { name: 'get_weather' } });
});

test('unknown model -> NotFoundError with an Anthropic error body', async () => {
  await assert.rejects(
    client.messages.create({ model: 'no-such-route', max_tokens: 8, messages: [{ role: 'user', content: 'x' }] }),
    (e) => {
      assert.ok(e instanceof Anthropic.NotFoundError, `got ${e?.constructor?.name}`);
      assert.equal(e.status, 404);
      assert.equal(e.error?.type, 'error');
      assert.equal(e.error?.error?.type, 'not_found_error');
      assert.match(e.error?.error?.message, /no-such-route/);
      return true;
    },
  );
});

test('an invalid request -> BadRequestError (invalid_request_error), nothing sent upstream', async () => {
  await sim.reset();
  await assert.rejects(
    client.messages.create({ model: 'assistant', messages: [{ role: 'user', content: 'x' }] }),
    (e) => {
      assert.ok(e instanceof Anthropic.BadRequestError, `got ${e?.constructor?.name}`);
      assert.equal(e.error?.error?.type, 'invalid_request_error');
      assert.match(e.error?.error?.message, /max_tokens/);
      return true;
    },
  );
  assert.equal((await sim.requests('gpt-anth')).length, 0);
  // Raw bytes that are not JSON get the same shape.
  const res = await fetch(`${gw.url}/v1/messages`, {
    method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: '{"model":',
  });
  assert.equal(res.status, 400);
  const body = await res.json();
  assert.equal(body.type, 'error');
  assert.equal(body.error.type, 'invalid_request_error');
});

test('an upstream 400 comes back as an Anthropic invalid_request_error', async () => {
  await sim.setModel('gpt-anth', { script: [{ action: 'status', status: 400, message: 'bad thing upstream' }] });
  try {
    await assert.rejects(
      client.messages.create({ model: 'assistant', max_tokens: 8, messages: [{ role: 'user', content: 'x' }] }),
      (e) => {
        assert.ok(e instanceof Anthropic.BadRequestError, `got ${e?.constructor?.name}`);
        assert.equal(e.error?.type, 'error');
        assert.equal(e.error?.error?.type, 'invalid_request_error');
        return true;
      },
    );
  } finally {
    await sim.deleteModel('gpt-anth');
  }
});

test('a stream cut after the commit point ends with an Anthropic error event', async () => {
  await sim.setModel('gpt-anth', { script: [{ action: 'cut', after_events: 4 }] });
  try {
    const stream = client.messages.stream({
      model: 'assistant', max_tokens: 64, messages: [{ role: 'user', content: 'hello' }],
    });
    let text = '';
    stream.on('text', (t) => { text += t; });
    await assert.rejects(stream.finalMessage(), (e) => {
      assert.ok(e instanceof Anthropic.APIError, `got ${e?.constructor?.name}: ${e?.message}`);
      assert.equal(e.error?.type, 'error');
      assert.match(e.error?.error?.type ?? '', /^(api_error|overloaded_error)$/);
      return true;
    });
    assert.ok(text.length > 0, 'some text was delivered before the cut');
  } finally {
    await sim.deleteModel('gpt-anth');
  }
});

// Anthropic tool_use blocks have nowhere to carry Gemini's thought signature, so a Gemini 3
// model gets the documented placeholder on the next turn (docs/providers.md §3.4).
test('an Anthropic client reaches a Gemini-dialect target: plain, streaming and tools', async () => {
  const msg = await client.messages.create({
    model: 'via-gemini', max_tokens: 64, messages: [{ role: 'user', content: 'hello gemini' }] });
  assert.equal(msg.type, 'message');
  assert.ok(msg.content[0].text.length > 0);
  assert.ok(msg.usage.output_tokens > 0);
  const stream = client.messages.stream({
    model: 'via-gemini', max_tokens: 64, messages: [{ role: 'user', content: 'stream it' }] });
  const final = await stream.finalMessage();
  assert.ok(final.content[0].text.length > 0);
  assert.equal(final.stop_reason, 'end_turn');
  const call = await client.messages.create({
    model: 'via-gemini', max_tokens: 64, tools, messages: [{ role: 'user', content: 'weather in Oslo?' }] });
  assert.equal(call.stop_reason, 'tool_use');
  const use = call.content.find((b) => b.type === 'tool_use');
  assert.equal(use.name, 'get_weather');
  assert.equal(typeof use.input.city, 'string');
  const next = await client.messages.create({
    model: 'via-gemini', max_tokens: 64, tools,
    messages: [
      { role: 'user', content: 'weather in Oslo?' },
      { role: 'assistant', content: call.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: '4 degrees' }] },
    ] });
  assert.equal(next.stop_reason, 'end_turn');
  // The tool result reached Gemini as a functionResponse.
  const seen = await sim.requests('gemini-3-flash');
  const body = seen[seen.length - 1].body;
  const parts = body.contents.flatMap((c) => c.parts);
  assert.ok(parts.some((p) => p.functionResponse && p.functionResponse.name === 'get_weather'));
});

test('a stream cut mid-answer and continued reads as one normal message', async () => {
  await sim.setModel('gpt-anth-cont', { tokens: 60 });
  const whole = (await client.messages.create({ model: 'continued', max_tokens: 200,
    messages: [{ role: 'user', content: 'hello' }] })).content[0].text;
  await sim.setModel('gpt-anth-cont', { tokens: 60, script: [{ action: 'cut', after_events: 41 }] });
  const final = await client.messages.stream({ model: 'continued', max_tokens: 200,
    messages: [{ role: 'user', content: 'hello' }] }).finalMessage();
  assert.equal(final.content.length, 1);
  assert.equal(final.content[0].text, whole);
  assert.equal(final.stop_reason, 'end_turn');
  assert.equal((await sim.stats()).models['gpt-anth-cont'].calls, 3);
});

test('a pass-through stream (Anthropic target) cut mid-answer and continued reads as one normal message', async () => {
  await sim.setModel('claude-anth-cont', { tokens: 60 });
  const whole = (await client.messages.create({ model: 'continued-native', max_tokens: 200,
    messages: [{ role: 'user', content: 'hello' }] })).content[0].text;
  // message_start, content_block_start, ping, then 40 of the 60 text deltas: the cut.
  await sim.setModel('claude-anth-cont', { tokens: 60, script: [{ action: 'cut', after_events: 43 }] });
  const stream = client.messages.stream({ model: 'continued-native', max_tokens: 200,
    messages: [{ role: 'user', content: 'hello' }] });
  const seen = [];
  stream.on('streamEvent', (e) => seen.push(e.type));
  const final = await stream.finalMessage();
  assert.equal(final.content.length, 1);
  assert.equal(final.content[0].type, 'text');
  assert.equal(final.content[0].text, whole);
  assert.equal(final.stop_reason, 'end_turn');
  assert.match(final.id, /^msg_sim_/);
  assert.ok(final.usage.output_tokens >= 60, JSON.stringify(final.usage));
  assert.equal(seen.filter((t) => t === 'message_start').length, 1);
  assert.equal(seen.filter((t) => t === 'content_block_start').length, 1);
  assert.equal(seen.at(-1), 'message_stop');
  assert.equal((await sim.stats()).models['claude-anth-cont'].calls, 3);
});
