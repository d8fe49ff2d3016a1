// POST /v1/responses, the OpenAI Responses API, translated to chat completions for every
// target: plain answers, the typed event stream, tool round trips, json_schema,
// previous_response_id (kept in the store), built-in tools refused, failover before the
// commit point and the error events after it. See docs/internals/responses.md.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startSim, startGateway, readStream } from '../lib/harness.mjs';

let sim, gw;
const CAPS = 'capabilities: [text, streaming, tools, json_schema, json_object, vision]';

before(async () => {
  sim = await startSim();
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 2
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-r"], health: { probe: none } }
  oai: { kind: openai, base_url: "${sim.base}", keys: ["sk-oai"], health: { probe: none } }
  ant: { kind: anthropic, base_url: "${sim.base.replace(/\/v1$/, '')}/anthropic/v1", keys: ["sk-ant"], health: { probe: none } }
targets:
  plain: { provider: sim, model: rs-plain, ${CAPS} }
  tooly: { provider: sim, model: rs-tool, ${CAPS} }
  fo-a: { provider: sim, model: rs-fo-a, ${CAPS} }
  fo-b: { provider: sim, model: rs-fo-b, ${CAPS} }
  cut: { provider: sim, model: rs-cut, ${CAPS} }
  claude: { provider: ant, model: rs-claude, ${CAPS} }
  buf-a: { provider: sim, model: rs-buf-a, ${CAPS} }
  buf-b: { provider: sim, model: rs-buf-b, ${CAPS} }
  nat-a: { provider: oai, model: rs-nat-a, ${CAPS} }
  nat-b: { provider: oai, model: rs-nat-b, ${CAPS} }
routes:
  native: { primary: [nat-a, nat-b], envelope: { max_same_target_attempts: 1 } }
  buffered: { primary: [buf-a, buf-b], envelope: { on_stream_failure: buffer, max_same_target_attempts: 1 } }
  plain: { primary: [plain] }
  tooly: { primary: [tooly] }
  failover: { primary: [fo-a, fo-b], envelope: { max_same_target_attempts: 1 } }
  cut: { primary: [cut], envelope: { max_same_target_attempts: 1 } }
  claude: { primary: [claude] }
`,
  });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

const post = (body, raw = false) =>
  fetch(`${gw.base}/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: raw ? body : JSON.stringify(body),
  });

// Parses an SSE body into [{event, data}] (data parsed as JSON).
function events(text) {
  return text.split('\n\n').filter((f) => f.trim()).map((f) => {
    const ev = /^event: (.*)$/m.exec(f)?.[1];
    const data = /^data: (.*)$/m.exec(f)?.[1];
    return { event: ev, data: JSON.parse(data) };
  });
}

test('a plain string input becomes a Response with one output_text message and usage', async () => {
  await sim.setModel('rs-plain', { content: 'Hello héllo ✓ 🚀' });
  const res = await post({ model: 'plain', input: 'hi there', instructions: 'be brief', max_output_tokens: 50 });
  assert.equal(res.status, 200);
  const r = await res.json();
  assert.match(r.id, /^resp_/);
  assert.equal(r.object, 'response');
  assert.equal(r.status, 'completed');
  assert.equal(r.model, 'plain');
  assert.equal(r.output.length, 1);
  assert.equal(r.output[0].type, 'message');
  assert.equal(r.output[0].role, 'assistant');
  assert.deepEqual(r.output[0].content[0].annotations, []);
  assert.equal(r.output[0].content[0].type, 'output_text');
  assert.equal(r.output[0].content[0].text, 'Hello héllo ✓ 🚀');
  assert.ok(r.usage.input_tokens > 0 && r.usage.output_tokens > 0);
  assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
  const sent = (await sim.lastRequest('rs-plain')).body;
  assert.deepEqual(sent.messages, [
    { role: 'system', content: 'be brief' },
    { role: 'user', content: 'hi there' },
  ]);
  assert.equal(sent.max_tokens, 50);
});

test('input items: message parts, developer role, images and tool history translate to chat', async () => {
  const res = await post({
    model: 'plain',
    input: [
      { role: 'developer', content: 'dev says' },
      { type: 'message', role: 'user', content: [
        { type: 'input_text', text: 'look' },
        { type: 'input_image', image_url: 'https://example.com/a.png', detail: 'low' }] },
      { type: 'function_call', call_id: 'call_1', name: 'get', arguments: '{"a":1}' },
      { type: 'function_call_output', call_id: 'call_1', output: '42' },
      { role: 'assistant', content: [{ type: 'output_text', text: 'it is 42' }] },
      { role: 'user', content: 'thanks' },
    ],
    temperature: 0.5, top_p: 0.9,
  });
  assert.equal(res.status, 200);
  const sent = (await sim.lastRequest('rs-plain')).body;
  assert.deepEqual(sent.messages, [
    { role: 'system', content: 'dev says' },
    { role: 'user', content: [
      { type: 'text', text: 'look' },
      { type: 'image_url', image_url: { url: 'https://example.com/a.png', detail: 'low' } }] },
    { role: 'assistant', content: null, tool_calls: [
      { id: 'call_1', type: 'function', function: { name: 'get', arguments: '{"a":1}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: '42' },
    { role: 'assistant', content: 'it is 42' },
    { role: 'user', content: 'thanks' },
  ]);
  assert.equal(sent.temperature, 0.5);
  assert.equal(sent.top_p, 0.9);
});

const weather = {
  type: 'function', name: 'get_weather', description: 'the weather',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: false,
};

test('function tools: a function_call item, then function_call_output continues the turn', async () => {
  await sim.setModel('rs-tool', { script: [{ action: 'ok', tool_arguments: '{"city":"Köln"}' }] });
  let res = await post({ model: 'tooly', input: 'weather?', tools: [weather], tool_choice: 'required' });
  assert.equal(res.status, 200);
  const r1 = await res.json();
  assert.equal(r1.output.length, 1);
  const call = r1.output[0];
  assert.equal(call.type, 'function_call');
  assert.equal(call.name, 'get_weather');
  assert.equal(call.arguments, '{"city":"Köln"}');
  assert.match(call.call_id, /^call_sim_/);
  assert.match(call.id, /^fc_/);
  const sent = (await sim.lastRequest('rs-tool')).body;
  assert.deepEqual(sent.tools, [{ type: 'function', function: {
    name: 'get_weather', description: 'the weather', parameters: weather.parameters, strict: false } }]);
  assert.equal(sent.tool_choice, 'required');

  res = await post({
    model: 'tooly', tools: [weather],
    input: [{ role: 'user', content: 'weather?' }, call,
      { type: 'function_call_output', call_id: call.call_id, output: 'sunny' }],
  });
  assert.equal(res.status, 200);
  const r2 = await res.json();
  assert.equal(r2.output[0].type, 'message');
  const sent2 = (await sim.lastRequest('rs-tool')).body;
  assert.equal(sent2.messages.at(-1).role, 'tool');
  assert.equal(sent2.messages.at(-1).content, 'sunny');
  assert.equal(sent2.messages.at(-2).tool_calls[0].id, call.call_id);
});

test('text.format json_schema becomes response_format', async () => {
  await sim.setModel('rs-plain', { content: '{"answer":42}' });
  const schema = { type: 'object', properties: { answer: { type: 'integer' } }, required: ['answer'], additionalProperties: false };
  const res = await post({ model: 'plain', input: 'q', text: { format: { type: 'json_schema', name: 'ans', schema, strict: true } } });
  assert.equal(res.status, 200);
  const r = await res.json();
  assert.deepEqual(JSON.parse(r.output[0].content[0].text), { answer: 42 });
  assert.equal(r.text.format.type, 'json_schema');
  const sent = (await sim.lastRequest('rs-plain')).body;
  assert.deepEqual(sent.response_format, { type: 'json_schema', json_schema: { name: 'ans', schema, strict: true } });
});

test('the stream is the typed event sequence with sequence numbers and final usage', async () => {
  await sim.setModel('rs-plain', { content: 'Hello héllo wörld ✓ 🚀' });
  const res = await post({ model: 'plain', input: 'hi', stream: true });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type'), /text\/event-stream/);
  const { text, broken } = await readStream(res);
  assert.equal(broken, false);
  const evs = events(text);
  const types = evs.map((e) => e.data.type);
  evs.forEach((e, i) => { assert.equal(e.event, e.data.type); assert.equal(e.data.sequence_number, i); });
  const deltas = evs.filter((e) => e.data.type === 'response.output_text.delta');
  assert.ok(deltas.length > 1);
  assert.deepEqual([...new Set(types)], [
    'response.created', 'response.in_progress', 'response.output_item.added',
    'response.content_part.added', 'response.output_text.delta', 'response.output_text.done',
    'response.content_part.done', 'response.output_item.done', 'response.completed']);
  assert.equal(deltas.map((e) => e.data.delta).join(''), 'Hello héllo wörld ✓ 🚀');
  const done = evs.find((e) => e.data.type === 'response.output_text.done').data;
  assert.equal(done.text, 'Hello héllo wörld ✓ 🚀');
  const completed = evs.at(-1).data.response;
  assert.equal(completed.status, 'completed');
  assert.equal(completed.output[0].content[0].text, 'Hello héllo wörld ✓ 🚀');
  assert.ok(completed.usage.input_tokens > 0 && completed.usage.output_tokens > 0);
  const sent = (await sim.lastRequest('rs-plain')).body;
  assert.equal(sent.stream, true);
});

test('a streamed tool call: output_item.added, arguments deltas, arguments done', async () => {
  await sim.setModel('rs-tool', { script: [{ action: 'ok', tool_arguments: '{"city":"Zürich, the long one"}' }] });
  const res = await post({ model: 'tooly', input: 'weather?', tools: [weather], stream: true });
  const evs = events((await readStream(res)).text);
  const types = evs.map((e) => e.data.type);
  assert.deepEqual([...new Set(types)], [
    'response.created', 'response.in_progress', 'response.output_item.added',
    'response.function_call_arguments.delta', 'response.function_call_arguments.done',
    'response.output_item.done', 'response.completed']);
  const added = evs.find((e) => e.data.type === 'response.output_item.added').data.item;
  assert.equal(added.type, 'function_call');
  assert.equal(added.name, 'get_weather');
  const args = evs.filter((e) => e.data.type === 'response.function_call_arguments.delta').map((e) => e.data.delta).join('');
  assert.equal(args, '{"city":"Zürich, the long one"}');
  assert.equal(evs.find((e) => e.data.type === 'response.function_call_arguments.done').data.arguments, args);
  assert.equal(evs.at(-1).data.response.output[0].arguments, args);
});

test('previous_response_id continues the conversation; an unknown id is a 400 naming it', async () => {
  await sim.setModel('rs-plain', { content: 'first answer' });
  let res = await post({ model: 'plain', input: 'first question', instructions: 'sys' });
  const r1 = await res.json();
  await sim.setModel('rs-plain', { content: 'second answer' });
  res = await post({ model: 'plain', input: 'second question', previous_response_id: r1.id });
  assert.equal(res.status, 200);
  const r2 = await res.json();
  assert.equal(r2.previous_response_id, r1.id);
  let sent = (await sim.lastRequest('rs-plain')).body;
  assert.deepEqual(sent.messages, [
    { role: 'user', content: 'first question' },
    { role: 'assistant', content: 'first answer' },
    { role: 'user', content: 'second question' },
  ]);
  // A streamed third turn chains on the second.
  res = await post({ model: 'plain', input: 'third', previous_response_id: r2.id, stream: true });
  const evs = events((await readStream(res)).text);
  const r3 = evs.at(-1).data.response;
  res = await post({ model: 'plain', input: 'fourth', previous_response_id: r3.id });
  assert.equal(res.status, 200);
  sent = (await sim.lastRequest('rs-plain')).body;
  assert.deepEqual(sent.messages.map((m) => m.content),
    ['first question', 'first answer', 'second question', 'second answer', 'third', 'second answer', 'fourth']);

  res = await post({ model: 'plain', input: 'x', previous_response_id: 'resp_nope' });
  assert.equal(res.status, 400);
  const e = await res.json();
  assert.match(e.error.message, /resp_nope/);
  assert.equal(e.error.code, 'previous_response_not_found');

  // store: false keeps nothing.
  res = await post({ model: 'plain', input: 'secret', store: false });
  const r5 = await res.json();
  assert.equal(r5.store, false);
  res = await post({ model: 'plain', input: 'x', previous_response_id: r5.id });
  assert.equal(res.status, 400);
});

test('a kept turn belongs to the credential that made it, and its id is never the client\'s choice', async () => {
  const as = (cred, body, extra = {}) => fetch(`${gw.base}/responses`, {
    method: 'POST', headers: { 'content-type': 'application/json', ...cred, ...extra }, body: JSON.stringify(body),
  });
  const alice = { authorization: 'Bearer sk-alice-0123456789' };
  const mallory = { authorization: 'Bearer sk-mallory-0123456789' };
  await sim.setModel('rs-plain', { content: 'alice private answer' });
  let res = await as(alice, { model: 'plain', input: 'my secret' }, { 'x-request-id': 'chosen-id-1' });
  const r1 = await res.json();
  assert.equal(res.status, 200);
  assert.notEqual(r1.id, 'resp_chosen-id-1', 'the response id does not come from X-Request-Id');
  res = await as(alice, { model: 'plain', input: 'again' }, { 'x-request-id': 'chosen-id-1' });
  assert.notEqual((await res.json()).id, r1.id, 'the same X-Request-Id never gives the same id');
  // Another credential (or none) cannot continue, and so cannot read, Alice's conversation.
  for (const cred of [mallory, { 'x-api-key': 'sk-alice-0123456789' }, {}]) {
    res = await as(cred, { model: 'plain', input: 'what did she say?', previous_response_id: r1.id });
    assert.equal(res.status, 400);
    assert.equal((await res.json()).error.code, 'previous_response_not_found');
  }
  res = await as(alice, { model: 'plain', input: 'go on', previous_response_id: r1.id });
  assert.equal(res.status, 200);
  const sent = (await sim.lastRequest('rs-plain')).body;
  assert.deepEqual(sent.messages.map((m) => m.content), ['my secret', 'alice private answer', 'go on']);
});

test('item_reference entries are replaced by the kept items they name', async () => {
  await sim.setModel('rs-tool', { script: [{ action: 'ok', tool_arguments: '{"city":"Oslo"}' }] });
  let res = await post({ model: 'tooly', input: 'weather?', tools: [weather] });
  const r1 = await res.json();
  const call = r1.output[0];
  res = await post({
    model: 'tooly', tools: [weather],
    input: [{ role: 'user', content: 'weather?' }, { type: 'item_reference', id: call.id },
      { type: 'function_call_output', call_id: call.call_id, output: 'sunny' }],
  });
  assert.equal(res.status, 200);
  const sent = (await sim.lastRequest('rs-tool')).body;
  assert.deepEqual(sent.messages.at(-2).tool_calls, [
    { id: call.call_id, type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }]);
  for (const id of ['fc_req_unknown_0', 'rs_whatever']) {
    res = await post({ model: 'tooly', input: [{ type: 'item_reference', id }] });
    assert.equal(res.status, 400);
    assert.equal((await res.json()).error.code, 'item_not_found');
  }
});

test('built-in tools are refused by name; duplicate members are refused', async () => {
  for (const type of ['web_search', 'web_search_preview', 'file_search', 'code_interpreter', 'mcp']) {
    const res = await post({ model: 'plain', input: 'x', tools: [{ type }] });
    assert.equal(res.status, 400);
    assert.match((await res.json()).error.message, new RegExp(`'${type}'`));
  }
  const res = await post('{"model":"plain","input":"a","inp\\u0075t":"b"}', true);
  assert.equal(res.status, 400);
  assert.equal((await res.json()).error.code, 'duplicate_key');
  const unknown = await post({ model: 'nope', input: 'x' });
  assert.equal(unknown.status, 404);
});

test('a failure before the commit point fails over invisibly', async () => {
  await sim.setModel('rs-fo-a', { script: [{ action: 'status', status: 500, times: 10 }] });
  await sim.setModel('rs-fo-b', { content: 'from b' });
  const res = await post({ model: 'failover', input: 'x', stream: true });
  assert.equal(res.status, 200);
  const evs = events((await readStream(res)).text);
  assert.equal(evs.at(-1).data.type, 'response.completed');
  assert.equal(evs.at(-1).data.response.output[0].content[0].text, 'from b');
  assert.equal(res.headers.get('x-bascule-target'), 'fo-b');
});

test('a buffered stream whose first attempt broke is released whole, numbered from 0', async () => {
  await sim.setModel('rs-buf-a', { script: [{ action: 'cut', after_events: 4 }] });
  await sim.setModel('rs-buf-b', { content: 'whole ✓' });
  const res = await post({ model: 'buffered', input: 'x', stream: true });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-bascule-target'), 'buf-b');
  const evs = events((await readStream(res)).text);
  evs.forEach((e, i) => assert.equal(e.data.sequence_number, i));
  assert.equal(evs.filter((e) => e.data.type === 'response.created').length, 1);
  assert.equal(evs.at(-1).data.type, 'response.completed');
  assert.equal(evs.at(-1).data.response.output.length, 1);
  assert.equal(evs.at(-1).data.response.output[0].content[0].text, 'whole ✓');
});

test('a break after the commit point ends the stream with error and response.failed', async () => {
  await sim.setModel('rs-cut', { script: [{ action: 'cut', after_events: 3 }] });
  const res = await post({ model: 'cut', input: 'x', stream: true });
  assert.equal(res.status, 200);
  const { text } = await readStream(res);
  const evs = events(text);
  const types = evs.map((e) => e.data.type);
  assert.equal(types[0], 'response.created');
  assert.ok(types.includes('response.output_text.delta'));
  assert.deepEqual(types.slice(-2), ['error', 'response.failed']);
  assert.equal(evs.at(-1).data.response.status, 'failed');
  assert.ok(evs.at(-1).data.response.error.message);
  evs.forEach((e, i) => assert.equal(e.data.sequence_number, i));
});

test('an Anthropic target answers a Responses client, plain and streamed', async () => {
  await sim.setModel('rs-claude', { content: 'from claude ✓' });
  let res = await post({ model: 'claude', input: 'hi', instructions: 'sys' });
  assert.equal(res.status, 200);
  const r = await res.json();
  assert.equal(r.output[0].content[0].text, 'from claude ✓');
  res = await post({ model: 'claude', input: 'hi', stream: true });
  const evs = events((await readStream(res)).text);
  assert.equal(evs.at(-1).data.type, 'response.completed');
  assert.equal(evs.at(-1).data.response.output[0].content[0].text, 'from claude ✓');
});

test("openai targets get the client's own bytes on /responses, model replaced", async () => {
  await sim.setModel('rs-nat-a', { content: 'native ✓' });
  // A previous response the gateway returned to this same caller goes upstream as it is.
  const r0 = await (await post({ model: 'native', input: 'first' })).json();
  const body = { model: 'native', input: [{ role: 'user', content: 'hi' }],
    tools: [{ type: 'web_search' }], previous_response_id: r0.id, store: true,
    include: ['reasoning.encrypted_content'], metadata: { k: 'v' } };
  const res = await post(body);
  assert.equal(res.status, 200);
  const r = await res.json();
  assert.match(r.id, /^resp_sim_/); // the upstream's Response, unchanged
  assert.equal(r.output[0].content[0].text, 'native ✓');
  const seen = await sim.lastRequest('rs-nat-a');
  assert.equal(seen.path, '/v1/responses');
  assert.equal(JSON.stringify(seen.body), JSON.stringify({ ...body, model: 'rs-nat-a' }));
  assert.equal(res.headers.get('x-bascule-target'), 'nat-a');
});

// Issue 24, item 6: every client reaches an OpenAI-kind upstream with the gateway's key, so
// the upstream would continue anyone's stored response. The gateway remembers which
// credential each upstream response id went to and refuses another's previous_response_id
// before anything is sent: the sim's call log shows no call for the refused request.
test("pass-through: another credential's previous_response_id is a 400 and never reaches the upstream", async () => {
  const as = (cred, body) => fetch(`${gw.base}/responses`, {
    method: 'POST', headers: { 'content-type': 'application/json', ...cred }, body: JSON.stringify(body) });
  const alice = { authorization: 'Bearer sk-alice-0123456789' };
  const bob = { authorization: 'Bearer sk-bob-0123456789' };
  await sim.setModel('rs-nat-a', { content: 'alice native secret' });
  let res = await as(alice, { model: 'native', input: 'my secret' });
  assert.equal(res.status, 200);
  const r1 = await res.json();
  res = await as(alice, { model: 'native', input: 'my stream', stream: true });
  const streamed = events((await readStream(res)).text).at(-1).data.response;
  assert.match(streamed.id, /^resp_sim_/);
  const calls = async () => (await sim.calls('rs-nat-a')) + (await sim.calls('rs-nat-b'));
  const before = await calls();
  const seen = (await sim.requests()).length;
  for (const [cred, prev, stream] of [[bob, r1.id, false], [bob, streamed.id, true], [{}, r1.id, false],
    [{ 'x-api-key': 'sk-alice-0123456789' }, r1.id, false], [bob, 'resp_sim_999999', false]]) {
    res = await as(cred, { model: 'native', input: 'what did she say?', previous_response_id: prev, stream });
    assert.equal(res.status, 400);
    assert.equal((await res.json()).error.code, 'previous_response_not_found');
  }
  // GET and DELETE /v1/responses/{id} are not served: no path reaches the upstream by id.
  for (const method of ['GET', 'DELETE']) {
    res = await fetch(`${gw.base}/responses/${r1.id}`, { method, headers: bob });
    assert.ok(res.status === 404 || res.status === 405, `${method}: ${res.status}`);
    await res.arrayBuffer();
  }
  assert.equal(await calls(), before, 'nothing was sent upstream for the refused requests');
  assert.equal((await sim.requests()).length, seen);
  // Alice herself continues both, and the upstream gets her previous_response_id.
  for (const prev of [r1.id, streamed.id]) {
    res = await as(alice, { model: 'native', input: 'go on', previous_response_id: prev });
    assert.equal(res.status, 200);
    assert.equal((await sim.lastRequest('rs-nat-a')).body.previous_response_id, prev);
  }
  assert.equal(await calls(), before + 2);
});

test('a passed-through stream relays the upstream events; failover before the commit point', async () => {
  await sim.setModel('rs-nat-a', { script: [{ action: 'status', status: 503 }] });
  await sim.setModel('rs-nat-b', { content: 'from b ✓' });
  const res = await post({ model: 'native', input: 'hi', stream: true });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-bascule-target'), 'nat-b');
  const evs = events((await readStream(res)).text);
  assert.equal(evs[0].data.type, 'response.created');
  assert.equal(evs.at(-1).data.type, 'response.completed');
  assert.equal(evs.at(-1).data.response.output[0].content[0].text, 'from b ✓');
  assert.equal(evs.filter((e) => e.data.type === 'response.output_text.delta').map((e) => e.data.delta).join(''), 'from b ✓');
  const seen = await sim.lastRequest('rs-nat-b');
  assert.equal(seen.body.stream, true);
  assert.equal(seen.body.stream_options, undefined);
  const dup = await post('{"model":"native","input":"a","m\\u006fdel":"b"}', true);
  assert.equal(dup.status, 400);
});

test('responses.ttl_s: 0 keeps nothing: a next turn naming the response is a 400', async () => {
  const gw0 = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 1
responses: { ttl_s: 0 }
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-r"], health: { probe: none } }
targets:
  plain: { provider: sim, model: rs-plain, ${CAPS} }
routes:
  plain: { primary: [plain] }
`,
  });
  try {
    const call = (body) => fetch(`${gw0.base}/responses`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const r1 = await (await call({ model: 'plain', input: 'hi' })).json();
    assert.equal(r1.store, false);
    const res = await call({ model: 'plain', input: 'again', previous_response_id: r1.id });
    assert.equal(res.status, 400);
    assert.equal((await res.json()).error.code, 'previous_response_not_found');
  } finally {
    await gw0.stop();
  }
});
