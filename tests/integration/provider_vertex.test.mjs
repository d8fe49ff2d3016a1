// The vertex provider kind end to end: the official openai and @anthropic-ai/sdk clients ->
// bascule -> bascule-sim's Vertex dialect, both publishers (Gemini's generateContent and
// Claude's rawPredict), with the OAuth token fetched by bascule's own JWT bearer grant: the
// sim verifies the assertion's RS256 signature, aud, scope and expiry, and then the bearer
// token on every model call. Plain and streamed for each publisher; one token exchange
// however many concurrent requests; a static token file; a token the sim refuses and a
// service account whose key the token endpoint refuses are auth failures (failed over, never
// a hang); Google's RESOURCE_EXHAUSTED is rate_limited; and Claude on Anthropic failing over
// to Claude on Bedrock and then Claude on Vertex, with exact call counts.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startSim, startGateway, waitFor } from '../lib/harness.mjs';
import { writeServiceAccount, writeTokenFile } from '../lib/vertex_sa.mjs';

let sim, gw, client, anthropic;

const TEXT = 'Hello héllo wörld! This is bascule-sim ✓ streaming 🚀 tokens';
const CAPS = '[text, vision, streaming, tools, json_schema, json_object]';
const GEM = 'gemini-2.5-flash';
const CLAUDE = 'claude-sonnet-4-5@20250929';

function config(simUrl) {
  const sa = writeServiceAccount({ tokenUri: `${simUrl}/oauth2/token` });
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const stranger = writeServiceAccount({ privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }) });
  const vx = (vertex) =>
    `kind: vertex, project: sim-project, region: us-east5, base_url: "${simUrl}/v1", vertex: ${vertex}, health: { probe: none }`;
  return `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: info, format: json }
retry:
  backoff: { base_ms: 20, max_ms: 100, jitter: 0.1 }
providers:
  vx: { ${vx(`{ credentials_file: "${sa}" }`)} }
  vx-static: { ${vx(`{ token_file: "${writeTokenFile('ya29.sim-static-token')}" }`)} }
  vx-badtok: { ${vx(`{ token_file: "${writeTokenFile('ya29.not-a-real-token')}" }`)} }
  vx-stranger: { ${vx(`{ credentials_file: "${stranger}", token_url: "${simUrl}/oauth2/token" }`)} }
  anth: { kind: anthropic, base_url: "${simUrl}/anthropic/v1", keys: ["sk-ant-1"], health: { probe: none } }
  br: { kind: bedrock, region: us-east-1, base_url: "${simUrl}", aws: { access_key_id: AKIDSIMEXAMPLE, secret_access_key: "sim/Secret+Access/KeyEXAMPLE" }, health: { probe: none } }
targets:
  gem: { provider: vx, model: ${GEM}, capabilities: ${CAPS} }
  vclaude: { provider: vx, model: "${CLAUDE}", capabilities: ${CAPS} }
  static: { provider: vx-static, model: gemini-static, capabilities: ${CAPS} }
  badtok: { provider: vx-badtok, model: gemini-badtok, capabilities: ${CAPS} }
  stranger: { provider: vx-stranger, model: gemini-stranger, capabilities: ${CAPS} }
  gem-e: { provider: vx, model: gemini-equivalent, capabilities: ${CAPS} }
  c-anth: { provider: anth, model: claude-chain, capabilities: ${CAPS} }
  c-br: { provider: br, model: "anthropic.claude-chain-v1:0", capabilities: ${CAPS} }
  c-vx: { provider: vx, model: "claude-chain@1", capabilities: ${CAPS} }
routes:
  gem: { primary: [gem] }
  vclaude: { primary: [vclaude] }
  static: { primary: [static] }
  badtok: { primary: [badtok], equivalent: [gem-e] }
  stranger: { primary: [stranger], equivalent: [gem-e] }
  gem-rl: { primary: [gem], equivalent: [gem-e], envelope: { max_same_target_attempts: 1 } }
  chain:
    primary: [c-anth]
    equivalent: [c-br, c-vx]
    envelope: { deadline_ms: 10000, max_same_target_attempts: 1, max_attempts: 3 }
`;
}

before(async () => {
  sim = await startSim();
  gw = await startGateway({ config: config(sim.url) });
  client = new OpenAI({ baseURL: gw.base, apiKey: 'client-key', maxRetries: 0 });
  anthropic = new Anthropic({ baseURL: gw.url, apiKey: 'client-key', maxRetries: 0 });
  // The refresher fetches the tokens at start, one credential after the other in config
  // order; requests never wait for it. The stranger's refused exchange is the last of them.
  await waitFor(async () => (await sim.stats()).models['vertex-oauth']?.calls >= 2, { timeoutMs: 5000, what: 'the token exchanges' });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

const bodyOf = (r) => (typeof r.body === 'string' ? JSON.parse(r.body) : r.body);

async function attempts(res, n = 1) {
  const id = res.headers.get('x-request-id');
  const lines = () => gw.accessLog().filter((l) => l.type === 'attempt' && l.request_id === id);
  await waitFor(() => lines().length >= n, { timeoutMs: 3000, what: `${n} attempt line(s)` });
  return lines();
}

function chat(route, body = {}) {
  return fetch(`${gw.base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: route, messages: [{ role: 'user', content: 'hi' }], ...body }),
  });
}

async function streamText(model) {
  const stream = await client.chat.completions.create({ model, stream: true, messages: [{ role: 'user', content: 'stream' }] });
  let text = '';
  let finish = null;
  for await (const chunk of stream)
    for (const c of chunk.choices) {
      text += c.delta?.content ?? '';
      finish = c.finish_reason ?? finish;
    }
  return { text, finish };
}

test('the token grant: an RS256 JWT for the cloud-platform scope, verified by the sim', async () => {
  const [r] = await sim.requests('vertex-oauth');
  assert.equal(r.path, '/oauth2/token');
  assert.match(typeof r.body === 'string' ? r.body : JSON.stringify(r.body), /grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=[\w-]+\.[\w-]+\.[\w-]+/);
});

test('Gemini on Vertex: publisher google path, bearer token, plain and streamed', async () => {
  const res = await client.chat.completions.create({ model: 'gem', messages: [{ role: 'user', content: 'hello vertex' }] });
  assert.equal(res.choices[0].message.content, TEXT);
  const r = await sim.lastRequest(GEM);
  assert.equal(r.path, `/v1/projects/sim-project/locations/us-east5/publishers/google/models/${GEM}:generateContent`);
  assert.match(r.headers.authorization, /^Bearer ya29\.sim\./);
  assert.equal(r.headers['x-goog-api-key'], undefined);
  const s = await streamText('gem');
  assert.equal(s.text, TEXT);
  assert.equal(s.finish, 'stop');
  const r2 = await sim.lastRequest(GEM);
  assert.equal(r2.path, `/v1/projects/sim-project/locations/us-east5/publishers/google/models/${GEM}:streamGenerateContent`);
  assert.equal(r2.query, 'alt=sse');
});

test('Claude on Vertex: rawPredict with anthropic_version and no model in the body', async () => {
  const res = await client.chat.completions.create({ model: 'vclaude', messages: [{ role: 'user', content: 'hello claude' }] });
  assert.equal(res.choices[0].message.content, TEXT);
  const r = await sim.lastRequest(CLAUDE);
  assert.equal(r.path, `/v1/projects/sim-project/locations/us-east5/publishers/anthropic/models/${CLAUDE}:rawPredict`);
  const body = bodyOf(r);
  assert.equal(body.anthropic_version, 'vertex-2023-10-16');
  assert.equal(body.model, undefined);
  assert.equal(r.headers['x-api-key'], undefined);
  const s = await streamText('vclaude');
  assert.equal(s.text, TEXT);
  assert.equal((await sim.lastRequest(CLAUDE)).path.endsWith(':streamRawPredict'), true);
});

test('Anthropic SDK client through Claude on Vertex, plain and streamed', async () => {
  const msg = await anthropic.messages.create({ model: 'vclaude', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] });
  assert.equal(msg.content[0].text, TEXT);
  let text = '';
  for await (const ev of anthropic.messages.stream({ model: 'vclaude', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] }))
    if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') text += ev.delta.text;
  assert.equal(text, TEXT);
});

test('tools round trip on both publishers', async () => {
  const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
  for (const model of ['gem', 'vclaude']) {
    const first = await client.chat.completions.create({ model, tools, tool_choice: 'required', messages: [{ role: 'user', content: 'weather in Paris?' }] });
    const call = first.choices[0].message.tool_calls[0];
    assert.equal(call.function.name, 'get_weather', model);
    const second = await client.chat.completions.create({ model, tools, messages: [
      { role: 'user', content: 'weather in Paris?' }, first.choices[0].message,
      { role: 'tool', tool_call_id: call.id, content: 'sunny' }] });
    assert.equal(second.choices[0].message.content, TEXT, model);
  }
});

test('concurrent requests share one token: no exchange per request', async () => {
  // .ok: the stranger's credential keeps retrying its refused exchange in the background.
  const before = (await sim.stats()).models['vertex-oauth'].ok;
  const res = await Promise.all(Array.from({ length: 8 }, () => chat('gem')));
  for (const r of res) assert.equal(r.status, 200, `${r.status}`);
  await Promise.all(res.map((r) => r.arrayBuffer()));
  assert.equal((await sim.stats()).models['vertex-oauth'].ok, before);
  assert.equal(before, 1, 'one exchange for the one service account since the start');
});

test('refresh before expiry under traffic: one exchange per refresh, no request refused', async () => {
  // A second gateway whose tokens live 300 s: its refresher renews 10 s after each exchange
  // (lifetime minus the 300 s margin, at least 10 s). Requests keep flowing meanwhile.
  const sim2 = await startSim();
  await sim2.setModel('vertex-oauth', { tokens: 1 });
  const sa = writeServiceAccount({ tokenUri: `${sim2.url}/oauth2/token` });
  const gw2 = await startGateway({ config: `listen: "127.0.0.1:{{PORT}}"
workers: 2
providers:
  vx: { kind: vertex, project: p2, region: us-east5, base_url: "${sim2.url}/v1", vertex: { credentials_file: "${sa}" }, health: { probe: none } }
targets:
  g: { provider: vx, model: gemini-refresh }
routes:
  g: { primary: [g] }
` });
  try {
    const exchanges = async () => (await sim2.stats()).models['vertex-oauth']?.ok ?? 0;
    await waitFor(async () => (await exchanges()) >= 1, { timeoutMs: 5000, what: 'the first exchange' });
    const statuses = [];
    const t0 = Date.now();
    // Bounded: at most 150 rounds of 4 concurrent requests, at most 25 s.
    for (let i = 0; i < 150 && Date.now() - t0 < 25000 && (await exchanges()) < 2; i++) {
      const rs = await Promise.all(Array.from({ length: 4 }, () => fetch(`${gw2.base}/chat/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'g', messages: [{ role: 'user', content: 'x' }] }) })));
      for (const r of rs) { statuses.push(r.status); await r.arrayBuffer(); }
      await new Promise((res) => setTimeout(res, 100));
    }
    assert.equal(await exchanges(), 2, 'renewed once, about 10 s after the first exchange');
    assert.ok(statuses.length >= 8);
    assert.deepEqual([...new Set(statuses)], [200]);
    const seen = await sim2.requests('gemini-refresh');
    assert.ok(seen.length > 0);
  } finally {
    await gw2.stop();
    await sim2.stop();
  }
});

test('a token file (workload identity sidecar) supplies the bearer', async () => {
  const res = await chat('static');
  assert.equal(res.status, 200, await res.clone().text());
  await res.arrayBuffer();
  assert.equal((await sim.lastRequest('gemini-static')).headers.authorization, 'Bearer ya29.sim-static-token');
});

test('a token Vertex refuses: 401 UNAUTHENTICATED is auth, failed over', async () => {
  const res = await chat('badtok');
  assert.equal(res.status, 200, await res.clone().text());
  assert.equal(res.headers.get('x-bascule-target'), 'gem-e');
  const a = await attempts(res, 2);
  assert.equal(a[0].kind, 'auth');
  assert.equal(a[0].status, 401);
});

test('a service account the token endpoint refuses: no token, an auth failure, never a hang', async () => {
  const t0 = Date.now();
  const res = await chat('stranger');
  assert.equal(res.status, 200, await res.clone().text());
  assert.equal(res.headers.get('x-bascule-target'), 'gem-e');
  assert.ok(Date.now() - t0 < 5000);
  const a = await attempts(res, 2);
  assert.equal(a[0].kind, 'auth');
  const r = await sim.lastRequest('gemini-stranger');
  assert.equal(r.headers.authorization, undefined);
});

test('RESOURCE_EXHAUSTED (429) is rate_limited and fails over', async () => {
  await sim.setModel(GEM, { script: [{ action: 'status', status: 429 }] });
  const res = await chat('gem-rl');
  assert.equal(res.status, 200, await res.clone().text());
  assert.equal(res.headers.get('x-bascule-target'), 'gem-e');
  const a = await attempts(res, 2);
  assert.equal(a[0].kind, 'rate_limited');
  await sim.deleteModel(GEM);
});

test('Claude on Anthropic -> Bedrock -> Vertex for the same model, exact call counts', async () => {
  await sim.setModel('claude-chain', { script: [{ action: 'status', status: 529 }] });
  await sim.setModel('anthropic.claude-chain-v1:0', { script: [{ action: 'status', status: 503 }] });
  const res = await chat('chain');
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  assert.equal(body.choices[0].message.content, TEXT);
  assert.equal(res.headers.get('x-bascule-target'), 'c-vx');
  assert.equal(res.headers.get('x-bascule-attempts'), '3');
  assert.equal(await sim.calls('claude-chain'), 1);
  assert.equal(await sim.calls('anthropic.claude-chain-v1:0'), 1);
  assert.equal(await sim.calls('claude-chain@1'), 1);
  const a = await attempts(res, 3);
  assert.deepEqual(a.map((x) => [x.kind, x.target]), [['overloaded', 'c-anth'], ['overloaded', 'c-br'], [null, 'c-vx']]);
});
