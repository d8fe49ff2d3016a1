// Request members the gateway reads are the members every upstream parser reads: top-level
// names are compared with their escapes decoded, so "\u006dodel" is "model", and any name
// that appears twice is a 400 duplicate_key naming it -- nothing reaches the upstream. The
// escaped form of a name alone is read as that member (routing, contract, estimate, stream).
// Also: tools must be an array, each message an object.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startSim, startGateway } from '../lib/harness.mjs';

let sim, gw;

before(async () => {
  sim = await startSim();
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 1
log: { level: warn }
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-h"], health: { probe: none } }
targets:
  cheap: { provider: sim, model: h-cheap, capabilities: [text, streaming] }
  dear: { provider: sim, model: h-dear, capabilities: [text, streaming, tools] }
  emb: { provider: sim, model: h-emb, capabilities: [text, embeddings] }
routes:
  demo: { primary: [cheap] }
  o1-pro: { primary: [dear] }
  vectors: { primary: [emb] }
`,
  });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

/** POSTs the raw <body> text to <path> under the gateway's /v1. */
function post(body, path = '/chat/completions') {
  return fetch(`${gw.base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
}

const total = async () => (await sim.stats()).total;
const MSGS = '"messages":[{"role":"user","content":"hi"}]';

/** Sends <body>, expects a 400 with <code> (and <message> matching), and no upstream request. */
async function refused(body, code, message, path) {
  const before = await total();
  const res = await post(body, path);
  const json = await res.json();
  assert.equal(res.status, 400, JSON.stringify(json));
  if (code !== undefined) assert.equal(json.error.code, code);
  if (message) assert.match(json.error.message, message);
  assert.equal(await total(), before, 'the sim received a request');
  return json;
}

test('an escaped duplicate "model" is a 400 naming model; the sim receives nothing', async () => {
  await refused(`{"model":"demo","\\u006dodel":"o1-pro",${MSGS}}`, 'duplicate_key', /'model'/);
  // The literal duplicate, and the escaped one first, likewise.
  await refused(`{"model":"demo","model":"o1-pro",${MSGS}}`, 'duplicate_key', /'model'/);
  await refused(`{"\\u006dodel":"o1-pro","model":"demo",${MSGS}}`, 'duplicate_key', /'model'/);
});

test('escaped duplicates of max_tokens, stream and tools are refused, and any other name', async () => {
  await refused(`{"model":"demo",${MSGS},"max_tokens":5,"\\u006dax_tokens":100000}`, 'duplicate_key',
    /'max_tokens'/);
  await refused(`{"model":"demo",${MSGS},"stream":false,"\\u0073tream":true}`, 'duplicate_key', /'stream'/);
  await refused(`{"model":"demo",${MSGS},"tools":null,"\\u0074ools":[]}`, 'duplicate_key', /'tools'/);
  await refused(`{"model":"demo",${MSGS},"user":"a","us\\u0065r":"b"}`, 'duplicate_key', /'user'/);
  await refused(`{"model":"demo",${MSGS},"n\\u00e9":1,"n\u00e9":2}`, 'duplicate_key', /'n\u00e9'/);
});

test('nested names the gateway reads are compared decoded too', async () => {
  await refused(`{"model":"demo",${MSGS},"stream":true,"stream_options":{"include_usage":false,` +
    '"\\u0069nclude_usage":true}}', 'duplicate_key', /include_usage/);
  // Inside messages the router reads "content" and a part's "type" when looking for images.
  const image = '{"type":"image_url","image_url":{"url":"data:,x"}}';
  await refused(`{"model":"demo","messages":[{"role":"user","content":[${image}],"\\u0063ontent":"b"}]}`,
    'duplicate_key', /content/);
  await refused('{"model":"demo","messages":[{"role":"user","content":[{"type":"text","text":"a",' +
    '"\\u0074ype":"image_url","image_url":{"url":"data:,x"}}]}]}', 'duplicate_key', /type/);
  await refused(`{"model":"demo",${MSGS},"response_format":{"type":"text","typ\\u0065":"json_schema"}}`,
    'duplicate_key', /type/);
});

test('a top-level name with a lone surrogate escape is refused', async () => {
  await refused(`{"model":"demo",${MSGS},"\\ud800":1}`, 'invalid_request', /lone surrogate/);
});

test('"\\u006dodel" alone is the model: routed by it, spliced, forwarded', async () => {
  const res = await post(`{"\\u006dodel":"demo",${MSGS}}`);
  assert.equal(res.status, 200, await res.clone().text());
  await res.arrayBuffer();
  const last = await sim.lastRequest('h-cheap');
  assert.equal(last.body.model, 'h-cheap');
  // The model value is read decoded too.
  const esc = await post(`{"model":"d\\u0065mo",${MSGS}}`);
  assert.equal(esc.status, 200, await esc.clone().text());
  await esc.arrayBuffer();
  assert.equal(await sim.calls('h-cheap'), 2);
});

test('"\\u0074ools" alone on a route without tools is refused like plain tools', async () => {
  const tools = '[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]';
  const plain = await refused(`{"model":"demo",${MSGS},"tools":${tools}}`, undefined);
  const escaped = await refused(`{"model":"demo",${MSGS},"\\u0074ools":${tools}}`, undefined);
  assert.equal(escaped.reason, plain.reason);
  assert.match(escaped.error.message, /missing: tools/);
});

test('tools must be an array and every message an object', async () => {
  await refused(`{"model":"demo",${MSGS},"tools":{}}`, 'invalid_type', /'tools' must be an array/);
  await refused(`{"model":"demo",${MSGS},"tools":"x"}`, 'invalid_type', /'tools' must be an array/);
  await refused('{"model":"demo","messages":[1]}', 'invalid_messages', /must be an object/);
  await refused('{"model":"demo","messages":[{"role":"user","content":"a"},"b"]}', 'invalid_messages',
    /must be an object/);
  // null tools is no tools.
  const res = await post(`{"model":"demo",${MSGS},"tools":null}`);
  assert.equal(res.status, 200);
  await res.arrayBuffer();
});

test('embeddings: an escaped duplicate "model" is refused, an escaped one alone is read', async () => {
  await refused('{"model":"vectors","\\u006dodel":"demo","input":"hi"}', 'duplicate_key', /'model'/,
    '/embeddings');
  const res = await post('{"\\u006dodel":"vectors","input":"hi"}', '/embeddings');
  assert.equal(res.status, 200, await res.clone().text());
  await res.arrayBuffer();
  assert.equal((await sim.lastRequest('h-emb')).body.model, 'h-emb');
});
