// End to end: Responses API clients, unchanged, against bascule in front of bascule-sim —
// the openai SDK's responses.create (plain, stream, a tool round trip, previous_response_id)
// on a chat-only target and on an Anthropic target, the Vercel AI SDK's default
// (Responses) OpenAI provider and LangChain's ChatOpenAI with useResponsesApi.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { generateText, generateObject, streamText, tool, stepCountIs } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { ChatOpenAI } from '@langchain/openai';
import { z } from 'zod';
import { startSim, startGateway } from '../lib/harness.mjs';

let sim, gw, client;
const CAPS = 'capabilities: [text, streaming, tools, json_schema, json_object]';

before(async () => {
  sim = await startSim();
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 2
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-e2e"], health: { probe: none } }
  oai: { kind: openai, base_url: "${sim.base}", keys: ["sk-oai"], health: { probe: none } }
  ant: { kind: anthropic, base_url: "${sim.base.replace(/\/v1$/, '')}/anthropic/v1", keys: ["sk-ant"], health: { probe: none } }
targets:
  chat@sim: { provider: sim, model: rc-chat, ${CAPS} }
  claude@sim: { provider: ant, model: rc-claude, capabilities: [text, streaming, tools] }
  gpt@oai: { provider: oai, model: rc-native, ${CAPS} }
  cont@oai: { provider: oai, model: rc-native-cont }
routes:
  native: { primary: [gpt@oai] }
  native-continued: { primary: [cont@oai], envelope: { on_stream_failure: continue } }
  chat: { primary: [chat@sim] }
  claude: { primary: [claude@sim] }
`,
  });
  client = new OpenAI({ baseURL: gw.base, apiKey: 'any', maxRetries: 0 });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

const weather = {
  type: 'function', name: 'get_weather', description: 'weather for a city', strict: false,
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

for (const route of ['chat', 'claude']) {
  test(`openai SDK responses.create on the ${route} route: plain and output_text`, async () => {
    const r = await client.responses.create({ model: route, input: 'Say hello', instructions: 'be brief' });
    assert.equal(r.status, 'completed');
    assert.equal(r.output_text, 'Hello héllo wörld! This is bascule-sim ✓ streaming 🚀 tokens');
    assert.ok(r.usage.input_tokens > 0 && r.usage.output_tokens > 0);
  });

  test(`openai SDK responses.create stream: true on the ${route} route`, async () => {
    const stream = await client.responses.create({ model: route, input: 'Say hello', stream: true });
    let text = '', completed;
    for await (const ev of stream) {
      if (ev.type === 'response.output_text.delta') text += ev.delta;
      if (ev.type === 'response.completed') completed = ev.response;
    }
    assert.equal(text, 'Hello héllo wörld! This is bascule-sim ✓ streaming 🚀 tokens');
    assert.equal(completed.status, 'completed');
    assert.ok(completed.usage.output_tokens > 0);
  });

  test(`openai SDK: a tool round trip, then previous_response_id, on the ${route} route`, async () => {
    const first = await client.responses.create({ model: route, input: 'Weather in Oslo?', tools: [weather] });
    const call = first.output.find((o) => o.type === 'function_call');
    assert.ok(call, 'a function_call item');
    assert.equal(call.name, 'get_weather');
    assert.equal(typeof JSON.parse(call.arguments), 'object');
    const second = await client.responses.create({
      model: route, tools: [weather], previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: '{"temp": 21}' }],
    });
    assert.equal(second.status, 'completed');
    assert.ok(second.output_text.length > 0);
    const third = await client.responses.create({ model: route, input: 'And tomorrow?', previous_response_id: second.id });
    assert.ok(third.output_text.length > 0);
    await assert.rejects(
      client.responses.create({ model: route, input: 'x', previous_response_id: 'resp_unknown' }),
      (e) => e.status === 400 && /resp_unknown/.test(e.message));
  });
}

test('openai SDK responses.create through to an openai target, plain and streamed', async () => {
  const r = await client.responses.create({ model: 'native', input: 'Say hello', tools: [{ type: 'web_search' }] });
  assert.match(r.id, /^resp_sim_/);
  assert.equal(r.output_text, 'Hello héllo wörld! This is bascule-sim ✓ streaming 🚀 tokens');
  const stream = await client.responses.create({ model: 'native', input: 'Say hello', stream: true });
  let text = '', completed;
  for await (const ev of stream) {
    if (ev.type === 'response.output_text.delta') text += ev.delta;
    if (ev.type === 'response.completed') completed = ev.response;
  }
  assert.equal(text, r.output_text);
  assert.equal(completed.usage.output_tokens, r.usage.output_tokens);
  assert.equal((await sim.lastRequest('rc-native')).path, '/v1/responses');
});

const provider = () => createOpenAI({ baseURL: gw.base, apiKey: 'any' });

test('Vercel AI SDK generateText through the Responses provider', async () => {
  const { text, usage } = await generateText({ model: provider().responses('chat'), prompt: 'Say hello' });
  assert.equal(text, 'Hello héllo wörld! This is bascule-sim ✓ streaming 🚀 tokens');
  assert.ok(usage.inputTokens > 0 && usage.outputTokens > 0);
  // The default openai(model) is the Responses API too.
  const { text: t2 } = await generateText({ model: provider()('chat'), prompt: 'Say hello' });
  assert.equal(t2, text);
});

test('Vercel AI SDK generateObject with a zod schema', async () => {
  const schema = z.object({ city: z.string(), temp: z.number() });
  const { object } = await generateObject({ model: provider().responses('chat'), schema, prompt: 'weather' });
  assert.equal(typeof object.city, 'string');
  assert.equal(typeof object.temp, 'number');
});

test('Vercel AI SDK streamText with a tool', async () => {
  let executed;
  const result = streamText({
    model: provider().responses('chat'),
    prompt: 'Weather in Oslo?',
    tools: {
      get_weather: tool({
        description: 'weather for a city',
        inputSchema: z.object({ city: z.string() }),
        execute: async ({ city }) => { executed = city; return { temp: 21 }; },
      }),
    },
  });
  const parts = [];
  for await (const p of result.fullStream) parts.push(p.type);
  assert.ok(parts.includes('tool-call'), parts.join(','));
  assert.ok(parts.includes('tool-result'), parts.join(','));
  assert.equal(typeof executed, 'string');
  assert.equal((await result.finishReason), 'tool-calls');
});

test('Vercel AI SDK multi-step tool loop (item_reference to the kept call)', async () => {
  const result = await generateText({
    model: provider().responses('chat'),
    prompt: 'Weather in Oslo?',
    stopWhen: stepCountIs(3),
    tools: {
      get_weather: tool({
        description: 'weather for a city',
        inputSchema: z.object({ city: z.string() }),
        execute: async () => ({ temp: 21 }),
      }),
    },
  });
  assert.equal(result.steps.length, 2);
  assert.equal(result.steps[0].finishReason, 'tool-calls');
  assert.equal(result.text, 'Hello héllo wörld! This is bascule-sim ✓ streaming 🚀 tokens');
  const sent = (await sim.lastRequest('rc-chat')).body;
  assert.equal(sent.messages.at(-1).role, 'tool');
  assert.equal(sent.messages.at(-2).tool_calls[0].function.name, 'get_weather');
});

test('LangChain ChatOpenAI with useResponsesApi', async () => {
  const llm = new ChatOpenAI({
    model: 'chat', useResponsesApi: true, apiKey: 'any', maxRetries: 0,
    configuration: { baseURL: gw.base },
  });
  const msg = await llm.invoke('Say hello');
  const text = typeof msg.content === 'string' ? msg.content : msg.content.map((c) => c.text ?? '').join('');
  assert.equal(text, 'Hello héllo wörld! This is bascule-sim ✓ streaming 🚀 tokens');
  let streamed = '';
  for await (const chunk of await llm.stream('Say hello')) {
    streamed += typeof chunk.content === 'string' ? chunk.content : chunk.content.map((c) => c.text ?? '').join('');
  }
  assert.equal(streamed, text);
});

test('openai SDK responses.stream: a pass-through stream cut mid-answer and continued reads as one response', async () => {
  await sim.setModel('rc-native-cont', { tokens: 60 });
  const whole = (await client.responses.create({ model: 'native-continued', input: 'hello' })).output_text;
  // created, in_progress, output_item.added, content_part.added, 40 of the 60 deltas: the cut.
  await sim.setModel('rc-native-cont', { tokens: 60, script: [{ action: 'cut', after_events: 44 }] });
  const stream = client.responses.stream({ model: 'native-continued', input: 'hello' });
  let deltas = '';
  stream.on('response.output_text.delta', (e) => { deltas += e.delta; });
  const final = await stream.finalResponse();
  assert.equal(deltas, whole);
  assert.equal(final.status, 'completed');
  assert.equal(final.output[0].content[0].text, whole);
  assert.equal(final.output.length, 1);
  assert.equal((await sim.stats()).models['rc-native-cont'].calls, 3);
});
