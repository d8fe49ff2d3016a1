// End to end: the official openai SDK, unchanged, against bascule in front of
// bascule-sim — plain, streaming with usage, tool calls, model listing, errors.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startSim, startGateway } from '../lib/harness.mjs';

let sim, gw, client;

before(async () => {
  sim = await startSim();
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 2
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-e2e"], health: { probe: none } }
targets:
  gpt@sim: { provider: sim, model: gpt-sim, capabilities: [text, streaming, tools] }
  cont@sim: { provider: sim, model: gpt-cont }
routes:
  assistant: { primary: [gpt@sim] }
  continued: { primary: [cont@sim], envelope: { on_stream_failure: continue } }
`,
  });
  client = new OpenAI({ baseURL: gw.base, apiKey: 'any' });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

const tools = [{
  type: 'function',
  function: { name: 'get_weather', description: 'weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
}];

test('tool call, then the tool result on the next turn', async () => {
  const first = await client.chat.completions.create({
    model: 'assistant', tools, messages: [{ role: 'user', content: 'Weather in Oslo?' }] });
  const call = first.choices[0].message.tool_calls?.[0];
  assert.ok(call, 'a tool call came back');
  assert.equal(first.choices[0].finish_reason, 'tool_calls');
  assert.equal(call.function.name, 'get_weather');
  assert.doesNotThrow(() => JSON.parse(call.function.arguments));
  const second = await client.chat.completions.create({
    model: 'assistant', tools,
    messages: [
      { role: 'user', content: 'Weather in Oslo?' },
      { role: 'assistant', content: null, tool_calls: [call] },
      { role: 'tool', tool_call_id: call.id, content: '{"temp_c":4}' },
    ] });
  assert.equal(second.choices[0].finish_reason, 'stop');
  assert.ok(second.choices[0].message.content.length > 0);
});

test('streamed tool-call deltas reassemble into one call', async () => {
  const stream = await client.chat.completions.create({
    model: 'assistant', tools, stream: true, messages: [{ role: 'user', content: 'Weather in Oslo?' }] });
  let name = '';
  let args = '';
  let finish = null;
  for await (const chunk of stream) {
    const d = chunk.choices?.[0]?.delta;
    for (const tc of d?.tool_calls ?? []) {
      name += tc.function?.name ?? '';
      args += tc.function?.arguments ?? '';
    }
    finish = chunk.choices?.[0]?.finish_reason ?? finish;
  }
  assert.equal(name, 'get_weather');
  assert.doesNotThrow(() => JSON.parse(args));
  assert.equal(finish, 'tool_calls');
});

test('the stream helper API works through the gateway', async () => {
  const runner = client.chat.completions.stream({
    model: 'assistant', messages: [{ role: 'user', content: 'hello' }], stream_options: { include_usage: true } });
  const final = await runner.finalChatCompletion();
  assert.ok(final.choices[0].message.content.length > 0);
  assert.ok(final.usage.total_tokens > 0);
});

test('models.retrieve of a route and of an unknown id', async () => {
  const m = await client.models.retrieve('assistant');
  assert.equal(m.id, 'assistant');
  await assert.rejects(client.models.retrieve('missing'), (e) => e.status === 404);
});

test('a stream cut mid-answer and continued reads as one normal stream', async () => {
  await sim.setModel('gpt-cont', { tokens: 60 });
  const whole = (await client.chat.completions.create({
    model: 'continued', messages: [{ role: 'user', content: 'hello' }] })).choices[0].message.content;
  await sim.setModel('gpt-cont', { tokens: 60, script: [{ action: 'cut', after_events: 41 }] });
  const runner = client.chat.completions.stream({
    model: 'continued', messages: [{ role: 'user', content: 'hello' }], stream_options: { include_usage: true } });
  const final = await runner.finalChatCompletion();
  assert.equal(final.choices[0].message.content, whole);
  assert.equal(final.choices[0].finish_reason, 'stop');
  assert.ok(final.usage.total_tokens > 0);
  assert.equal((await sim.stats()).models['gpt-cont'].calls, 3); // the whole one, the cut, the replay
});
