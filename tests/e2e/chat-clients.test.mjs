// SPDX-License-Identifier: MIT
// chat-clients.test.mjs -- client libraries nobody here wrote, over Chat Completions:
// the Vercel AI SDK through @ai-sdk/openai-compatible (generateText, generateObject,
// streamText with a tool) and LangChain's ChatOpenAI (invoke, stream, withStructuredOutput,
// bindTools), against bascule + bascule-sim's OpenAI dialect.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, generateObject, streamText, tool, stepCountIs } from 'ai';
import { ChatOpenAI } from '@langchain/openai';
import { z } from 'zod';
import { startSim, startGateway } from '../lib/harness.mjs';

globalThis.AI_SDK_LOG_WARNINGS = false;
let sim, gw;

before(async () => {
  sim = await startSim();
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
providers:
  s: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-clients"], health: { probe: none } }
targets:
  m@s: { provider: s, model: clients-model, capabilities: [text, streaming, tools, parallel_tool_calls, json_schema, json_object] }
routes:
  chat: { primary: [m@s] }
`,
  });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

const vercel = () => createOpenAICompatible({ name: 'bascule', baseURL: gw.base, apiKey: 'unused', includeUsage: true, supportsStructuredOutputs: true });
const langchain = (extra = {}) => new ChatOpenAI({
  model: 'chat', apiKey: 'unused', configuration: { baseURL: gw.base }, maxRetries: 0, ...extra,
});

const Weather = z.object({ city: z.string(), celsius: z.number() });

test('Vercel AI SDK (openai-compatible): generateText names the target in its response headers', async () => {
  const r = await generateText({ model: vercel()('chat'), prompt: 'Hello' });
  assert.ok(r.text.length > 0);
  assert.equal(r.response.headers['x-bascule-target'], 'm@s');
  assert.ok(r.usage.inputTokens > 0 && r.usage.outputTokens > 0);
});

test('Vercel AI SDK (openai-compatible): generateObject returns an object that fits the schema', async () => {
  const r = await generateObject({ model: vercel()('chat'), schema: Weather, prompt: 'Weather in Paris?' });
  assert.equal(typeof r.object.city, 'string');
  assert.equal(typeof r.object.celsius, 'number');
});

test('Vercel AI SDK (openai-compatible): streamText with a tool runs the tool, then answers', async () => {
  const seen = [];
  const r = streamText({
    model: vercel()('chat'),
    prompt: 'What is the weather in Paris?',
    tools: {
      weather: tool({
        description: 'the weather in a city',
        inputSchema: z.object({ city: z.string() }),
        execute: async ({ city }) => { seen.push(city); return { city, celsius: 21 }; },
      }),
    },
    stopWhen: stepCountIs(3),
  });
  let text = '';
  for await (const part of r.textStream) text += part;
  assert.equal(seen.length, 1, 'the tool ran once');
  assert.ok(text.length > 0, 'the second step answered in text');
  const steps = await r.steps;
  assert.equal(steps[0].finishReason, 'tool-calls');
});

test('LangChain ChatOpenAI: invoke and stream', async () => {
  const msg = await langchain().invoke('Hello');
  assert.ok(String(msg.content).length > 0);
  assert.ok(msg.usage_metadata.input_tokens > 0);
  let text = '';
  for await (const chunk of await langchain({ streamUsage: true }).stream('Hello')) text += chunk.content;
  assert.ok(text.length > 0);
});

test('LangChain ChatOpenAI: withStructuredOutput (json_schema) and bindTools', async () => {
  const out = await langchain().withStructuredOutput(Weather, { method: 'jsonSchema' }).invoke('Weather in Paris?');
  assert.equal(typeof out.city, 'string');
  assert.equal(typeof out.celsius, 'number');
  const viaTool = await langchain().withStructuredOutput(Weather, { method: 'functionCalling' }).invoke('Weather?');
  assert.equal(typeof viaTool.celsius, 'number');
  const ai = await langchain().bindTools([{ type: 'function', function: { name: 'weather', description: 'w', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }]).invoke('Weather in Paris?');
  assert.equal(ai.tool_calls.length, 1);
  assert.equal(ai.tool_calls[0].name, 'weather');
  assert.equal(typeof ai.tool_calls[0].args.city, 'string');
});
