// envelope.on_stream_failure: continue (docs/internals/streaming.md §6): a stream broken after
// the commit point goes on from another attempt, by prefill on a target with the capability
// `prefill`, else by replay and match. The client's text is compared word for word with the
// one whole answer, and the simulator counts the upstream calls exactly.
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
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-sc"], health: { probe: none } }
  vllm: { kind: openai_compatible, profile: vllm, base_url: "${sim.base}", keys: ["sk-sc"], health: { probe: none } }
  deep: { kind: openai_compatible, profile: deepseek, base_url: "${sim.base}", keys: ["sk-sc"], health: { probe: none } }
  ant: { kind: anthropic, base_url: "${sim.url}/anthropic/v1", keys: ["sk-ant-sc"], health: { probe: none } }
targets:
  rep@sim: { provider: sim, model: sc-rep, price: { input_per_mtok: 1, output_per_mtok: 1 } }
  pre@sim: { provider: sim, model: sc-pre, capabilities: [text, streaming, prefill] }
  dif@sim: { provider: sim, model: sc-dif }
  ref@sim: { provider: sim, model: sc-ref, capabilities: [text, streaming, prefill] }
  tool@sim: { provider: sim, model: sc-tool, capabilities: [text, streaming, tools] }
  stall@sim: { provider: sim, model: sc-stall }
  bad@sim: { provider: sim, model: sc-bad }
  off@sim: { provider: sim, model: sc-off }
  msg@sim: { provider: sim, model: sc-msg }
  v@vllm: { provider: vllm, model: sc-vllm, capabilities: [text, streaming, prefill] }
  d@deep: { provider: deep, model: sc-deep, capabilities: [text, streaming, prefill] }
  claude@ant: { provider: ant, model: sc-claude, capabilities: [text, streaming, prefill] }
  resp@sim: { provider: sim, model: sc-resp }
  err@sim: { provider: sim, model: sc-err }
  write@sim: { provider: sim, model: sc-write }
  fa@sim: { provider: sim, model: sc-fa }
  fb@sim: { provider: sim, model: sc-fb }
  ga@sim: { provider: sim, model: sc-ga }
  gb@sim: { provider: sim, model: sc-gb }
routes:
  rep: { primary: [rep@sim], envelope: { ${cont} } }
  pre: { primary: [pre@sim], envelope: { ${cont} } }
  dif: { primary: [dif@sim], envelope: { ${cont} } }
  ref: { primary: [ref@sim], envelope: { ${cont}, max_attempts: 4, max_same_target_attempts: 3 } }
  tool: { primary: [tool@sim], envelope: { ${cont} } }
  stall: { primary: [stall@sim], envelope: { ${cont}, stream_idle_timeout_ms: 300 } }
  bad: { primary: [bad@sim], envelope: { ${cont} } }
  off: { primary: [off@sim] }
  msg: { primary: [msg@sim], envelope: { ${cont} } }
  claude: { primary: [claude@ant], envelope: { ${cont} } }
  vllm: { primary: [v@vllm], envelope: { ${cont} } }
  deep: { primary: [d@deep], envelope: { ${cont} } }
  resp: { primary: [resp@sim], envelope: { ${cont} } }
  err: { primary: [err@sim], envelope: { ${cont} } }
  write: { primary: [write@sim], envelope: { ${cont}, side_effects: write_possible } }
  fallback-off:
    primary: [fa@sim]
    fallback: [fb@sim]
    envelope: { ${cont}, max_same_target_attempts: 1 }
  fallback-on:
    primary: [ga@sim]
    fallback: [gb@sim]
    envelope: { ${cont}, max_same_target_attempts: 1, allow_cross_model_fallback: true }
`,
  });
  await sim.setModel('sc-whole', { tokens: 60 });
  const res = await fetch(`${sim.base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-sc' },
    body: JSON.stringify({ model: 'sc-whole', messages: [{ role: 'user', content: 'x' }] }),
  });
  whole60 = (await res.json()).choices[0].message.content;
  // The first 40 of those words (tokens): what a stream cut after them has sent.
  await sim.setModel('sc-first', { tokens: 40 });
  const res40 = await fetch(`${sim.base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-sc' },
    body: JSON.stringify({ model: 'sc-first', messages: [{ role: 'user', content: 'x' }] }),
  });
  first40 = (await res40.json()).choices[0].message.content;
  assert.ok(whole60.startsWith(first40));
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

function streamChat(model, extra = {}) {
  return fetch(`${gw.base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: 'x' }], ...extra }),
    signal: AbortSignal.timeout(30_000),
  });
}

function events(text) {
  return text.split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => e.slice(6));
}

function chunks(text) {
  return events(text).filter((e) => e !== '[DONE]').map((e) => JSON.parse(e));
}

function streamedText(text) {
  return chunks(text).map((c) => c.choices?.[0]?.delta?.content ?? '').join('');
}

const words = (s) => s.split(' ').filter(Boolean);

async function calls(model) {
  return (await sim.stats()).models[model]?.calls ?? 0;
}

async function accessLine(id) {
  return waitFor(() => gw.accessLog().find((l) => l.type === 'access' && l.request_id === id),
    { what: `the access line of ${id}` });
}

async function wholeAnswerAfter(route, model, how, target) {
  const res = await streamChat(route);
  assert.equal(res.status, 200);
  const { text, broken } = await readStream(res);
  assert.equal(broken, false, text.slice(-400));
  assert.ok(!text.includes('"error"'), text.slice(-400));
  assert.equal(streamedText(text), whole60);
  assert.deepEqual(words(streamedText(text)), words(whole60)); // every word exactly once
  assert.equal(events(text).at(-1), '[DONE]');
  assert.ok(text.includes(`: bascule continued on ${target} by ${how}\n\n`), text);
  const access = await accessLine(res.headers.get('x-request-id'));
  assert.equal(access.termination, 'ok');
  assert.equal(access.continued?.how, how);
  assert.equal(access.continued?.target, target);
  return { text, access };
}

test('a stream cut after 40 of 60 words is continued by replay and match: all 60 words once', async () => {
  await sim.setModel('sc-rep', { tokens: 60, script: [{ action: 'cut', after_events: 41 }] });
  const { access } = await wholeAnswerAfter('rep', 'sc-rep', 'replay', 'rep@sim');
  assert.equal(await calls('sc-rep'), 2);
  // Every attempt counts: the cut one (40 tokens, estimated) and the replay (60, reported).
  assert.equal(access.output_tokens, 100);
  assert.equal(access.cost_estimated, true);
  const lines = gw.accessLog().filter((l) => l.type === 'attempt' && l.request_id === access.request_id);
  assert.equal(lines.length, 2);
  assert.equal(lines[0].next, 'retry');
  assert.equal(lines[0].why, 'stream_cut');
  assert.deepEqual(lines[1].continued, { target: 'rep@sim', how: 'replay', bytes: access.continued.bytes });
  assert.ok(access.continued.bytes > 0);
  const metrics = await (await fetch(`${gw.url}/metrics`)).text();
  assert.match(metrics, /bascule_stream_continuations_total\{route="rep",target="rep@sim",how="replay",result="ok"\} 1/);
});

test('a target with the capability prefill continues from the text already sent', async () => {
  await sim.setModel('sc-pre', { tokens: 60, script: [{ action: 'cut', after_events: 41 }] });
  await wholeAnswerAfter('pre', 'sc-pre', 'prefill', 'pre@sim');
  assert.equal(await calls('sc-pre'), 2);
  const second = (await sim.requests('sc-pre')).at(-1).body;
  const last = second.messages.at(-1);
  assert.equal(last.role, 'assistant');
  assert.equal(last.content, first40);
});

test('a replay that differs from what was sent: not one of its words reaches the client', async () => {
  await sim.setModel('sc-dif', {
    tokens: 60,
    script: [{ action: 'cut', after_events: 41 }, { action: 'ok', content: 'Quite another answer altogether, zebra.' }],
  });
  const res = await streamChat('dif');
  const { text, broken } = await readStream(res);
  assert.ok(broken);
  assert.equal(streamedText(text), first40);
  assert.ok(!/zebra|another/.test(text), text.slice(-400));
  const metrics = await (await fetch(`${gw.url}/metrics`)).text();
  assert.match(metrics, /bascule_stream_continuations_total\{route="dif",target="dif@sim",how="replay",result="diverged"\} 1/);
  assert.equal(JSON.parse(events(text).at(-1)).error.code, 'upstream_interrupted');
  assert.equal(await calls('sc-dif'), 2);
});

test('a prefill the target refuses never becomes the client error: replay goes on', async () => {
  await sim.setModel('sc-ref', { tokens: 60, prefill: 'refuse', script: [{ action: 'cut', after_events: 41 }] });
  const { text } = await wholeAnswerAfter('ref', 'sc-ref', 'replay', 'ref@sim');
  assert.ok(!/prefill/i.test(text.replace(/: bascule continued[^\n]*\n/g, '')), text.slice(-400));
  assert.equal(await calls('sc-ref'), 3);
});

test('a tool-call stream that is cut is not continued', async () => {
  await sim.setModel('sc-tool', { script: [{ action: 'cut', after_events: 2 }] });
  const res = await streamChat('tool', {
    tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {} } } }],
  });
  const { text, broken } = await readStream(res);
  assert.ok(broken);
  assert.equal(JSON.parse(events(text).at(-1)).error.code, 'upstream_interrupted');
  assert.equal(await calls('sc-tool'), 1);
});

test('a stream that stalls past stream_idle_timeout_ms is continued', async () => {
  await sim.setModel('sc-stall', { tokens: 60, script: [{ action: 'stall', after_events: 21, stall_ms: 10000 }] });
  await wholeAnswerAfter('stall', 'sc-stall', 'replay', 'stall@sim');
  assert.equal(await calls('sc-stall'), 2);
});

test('a malformed event at the 10th event is continued', async () => {
  await sim.setModel('sc-bad', { tokens: 60, script: [{ action: 'malformed', after_events: 10 }] });
  await wholeAnswerAfter('bad', 'sc-bad', 'replay', 'bad@sim');
  assert.equal(await calls('sc-bad'), 2);
});

test('without continue, a cut stream still ends with one error event', async () => {
  await sim.setModel('sc-off', { tokens: 60, script: [{ action: 'cut', after_events: 41 }] });
  const res = await streamChat('off');
  const { text, broken } = await readStream(res);
  assert.ok(broken);
  assert.equal(JSON.parse(events(text).at(-1)).error.code, 'upstream_interrupted');
  assert.equal(await calls('sc-off'), 1);
});

test('an in-band error event of a retryable kind is continued', async () => {
  await sim.setModel('sc-err', { tokens: 60, script: [{ action: 'error_200', after_events: 21 }] });
  await wholeAnswerAfter('err', 'sc-err', 'replay', 'err@sim');
  assert.equal(await calls('sc-err'), 2);
});

test('side_effects: write_possible is never continued', async () => {
  await sim.setModel('sc-write', { tokens: 60, script: [{ action: 'cut', after_events: 41 }] });
  const res = await streamChat('write');
  const { text, broken } = await readStream(res);
  assert.ok(broken);
  assert.equal(streamedText(text), first40);
  assert.equal(JSON.parse(events(text).at(-1)).error.code, 'upstream_interrupted');
  assert.equal(await calls('sc-write'), 1);
});

test('a fallback model continues only with allow_cross_model_fallback', async () => {
  await sim.setModel('sc-fa', { tokens: 60, script: [{ action: 'cut', after_events: 41 }] });
  await sim.setModel('sc-fb', { tokens: 60 });
  const off = await streamChat('fallback-off');
  const r1 = await readStream(off);
  assert.ok(r1.broken);
  assert.equal(streamedText(r1.text), first40);
  assert.equal(await calls('sc-fa'), 1);
  assert.equal(await calls('sc-fb'), 0);
  await sim.setModel('sc-ga', { tokens: 60, script: [{ action: 'cut', after_events: 41 }] });
  await sim.setModel('sc-gb', { tokens: 60 });
  await wholeAnswerAfter('fallback-on', 'sc-gb', 'replay', 'gb@sim');
  assert.equal(await calls('sc-ga'), 1);
  assert.equal(await calls('sc-gb'), 1);
});

test('an Anthropic Messages stream is continued in its own events', async () => {
  await sim.setModel('sc-msg', { tokens: 60, script: [{ action: 'cut', after_events: 41 }] });
  const res = await fetch(`${gw.base}/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: 'msg', max_tokens: 500, stream: true, messages: [{ role: 'user', content: 'x' }] }),
  });
  assert.equal(res.status, 200);
  const { text, broken } = await readStream(res);
  assert.equal(broken, false, text.slice(-400));
  const data = text.split('\n\n').map((e) => e.split('\n').find((l) => l.startsWith('data: ')))
    .filter(Boolean).map((l) => JSON.parse(l.slice(6)));
  const said = data.filter((d) => d.type === 'content_block_delta').map((d) => d.delta.text).join('');
  assert.equal(said, whole60);
  assert.equal(data.filter((d) => d.type === 'message_start').length, 1);
  assert.equal(data.at(-1).type, 'message_stop');
  assert.ok(!data.some((d) => d.type === 'error'));
  assert.ok(text.includes(': bascule continued on msg@sim by replay'));
  assert.equal(await calls('sc-msg'), 2);
});

test('a Responses API stream is continued in its own events', async () => {
  await sim.setModel('sc-resp', { tokens: 60, script: [{ action: 'cut', after_events: 41 }] });
  const res = await fetch(`${gw.base}/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'resp', stream: true, input: 'x' }),
  });
  assert.equal(res.status, 200);
  const { text, broken } = await readStream(res);
  assert.equal(broken, false, text.slice(-400));
  const data = text.split('\n\n').map((e) => e.split('\n').find((l) => l.startsWith('data: ')))
    .filter(Boolean).map((l) => JSON.parse(l.slice(6)));
  const said = data.filter((d) => d.type === 'response.output_text.delta').map((d) => d.delta).join('');
  assert.equal(said, whole60);
  assert.equal(data.at(-1).type, 'response.completed');
  assert.equal(data.at(-1).response.output[0].content[0].text, whole60);
  assert.ok(text.includes(': bascule continued on resp@sim by replay'));
  assert.equal(await calls('sc-resp'), 2);
});

test('an Anthropic target continues by its native prefill', async () => {
  await sim.setModel('sc-claude', { tokens: 60, script: [{ action: 'cut', after_events: 43 }] });
  const res = await streamChat('claude');
  const { text, broken } = await readStream(res);
  assert.equal(broken, false, text.slice(-400));
  assert.equal(streamedText(text), whole60);
  assert.ok(text.includes(': bascule continued on claude@ant by prefill'), text);
  assert.equal(await calls('sc-claude'), 2);
  const last = (await sim.requests('sc-claude')).at(-1).body.messages.at(-1);
  assert.equal(last.role, 'assistant');
});

// An Anthropic client on an Anthropic target, a Responses client on an openai target (the
// upstream's own events relayed): integration/stream_continue_passthrough.test.mjs.

test('the profile says how an openai_compatible server takes the prefill', async () => {
  for (const [route, model, target] of [['vllm', 'sc-vllm', 'v@vllm'], ['deep', 'sc-deep', 'd@deep']]) {
    await sim.setModel(model, { tokens: 60, script: [{ action: 'cut', after_events: 41 }] });
    await wholeAnswerAfter(route, model, 'prefill', target);
    assert.equal(await calls(model), 2);
  }
  const v = (await sim.requests('sc-vllm')).at(-1).body;
  assert.equal(v.continue_final_message, true);
  assert.equal(v.add_generation_prompt, false);
  assert.equal(v.messages.at(-1).content, first40);
  const d = (await sim.requests('sc-deep')).at(-1).body;
  assert.equal(d.messages.at(-1).prefix, true);
  assert.equal(d.continue_final_message, undefined);
  const plain = (await sim.requests('sc-pre')).at(-1).body;
  assert.equal(plain.continue_final_message, undefined);
  assert.equal(plain.messages.at(-1).prefix, undefined);
});
