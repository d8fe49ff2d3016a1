// envelope.on_stream_failure: continue for streams relayed in the provider's own events
// (docs/internals/streaming.md §6, "Pass-through streams"): an Anthropic client on an
// Anthropic target and a Responses client on a `kind: openai` target. A cut stream goes on
// from another attempt in the client's own dialect: one message (one message_start, one text
// block at index 0, one message_stop) or one response (the first item's id and index, one
// response.completed). The client's text is compared with the one whole answer, and the
// simulator counts the upstream calls exactly.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startSim, startGateway, waitFor, readStream } from '../lib/harness.mjs';

let sim, gw, whole60, first40;

before(async () => {
  sim = await startSim();
  const cont = 'on_stream_failure: continue, deadline_ms: 20000';
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 1
log: { level: info, format: json }
providers:
  ant: { kind: anthropic, base_url: "${sim.url}/anthropic/v1", keys: ["sk-ant-pt"], health: { probe: none } }
  oai: { kind: openai, base_url: "${sim.base}", keys: ["sk-pt"], health: { probe: none } }
  compat: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-pt"], health: { probe: none } }
targets:
  rep@ant: { provider: ant, model: pt-rep, price: { input_per_mtok: 1, output_per_mtok: 1 } }
  pre@ant: { provider: ant, model: pt-pre, capabilities: [text, streaming, prefill] }
  ref@ant: { provider: ant, model: pt-ref, capabilities: [text, streaming, prefill] }
  dif@ant: { provider: ant, model: pt-dif }
  tool@ant: { provider: ant, model: pt-tool, capabilities: [text, streaming, tools] }
  resp@oai: { provider: oai, model: pt-resp }
  rdif@oai: { provider: oai, model: pt-rdif }
  mix@ant: { provider: ant, model: pt-mix-a }
  mix@compat: { provider: compat, model: pt-mix-o }
  mix2@ant: { provider: ant, model: pt-mix-b }
  twice@ant: { provider: ant, model: pt-twice-a }
  twice@oai: { provider: oai, model: pt-twice-r }
  late@oai: { provider: oai, model: pt-late }
  end@ant: { provider: ant, model: pt-end-a }
  end@oai: { provider: oai, model: pt-end-r }
routes:
  rep: { primary: [rep@ant], envelope: { ${cont} } }
  pre: { primary: [pre@ant], envelope: { ${cont} } }
  ref: { primary: [ref@ant], envelope: { ${cont}, max_attempts: 4, max_same_target_attempts: 3 } }
  dif: { primary: [dif@ant], envelope: { ${cont} } }
  tool: { primary: [tool@ant], envelope: { ${cont} } }
  resp: { primary: [resp@oai], envelope: { ${cont} } }
  rdif: { primary: [rdif@oai], envelope: { ${cont} } }
  twice-a: { primary: [twice@ant], envelope: { ${cont}, max_attempts: 3, max_same_target_attempts: 3 } }
  twice-r: { primary: [twice@oai], envelope: { ${cont}, max_attempts: 3, max_same_target_attempts: 3 } }
  late: { primary: [late@oai], envelope: { ${cont}, first_token_timeout_ms: 300, max_attempts: 3, max_same_target_attempts: 3 } }
  end-a: { primary: [end@ant], envelope: { ${cont} } }
  end-r: { primary: [end@oai], envelope: { ${cont} } }
  mixed: { primary: [mix@ant], equivalent: [mix@compat, mix2@ant], envelope: { ${cont}, max_same_target_attempts: 1 } }
`,
  });
  whole60 = await anthropicText('pt-whole', 60);
  first40 = await anthropicText('pt-first', 40);
  assert.ok(whole60.startsWith(first40));
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

/** The text of a whole <tokens>-token answer, asked of the sim directly. */
async function anthropicText(model, tokens) {
  await sim.setModel(model, { tokens });
  const res = await fetch(`${sim.url}/anthropic/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': 'sk-ant-pt', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model, max_tokens: 500, messages: [{ role: 'user', content: 'x' }] }),
  });
  return (await res.json()).content[0].text;
}

function streamMessages(route, extra = {}) {
  return fetch(`${gw.base}/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: route, max_tokens: 500, stream: true,
      messages: [{ role: 'user', content: 'x' }], ...extra }),
    signal: AbortSignal.timeout(30_000),
  });
}

function streamResponses(route) {
  return fetch(`${gw.base}/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: route, stream: true, input: 'x' }),
    signal: AbortSignal.timeout(30_000),
  });
}

/** The SSE events of <text>: {event, data} with data parsed; comments left out. */
function sseEvents(text) {
  return text.split('\n\n').filter((e) => e.includes('data: ')).map((e) => {
    const lines = e.split('\n');
    const name = lines.find((l) => l.startsWith('event: '))?.slice(7);
    return { event: name, data: JSON.parse(lines.find((l) => l.startsWith('data: ')).slice(6)) };
  });
}

const words = (s) => s.split(' ').filter(Boolean);

async function calls(model) {
  return (await sim.stats()).models[model]?.calls ?? 0;
}

async function accessLine(id) {
  return waitFor(() => gw.accessLog().find((l) => l.type === 'access' && l.request_id === id),
    { what: `the access line of ${id}` });
}

/** One coherent Messages stream: its events in the order the API has them, one text block at
 * index 0, every event's name equal to its type. Returns the events' data. */
function checkMessageStream(text) {
  const evs = sseEvents(text);
  for (const e of evs) assert.equal(e.event, e.data.type);
  const types = evs.map((e) => e.data.type).filter((t) => t !== 'ping');
  assert.equal(types[0], 'message_start');
  assert.equal(types[1], 'content_block_start');
  const deltas = types.slice(2, -3);
  assert.ok(deltas.length > 0 && deltas.every((t) => t === 'content_block_delta'), types.join(','));
  assert.deepEqual(types.slice(-3), ['content_block_stop', 'message_delta', 'message_stop']);
  const data = evs.map((e) => e.data);
  for (const d of data.filter((x) => x.type.startsWith('content_block'))) assert.equal(d.index, 0);
  for (const d of data.filter((x) => x.type === 'content_block_delta')) assert.equal(d.delta.type, 'text_delta');
  return data;
}

async function continuedMessage(route, how, target) {
  const res = await streamMessages(route);
  assert.equal(res.status, 200);
  const { text, broken } = await readStream(res);
  assert.equal(broken, false, text.slice(-400));
  const data = checkMessageStream(text);
  const said = data.filter((d) => d.type === 'content_block_delta').map((d) => d.delta.text).join('');
  assert.equal(said, whole60);
  assert.deepEqual(words(said), words(whole60)); // every word exactly once
  assert.ok(text.includes(`: bascule continued on ${target} by ${how}\n\n`), text);
  const access = await accessLine(res.headers.get('x-request-id'));
  assert.equal(access.termination, 'ok');
  assert.deepEqual([access.continued?.how, access.continued?.target], [how, target]);
  return { data, access };
}

test('an Anthropic client on an Anthropic target, cut after 40 of 60 words: continued by replay in its own events', async () => {
  await sim.setModel('pt-rep', { tokens: 60, script: [{ action: 'cut', after_events: 43 }] });
  const { data, access } = await continuedMessage('rep', 'replay', 'rep@ant');
  assert.equal(await calls('pt-rep'), 2);
  // The message the client knows is the first attempt's; the final usage counts both.
  const start = data[0].message;
  assert.match(start.id, /^msg_sim_/);
  const delta = data.find((d) => d.type === 'message_delta');
  assert.equal(delta.delta.stop_reason, 'end_turn');
  assert.equal(delta.usage.output_tokens, access.output_tokens);
  assert.ok(access.output_tokens > 60, `${access.output_tokens}`); // the cut attempt counts too
  const metrics = await (await fetch(`${gw.url}/metrics`)).text();
  assert.match(metrics, /bascule_stream_continuations_total\{route="rep",target="rep@ant",how="replay",result="ok"\} 1/);
});

test('an Anthropic target with the capability prefill gets the client\'s own request plus the text sent', async () => {
  await sim.setModel('pt-pre', { tokens: 60, script: [{ action: 'cut', after_events: 43 }] });
  await continuedMessage('pre', 'prefill', 'pre@ant');
  assert.equal(await calls('pt-pre'), 2);
  const [first, second] = (await sim.requests('pt-pre')).slice(-2).map((x) => x.body);
  assert.deepEqual(second.messages.slice(0, -1), first.messages);
  assert.deepEqual(second.messages.at(-1), { role: 'assistant', content: first40 });
  assert.equal(second.max_tokens, 500); // the client's bytes, not a translation
  assert.equal(second.stream, true);
});

test('a prefill the Anthropic target refuses: the same target goes on by replay, no error reaches the client', async () => {
  await sim.setModel('pt-ref', { tokens: 60, prefill: 'refuse', script: [{ action: 'cut', after_events: 43 }] });
  await continuedMessage('ref', 'replay', 'ref@ant');
  assert.equal(await calls('pt-ref'), 3);
});

test('an Anthropic replay that says something else: not one of its words reaches the client', async () => {
  await sim.setModel('pt-dif', {
    tokens: 60,
    script: [{ action: 'cut', after_events: 43 }, { action: 'ok', content: 'Quite another answer altogether, zebra.' }],
  });
  const res = await streamMessages('dif');
  const { text, broken } = await readStream(res);
  assert.ok(broken);
  const data = sseEvents(text).map((e) => e.data);
  assert.equal(data.filter((d) => d.type === 'content_block_delta').map((d) => d.delta.text).join(''), first40);
  assert.ok(!/zebra|another/.test(text), text.slice(-400));
  assert.equal(data.at(-1).type, 'error');
  assert.equal(data.filter((d) => d.type === 'message_start').length, 1);
  assert.equal(await calls('pt-dif'), 2);
});

test('an Anthropic tool-use stream that is cut is not continued (a text one on the same route is)', async () => {
  await sim.setModel('pt-tool', { tokens: 60, script: [{ action: 'cut', after_events: 43 }] });
  await continuedMessage('tool', 'replay', 'tool@ant');
  assert.equal(await calls('pt-tool'), 2);
  // message_start, a text block (start, ping, delta, stop), the tool_use block's start and
  // its first input_json_delta: then the cut.
  await sim.setModel('pt-tool', { script: [{ action: 'cut', after_events: 7 }] });
  const res = await streamMessages('tool', {
    tools: [{ name: 'f', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }],
  });
  const { text, broken } = await readStream(res);
  assert.ok(broken);
  const data = sseEvents(text).map((e) => e.data);
  assert.ok(data.some((d) => d.type === 'content_block_start' && d.content_block.type === 'tool_use'), text);
  assert.equal(data.at(-1).type, 'error');
  assert.ok(!text.includes('bascule continued'));
  assert.equal(await calls('pt-tool'), 3);
});

test('a Responses client on an openai target, cut after 40 of 60 words: one response, the first item\'s id', async () => {
  await sim.setModel('pt-resp', { tokens: 60, script: [{ action: 'cut', after_events: 44 }] });
  const res = await streamResponses('resp');
  assert.equal(res.status, 200);
  const { text, broken } = await readStream(res);
  assert.equal(broken, false, text.slice(-400));
  const evs = sseEvents(text);
  for (const e of evs) assert.equal(e.event, e.data.type);
  const data = evs.map((e) => e.data);
  const count = (t) => data.filter((d) => d.type === t).length;
  assert.equal(count('response.created'), 1);
  assert.equal(count('response.output_item.added'), 1);
  assert.equal(count('response.content_part.added'), 1);
  assert.equal(count('response.output_item.done'), 1);
  assert.equal(count('response.completed'), 1);
  assert.equal(data.at(-1).type, 'response.completed');
  const item = data.find((d) => d.type === 'response.output_item.added').item;
  const deltas = data.filter((d) => d.type === 'response.output_text.delta');
  for (const d of deltas) assert.deepEqual([d.item_id, d.output_index, d.content_index], [item.id, 0, 0]);
  assert.equal(deltas.map((d) => d.delta).join(''), whole60);
  assert.deepEqual(words(deltas.map((d) => d.delta).join('')), words(whole60));
  assert.equal(data.find((d) => d.type === 'response.output_text.done').item_id, item.id);
  assert.equal(data.find((d) => d.type === 'response.output_item.done').item.id, item.id);
  const done = data.at(-1).response;
  assert.equal(done.status, 'completed');
  assert.equal(done.output.length, 1);
  assert.equal(done.output[0].id, item.id);
  assert.equal(done.output[0].content[0].text, whole60);
  const seq = data.map((d) => d.sequence_number);
  assert.deepEqual(seq, seq.map((_, i) => i)); // one numbering, 0, 1, 2, ...
  assert.ok(text.includes(': bascule continued on resp@oai by replay\n\n'), text);
  assert.equal(await calls('pt-resp'), 2);
  const access = await accessLine(res.headers.get('x-request-id'));
  assert.equal(access.termination, 'ok');
  assert.equal(done.usage.output_tokens, access.output_tokens);
});

test('a Responses replay that says something else: not one of its words reaches the client', async () => {
  await sim.setModel('pt-rdif', {
    tokens: 60,
    script: [{ action: 'cut', after_events: 44 }, { action: 'ok', content: 'Quite another answer altogether, zebra.' }],
  });
  const res = await streamResponses('rdif');
  const { text, broken } = await readStream(res);
  assert.ok(broken);
  assert.ok(!/zebra|another/.test(text), text.slice(-400));
  const data = sseEvents(text).map((e) => e.data);
  assert.equal(data.filter((d) => d.type === 'response.output_text.delta').map((d) => d.delta).join(''), first40);
  assert.equal(data.filter((d) => d.type === 'response.completed').length, 0);
  assert.equal(await calls('pt-rdif'), 2);
});

test('an Anthropic pass-through stream goes on only on an anthropic target: never another dialect\'s answer', async () => {
  await sim.setModel('pt-mix-a', { tokens: 60, script: [{ action: 'cut', after_events: 43 }] });
  await sim.setModel('pt-mix-o', { tokens: 60 });
  await sim.setModel('pt-mix-b', { tokens: 60 });
  // The equivalent tier holds an OpenAI-dialect target and an anthropic one: whichever the
  // decision tries first, the stream goes on on the anthropic one and the other never runs.
  await continuedMessage('mixed', 'replay', 'mix2@ant');
  assert.equal(await calls('pt-mix-a'), 1);
  assert.equal(await calls('pt-mix-o'), 0);
  assert.equal(await calls('pt-mix-b'), 1);
});

test('a continuation that breaks in turn is continued again: two seams, still one message and one response', async () => {
  // Cut after 40 text deltas, then a replay cut after 50 (10 new words passed), then whole.
  await sim.setModel('pt-twice-a', { tokens: 60,
    script: [{ action: 'cut', after_events: 43 }, { action: 'cut', after_events: 53 }] });
  const res = await streamMessages('twice-a');
  const { text, broken } = await readStream(res);
  assert.equal(broken, false, text.slice(-400));
  const data = checkMessageStream(text);
  assert.equal(data.filter((d) => d.type === 'content_block_delta').map((d) => d.delta.text).join(''), whole60);
  assert.equal(text.split(': bascule continued on twice@ant by replay').length, 3);
  assert.equal(await calls('pt-twice-a'), 3);

  await sim.setModel('pt-twice-r', { tokens: 60,
    script: [{ action: 'cut', after_events: 44 }, { action: 'cut', after_events: 54 }] });
  const res2 = await streamResponses('twice-r');
  const r2 = await readStream(res2);
  assert.equal(r2.broken, false, r2.text.slice(-400));
  const data2 = sseEvents(r2.text).map((e) => e.data);
  const item = data2.find((d) => d.type === 'response.output_item.added').item;
  const deltas = data2.filter((d) => d.type === 'response.output_text.delta');
  assert.equal(deltas.map((d) => d.delta).join(''), whole60);
  for (const d of deltas) assert.equal(d.item_id, item.id);
  assert.deepEqual(data2.map((d) => d.sequence_number), data2.map((_, i) => i));
  assert.equal(data2.filter((d) => d.type === 'response.completed').length, 1);
  assert.equal(r2.text.split(': bascule continued on twice@oai by replay').length, 3);
  assert.equal(await calls('pt-twice-r'), 3);
});

test('an attempt dropped before the commit point (a late first token) leaves nothing behind: the next one is continued', async () => {
  // The first attempt says response.created .. content_part.added (held: no text yet), then
  // is silent past first_token_timeout_ms; the second is cut after 40 words; a replay ends it.
  await sim.setModel('pt-late', { tokens: 60, script: [
    { action: 'stall', after_events: 4, stall_ms: 10000 },
    { action: 'cut', after_events: 44 },
  ] });
  const res = await streamResponses('late');
  const { text, broken } = await readStream(res);
  assert.equal(broken, false, text.slice(-400));
  const data = sseEvents(text).map((e) => e.data);
  assert.equal(data.filter((d) => d.type === 'response.output_item.added').length, 1);
  const item = data.find((d) => d.type === 'response.output_item.added').item;
  const deltas = data.filter((d) => d.type === 'response.output_text.delta');
  assert.equal(deltas.map((d) => d.delta).join(''), whole60);
  for (const d of deltas) assert.equal(d.item_id, item.id);
  assert.equal(data.at(-1).type, 'response.completed');
  assert.equal(await calls('pt-late'), 3);
});

test('a break after the text closed: the closing events the client has are not sent twice', async () => {
  // Anthropic: message_start, block start, ping, 60 deltas, content_block_stop -- then the cut.
  await sim.setModel('pt-end-a', { tokens: 60, script: [{ action: 'cut', after_events: 64 }] });
  const res = await streamMessages('end-a');
  const { text, broken } = await readStream(res);
  assert.equal(broken, false, text.slice(-400));
  const data = checkMessageStream(text); // one content_block_stop, then message_delta, message_stop
  assert.equal(data.filter((d) => d.type === 'content_block_delta').map((d) => d.delta.text).join(''), whole60);
  assert.equal(await calls('pt-end-a'), 2);

  // Responses: the preamble, 60 deltas, output_text.done -- then the cut.
  await sim.setModel('pt-end-r', { tokens: 60, script: [{ action: 'cut', after_events: 65 }] });
  const res2 = await streamResponses('end-r');
  const r2 = await readStream(res2);
  assert.equal(r2.broken, false, r2.text.slice(-400));
  const types = sseEvents(r2.text).map((e) => e.data.type);
  assert.deepEqual(types.slice(-4), ['response.output_text.done', 'response.content_part.done',
    'response.output_item.done', 'response.completed']);
  assert.equal(types.filter((t) => t === 'response.output_text.done').length, 1);
  const data2 = sseEvents(r2.text).map((e) => e.data);
  assert.deepEqual(data2.map((d) => d.sequence_number), data2.map((_, i) => i));
  assert.equal(data2.at(-1).response.output[0].content[0].text, whole60);
  assert.equal(await calls('pt-end-r'), 2);
});
