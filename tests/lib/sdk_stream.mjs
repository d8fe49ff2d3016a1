// SPDX-License-Identifier: MIT
// sdk_stream.mjs -- what the provider tests share about OpenAI SDK calls: a tool to offer
// and a reader that folds a streamed completion into its parts.

/** A function tool the sim knows how to call. */
export const weatherTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

/** Reads an SDK stream into {text, finish, usage, toolCalls, chunks, roles}. */
export async function drain(stream) {
  const out = { text: '', finish: null, usage: null, toolCalls: [], chunks: 0, roles: 0 };
  for await (const chunk of stream) {
    out.chunks++;
    if (chunk.usage) out.usage = chunk.usage;
    for (const ch of chunk.choices) {
      if (ch.delta?.role) out.roles++;
      if (ch.delta?.content) out.text += ch.delta.content;
      for (const tc of ch.delta?.tool_calls ?? []) {
        const slot = (out.toolCalls[tc.index] ??= { id: null, name: null, arguments: '', extra: null });
        if (tc.id) slot.id = tc.id;
        if (tc.function?.name) slot.name = tc.function.name;
        if (tc.extra_content) slot.extra = tc.extra_content;
        slot.arguments += tc.function?.arguments ?? '';
      }
      if (ch.finish_reason) out.finish = ch.finish_reason;
    }
  }
  return out;
}
