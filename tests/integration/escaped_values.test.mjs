// Values the gateway decides on are read decoded, as the upstream reads them: a content part
// of type "image\u005furl" needs vision and a response_format of type "json\u005fschema"
// needs json_schema, exactly like their unescaped forms. Before, the raw bytes were compared
// and the escaped forms skipped both capability checks.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startSim, startGateway } from '../lib/harness.mjs';

let sim, gw;

before(async () => {
  sim = await startSim();
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: warn }
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-esc"], health: { probe: none } }
targets:
  plain: { provider: sim, model: e-plain, capabilities: [text, streaming] }
  seeing: { provider: sim, model: e-seeing, capabilities: [text, streaming, vision, json_schema] }
routes:
  plain: { primary: [plain] }
  seeing: { primary: [seeing] }
`,
  });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

const post = (body) => fetch(`${gw.base}/chat/completions`, {
  method: 'POST', headers: { 'content-type': 'application/json' }, body });

const IMG = '{"url":"data:image/png;base64,iVBORw0KGgo="}';
const image = (model, type) =>
  `{"model":"${model}","messages":[{"role":"user","content":[{"type":"text","text":"what is it"},` +
  `{"type":"${type}","image_url":${IMG}}]}]}`;
const schema = (model, type) =>
  `{"model":"${model}","messages":[{"role":"user","content":"hi"}],"response_format":` +
  `{"type":"${type}","json_schema":{"name":"x","schema":{"type":"object"}}}}`;

async function refusedFor(body, cap) {
  const res = await post(body);
  assert.equal(res.status, 400, await res.clone().text());
  const json = await res.json();
  assert.equal(json.reason, 'no_eligible_fallback');
  assert.match(json.error.message, new RegExp(`missing: ${cap}`));
  return json.error.message;
}

test('an escaped image_url part is refused on a route without vision, like the plain one', async () => {
  const plain = await refusedFor(image('plain', 'image_url'), 'vision');
  assert.equal(await refusedFor(image('plain', 'image\\u005furl'), 'vision'), plain);
  assert.equal(await refusedFor(image('plain', '\\u0069\\u006d\\u0061\\u0067\\u0065_url'), 'vision'), plain);
  assert.equal(await sim.calls('e-plain'), 0);
});

test('an escaped json_schema response format is refused on a route without it', async () => {
  const plain = await refusedFor(schema('plain', 'json_schema'), 'json_schema');
  assert.equal(await refusedFor(schema('plain', 'json\\u005fschema'), 'json_schema'), plain);
  assert.equal(await sim.calls('e-plain'), 0);
});

test('a repeated part type hiding an escaped image_url is a duplicate_key', async () => {
  const res = await post('{"model":"plain","messages":[{"role":"user","content":[' +
    `{"type":"text","text":"x","type":"image\\u005furl","image_url":${IMG}}]}]}`);
  assert.equal(res.status, 400);
  assert.equal((await res.json()).error.code, 'duplicate_key');
  assert.equal(await sim.calls('e-plain'), 0);
});

test('the escaped forms still go through where the capability is there', async () => {
  for (const body of [image('seeing', 'image\\u005furl'), schema('seeing', 'json\\u005fschema')]) {
    const res = await post(body);
    assert.equal(res.status, 200, await res.clone().text());
    await res.arrayBuffer();
  }
  assert.equal(await sim.calls('e-seeing'), 2);
});
