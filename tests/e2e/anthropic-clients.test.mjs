// SPDX-License-Identifier: MIT
// End to end: Anthropic clients that need every field of their request to reach an
// Anthropic model -- the official SDK's messages.parse with a zod output format (output_config),
// beta.messages.toolRunner, messages.countTokens, and LangChain's ChatAnthropic with
// withStructuredOutput (tool calling and jsonSchema) and usage -- against bascule in front of
// bascule-sim's Anthropic dialect, plus LangChain streaming through an OpenAI-dialect target.
// See docs/internals/anthropic-inbound.md.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { zodOutputFormat } from '@anthropic-ai/sdk/helpers/zod';
import { betaZodTool } from '@anthropic-ai/sdk/helpers/beta/zod';
import { ChatAnthropic } from '@langchain/anthropic';
import { z as z4 } from 'zod/v4';
import { z } from 'zod';
import { startSim, startGateway } from '../lib/harness.mjs';

const CAPS = 'capabilities: [text, streaming, tools, json_schema]';
let sim, gw, client;

before(async () => {
  sim = await startSim();
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 2
providers:
  ant: { kind: anthropic, base_url: "${sim.url}/anthropic/v1", keys: ["sk-ant-e2e"], health: { probe: none } }
  oai: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-e2e"], health: { probe: none } }
targets:
  claude: { provider: ant, model: claude-e2e, ${CAPS} }
  gpt: { provider: oai, model: gpt-e2e, ${CAPS} }
routes:
  claude: { primary: [claude] }
  gpt: { primary: [gpt] }
`,
  });
  client = new Anthropic({ baseURL: gw.url, apiKey: 'sk-ant-any', maxRetries: 0 });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

async function lastUpstream(model) {
  const seen = await sim.requests(model);
  assert.ok(seen.length > 0, 'the sim saw a request');
  return seen.at(-1);
}

test('messages.parse with zodOutputFormat: output_config reaches Anthropic, parsed_output is typed', async () => {
  const Weather = z4.object({ city: z4.string(), celsius: z4.number() });
  const msg = await client.messages.parse({
    model: 'claude',
    max_tokens: 256,
    messages: [{ role: 'user', content: 'Weather in Oslo as JSON' }],
    output_config: { format: zodOutputFormat(Weather) },
  });
  assert.equal(typeof msg.parsed_output.city, 'string');
  assert.equal(typeof msg.parsed_output.celsius, 'number');
  assert.equal(msg.model, 'claude-e2e');
  const seen = await lastUpstream('claude-e2e');
  assert.equal(seen.body.output_config.format.type, 'json_schema');
  assert.deepEqual(seen.body.output_config.format.schema.required, ['city', 'celsius']);
});

test('beta.messages.toolRunner: the tool runs and the loop ends with text', async () => {
  let calls = 0;
  const weather = betaZodTool({
    name: 'get_weather',
    description: 'weather for a city',
    inputSchema: z4.object({ city: z4.string() }),
    run: async ({ city }) => { calls++; return `Sunny in ${city}`; },
  });
  const final = await client.beta.messages.toolRunner({
    model: 'claude',
    max_tokens: 256,
    max_iterations: 4,
    messages: [{ role: 'user', content: 'What is the weather in Oslo?' }],
    tools: [weather],
  });
  assert.equal(calls, 1);
  assert.equal(final.stop_reason, 'end_turn');
  assert.equal(final.content.at(-1).type, 'text');
  // The runner keeps its conversation upstream (the message-threads beta): the thread field
  // and the anthropic-beta header must reach Anthropic, or the second turn is refused.
  const seen = await lastUpstream('claude-e2e');
  assert.equal(seen.body.thread.type, 'continue');
  assert.match(seen.headers['anthropic-beta'] ?? '', /threads/);
  assert.equal(seen.body.messages[0].content[0].type, 'tool_result');
  assert.match(seen.body.messages[0].content[0].content, /^Sunny in /);
});

test('messages.countTokens: forwarded to the Anthropic target', async () => {
  const res = await client.messages.countTokens({
    model: 'claude',
    system: 'Be brief.',
    messages: [{ role: 'user', content: 'How many tokens?' }],
  });
  assert.ok(res.input_tokens > 0);
  const seen = await lastUpstream('claude-e2e');
  assert.equal(seen.path, '/anthropic/v1/messages/count_tokens');
  assert.equal(seen.body.model, 'claude-e2e');
  const est = await client.messages.countTokens({ model: 'gpt', messages: [{ role: 'user', content: 'x' }] });
  assert.ok(est.input_tokens > 0, 'an estimate for other kinds');
});

function chat(model, opts = {}) {
  return new ChatAnthropic({ model, apiKey: 'sk-ant-any', anthropicApiUrl: gw.url, maxRetries: 0, ...opts });
}

test('LangChain ChatAnthropic.withStructuredOutput (tool calling), usage reported', async () => {
  const schema = z.object({ city: z.string(), celsius: z.number() });
  const out = await chat('claude').withStructuredOutput(schema, { includeRaw: true })
    .invoke('Weather in Oslo?');
  assert.equal(typeof out.parsed.city, 'string');
  assert.equal(typeof out.parsed.celsius, 'number');
  assert.ok(out.raw.usage_metadata.input_tokens > 0, JSON.stringify(out.raw.usage_metadata));
  assert.ok(out.raw.usage_metadata.output_tokens > 0);
});

test('LangChain ChatAnthropic.withStructuredOutput (jsonSchema: output_format/output_config)', async () => {
  const schema = z.object({ city: z.string() });
  const out = await chat('claude').withStructuredOutput(schema, { method: 'jsonSchema' })
    .invoke('Which city?');
  assert.equal(typeof out.city, 'string');
});

// An OpenAI-dialect upstream names its prompt tokens only in its last chunk, after the
// content: message_start has no real count to give and says 0 rather than an estimate a
// client would take for the billed count (docs/internals/anthropic-inbound.md); the real
// count comes in message_delta, which LangChain reads for output tokens only.
test('LangChain streaming through an OpenAI-dialect target: output counted, no estimate taken for input', async () => {
  let usage;
  for await (const chunk of await chat('gpt', { streaming: true }).stream('Hello there, count me')) {
    if (chunk.usage_metadata) {
      usage = usage ? {
        input_tokens: usage.input_tokens + chunk.usage_metadata.input_tokens,
        output_tokens: usage.output_tokens + chunk.usage_metadata.output_tokens,
      } : { ...chunk.usage_metadata };
    }
  }
  assert.equal(usage.input_tokens, 0, JSON.stringify(usage));
  assert.ok(usage.output_tokens > 0, JSON.stringify(usage));
});
