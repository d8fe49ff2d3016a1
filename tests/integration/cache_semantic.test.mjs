// SPDX-License-Identifier: MIT
// The semantic response cache (routes.<r>.cache.mode: semantic, docs/internals/cache.md), the
// real binary against bascule-sim's bag-of-words embeddings (model sim-words-*,
// docs/internals/sim.md): a paraphrase hits with no upstream chat call, a different question
// misses, a different system prompt misses with the same question, another client misses
// under scope: client, a stream hit replays the stream; an embeddings target that fails or
// hangs past embed_timeout_ms gives a miss and a normal answer; the configuration errors are
// refused with file and line.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSim, startGateway, waitFor, bins } from '../lib/harness.mjs';

const ALPHA = 'alpha-semcache-key-0123456789abcd';
const BETA = 'beta-semcache-key-0123456789abcde';
const ADMIN = 'admin-semcache-key-0123456789abc';
let sim, gw;

const config = (simUrl) => `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: info, format: json }
admin: { key: "${ADMIN}" }
providers:
  oai: { kind: openai, base_url: "${simUrl}/v1", keys: ["sk-oai"], health: { probe: none } }
targets:
  t-chat: { provider: oai, model: m-sem, price: { input_per_mtok: 2.5, output_per_mtok: 10 } }
  t-emb: { provider: oai, model: sim-words-1 }
  t-chat2: { provider: oai, model: m-sem2 }
  t-emb-bad: { provider: oai, model: sim-words-bad }
  t-chat3: { provider: oai, model: m-sem3 }
  t-emb-slow: { provider: oai, model: sim-words-slow }
  t-chat-p: { provider: oai, model: m-sem-p, price: { input_per_mtok: 2, output_per_mtok: 8 } }
  t-emb-p: { provider: oai, model: sim-words-priced, price: { input_per_mtok: 100 } }
routes:
  sempriced: { primary: [t-chat-p], cache: { mode: semantic, embeddings_target: t-emb-p } }
  sem: { primary: [t-chat], cache: { mode: semantic, embeddings_target: t-emb } }
  sembad:
    primary: [t-chat2]
    cache: { mode: semantic, embeddings_target: t-emb-bad }
  semslow:
    primary: [t-chat3]
    cache: { mode: semantic, embeddings_target: t-emb-slow, embed_timeout_ms: 300 }
clients:
  alpha: { key: "\${TEST_ALPHA_KEY}", routes: ["*"] }
  beta: { key: "\${TEST_BETA_KEY}", routes: ["*"] }
`;

before(async () => {
  sim = await startSim();
  gw = await startGateway({
    config: config(sim.url),
    env: { TEST_ALPHA_KEY: ALPHA, TEST_BETA_KEY: BETA },
  });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

async function chat(body, { key = ALPHA } = {}) {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  });
  return { res, text: await res.text() };
}

async function calls(model) {
  return (await sim.stats()).models?.[model]?.calls ?? 0;
}

const ask = (route, content, system = null, extra = {}) => ({
  model: route,
  messages: [...(system ? [{ role: 'system', content: system }] : []), { role: 'user', content }],
  ...extra,
});

test('a paraphrase hits: no upstream chat call, the same answer, Age, cost 0, counted', async () => {
  const a = await chat(ask('sem', 'What is the capital of France?'));
  assert.equal(a.res.status, 200, a.text);
  assert.equal(a.res.headers.get('x-bascule-cache'), 'miss');
  const chats = await calls('m-sem');
  const embeds = await calls('sim-words-1');
  assert.ok(embeds >= 1, 'the question was embedded');
  const b = await chat(ask('sem', 'Could you tell me the capitals of france, please'));
  assert.equal(b.res.status, 200, b.text);
  assert.equal(b.res.headers.get('x-bascule-cache'), 'hit');
  assert.equal(b.text, a.text);
  assert.match(b.res.headers.get('age'), /^\d+$/);
  assert.equal(b.res.headers.get('x-bascule-cost-usd'), '0');
  assert.equal(await calls('m-sem'), chats, 'the hit made no chat call');
  assert.equal(await calls('sim-words-1'), embeds + 1, 'the paraphrase was embedded');
  await waitFor(() => gw.accessLog().some((l) => l.route === 'sem' && l.cache === 'hit'),
    { what: 'the access line of the hit' });
  const metrics = await (await fetch(`${gw.url}/metrics`)).text();
  assert.match(metrics, /bascule_cache_requests_total\{route="sem",result="hit"\} [1-9]/);
  assert.match(metrics, /bascule_cache_requests_total\{route="sem",result="miss"\} [1-9]/);
  const auth = { headers: { authorization: `Bearer ${ADMIN}` } };
  const status = await (await fetch(`${gw.url}/status.json`, auth)).json();
  assert.ok(status.cache.semantic_entries >= 1, JSON.stringify(status.cache));
  // Each entry is charged its 256-float vector (1 KiB) besides its answer.
  assert.ok(status.cache.semantic_bytes > 1024 * status.cache.semantic_entries,
    JSON.stringify(status.cache));
});

test('GET /admin/cache counts the semantic entries; DELETE ?route= drops them, another route keeps its own', async () => {
  const auth = { authorization: `Bearer ${ADMIN}` };
  await chat(ask('sem', 'Which river flows through Vienna?'));
  await chat(ask('sembad', 'Which river flows through Vienna?')); // another route's entry
  const usage = await (await fetch(`${gw.url}/admin/cache`, { headers: auth })).json();
  assert.ok(usage.semantic.entries >= 1 && usage.semantic.bytes > 0, JSON.stringify(usage));
  const del = await fetch(`${gw.url}/admin/cache?route=sem`, { method: 'DELETE', headers: auth });
  assert.equal(del.status, 200);
  const body = await del.json();
  assert.ok(body.semantic_deleted >= 2, JSON.stringify(body)); // this test's and the first test's
  const after = await (await fetch(`${gw.url}/admin/cache`, { headers: auth })).json();
  assert.equal(after.semantic.entries, usage.semantic.entries - body.semantic_deleted);
  assert.ok(after.semantic.entries >= 1, 'sembad keeps its entry');
  const other = await chat(ask('sembad', 'Which river flows through Vienna?'));
  assert.equal(other.res.headers.get('x-bascule-cache'), 'hit', JSON.stringify(after));
  const again = await chat(ask('sem', 'Which river flows through Vienna?'));
  assert.equal(again.res.headers.get('x-bascule-cache'), 'miss', 'the dropped entry no longer answers');
});

test("the embedding is billed: its cost is in the answer's cost (a hit's too) and in bascule_cost_usd_total under the embeddings target", async () => {
  const q = ask('sempriced', 'Name the largest planet of the solar system');
  const a = await chat(q);
  assert.equal(a.res.headers.get('x-bascule-cache'), 'miss');
  const b = await chat(q);
  assert.equal(b.res.headers.get('x-bascule-cache'), 'hit');
  const embed = Number(b.res.headers.get('x-bascule-cost-usd'));
  assert.ok(embed > 0, 'a hit costs its embedding');
  const total = Number(a.res.headers.get('x-bascule-cost-usd'));
  assert.ok(total > embed, `${total} > ${embed}`);
  const metrics = await (await fetch(`${gw.url}/metrics`)).text();
  const series = (target) => Number(metrics.match(new RegExp(
    `bascule_cost_usd_total\\{client="alpha",route="sempriced",target="${target}"\\} (\\S+)`))?.[1]);
  assert.ok(Math.abs(series('t-emb-p') - 2 * embed) < 1e-9, `${series('t-emb-p')} vs 2 x ${embed}`);
  assert.ok(Math.abs(series('t-chat-p') - (total - embed)) < 1e-9, `${series('t-chat-p')} vs ${total - embed}`);
});

test('a different question misses', async () => {
  const a = await chat(ask('sem', 'How tall is Mount Everest?'));
  assert.equal(a.res.headers.get('x-bascule-cache'), 'miss');
  const chats = await calls('m-sem');
  const b = await chat(ask('sem', 'How deep is the Mariana Trench?'));
  assert.equal(b.res.status, 200);
  assert.equal(b.res.headers.get('x-bascule-cache'), 'miss');
  assert.equal(await calls('m-sem'), chats + 1);
  const c = await chat(ask('sem', 'how TALL is mount everest'));
  assert.equal(c.res.headers.get('x-bascule-cache'), 'hit');
});

test('a different system prompt misses with the same question; so do other parameters', async () => {
  const a = await chat(ask('sem', 'Name the largest planet', 'You are terse.'));
  assert.equal(a.res.headers.get('x-bascule-cache'), 'miss');
  const same = await chat(ask('sem', 'Name the largest planet', 'You are terse.'));
  assert.equal(same.res.headers.get('x-bascule-cache'), 'hit');
  const chats = await calls('m-sem');
  const b = await chat(ask('sem', 'Name the largest planet', 'You are a pirate.'));
  assert.equal(b.res.status, 200);
  assert.equal(b.res.headers.get('x-bascule-cache'), 'miss');
  const c = await chat(ask('sem', 'Name the largest planet', 'You are terse.', { temperature: 0 }));
  assert.equal(c.res.headers.get('x-bascule-cache'), 'miss');
  assert.equal(await calls('m-sem'), chats + 2);
});

test('another client misses under scope: client', async () => {
  const a = await chat(ask('sem', 'Who wrote Hamlet?'));
  assert.equal(a.res.headers.get('x-bascule-cache'), 'miss');
  assert.equal((await chat(ask('sem', 'Who wrote Hamlet?'))).res.headers.get('x-bascule-cache'),
    'hit');
  const chats = await calls('m-sem');
  const b = await chat(ask('sem', 'Who wrote Hamlet?'), { key: BETA });
  assert.equal(b.res.status, 200);
  assert.equal(b.res.headers.get('x-bascule-cache'), 'miss');
  assert.equal(await calls('m-sem'), chats + 1, 'beta got its own answer');
});

test('a stream hit replays the stream', async () => {
  const body = ask('sem', 'Describe the color of the sky', null, { stream: true });
  const a = await chat(body);
  assert.equal(a.res.headers.get('x-bascule-cache'), 'miss');
  assert.match(a.text, /data: \[DONE\]/);
  const b = await chat(ask('sem', 'describe the sky color', null, { stream: true }));
  assert.equal(b.res.headers.get('x-bascule-cache'), 'hit');
  assert.match(b.res.headers.get('content-type'), /text\/event-stream/);
  // The stream as the client first got it (the cost comment is the miss's own).
  assert.equal(b.text, a.text.replace(/: x-bascule-cost-usd: [0-9.]+\n\n$/, ''));
});

test('an embeddings target that fails gives a miss and a normal answer, and stores nothing', async () => {
  await sim.setModel('sim-words-bad', { script: [{ action: 'status', status: 503 }] });
  const chats = await calls('m-sem2');
  const a = await chat(ask('sembad', 'What is the boiling point of water?'));
  assert.equal(a.res.status, 200, a.text);
  assert.equal(a.res.headers.get('x-bascule-cache'), 'miss');
  assert.ok(JSON.parse(a.text).choices[0].message.content.length > 0);
  const b = await chat(ask('sembad', 'What is the boiling point of water?'));
  assert.equal(b.res.status, 200);
  assert.equal(b.res.headers.get('x-bascule-cache'), 'miss');
  assert.equal(await calls('m-sem2'), chats + 2, 'both answers were made upstream');
  assert.ok(await calls('sim-words-bad') >= 2, 'the embeddings target was asked');
});

test('an embeddings target slower than embed_timeout_ms is a miss, not a wait', async () => {
  await sim.setModel('sim-words-slow', { script: [{ action: 'ok', delay_ms: 5000 }] });
  const t0 = Date.now();
  const a = await chat(ask('semslow', 'What is the speed of light?'));
  assert.equal(a.res.status, 200, a.text);
  assert.equal(a.res.headers.get('x-bascule-cache'), 'miss');
  assert.ok(Date.now() - t0 < 4500, `answered after ${Date.now() - t0} ms`);
});

function checkConfig(cache, extraTargets = '') {
  const dir = mkdtempSync(join(tmpdir(), 'bascule-cfg-'));
  const file = join(dir, 'gateway.yaml');
  writeFileSync(file, `listen: "127.0.0.1:1"
providers:
  p: { kind: openai_compatible, base_url: "http://127.0.0.1:9/v1", keys: ["sk-up"] }
targets:
  t: { provider: p, model: m }
  e: { provider: p, model: emb }${extraTargets}
routes:
  r:
    primary: [t]
    cache: ${cache}
`);
  try {
    const r = spawnSync(bins.bascule, ['--check-config', file], { encoding: 'utf8' });
    return { status: r.status, stderr: r.stderr, file };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('configuration: semantic needs a known embeddings_target and min_similarity in (0, 1]', () => {
  const ok = checkConfig('{ mode: semantic, embeddings_target: e, min_similarity: 1 }');
  assert.equal(ok.status, 0, ok.stderr);
  const missing = checkConfig('{ mode: semantic }');
  assert.equal(missing.status, 1);
  assert.match(missing.stderr, /gateway\.yaml:10:\d+: .*semantic needs embeddings_target/);
  const unknown = checkConfig('{ mode: semantic, embeddings_target: nope }');
  assert.equal(unknown.status, 1);
  assert.match(unknown.stderr, /gateway\.yaml:10:\d+: .*unknown target 'nope'/);
  const empty = checkConfig('{ mode: semantic, embeddings_target: null }');
  assert.equal(empty.status, 1);
  assert.match(empty.stderr, /gateway\.yaml:10:\d+: .*semantic needs a target id/);
  for (const v of ['0', '1.5', '-0.2']) {
    const bad = checkConfig(`{ mode: semantic, embeddings_target: e, min_similarity: ${v} }`);
    assert.equal(bad.status, 1, `min_similarity ${v}`);
    assert.match(bad.stderr, /gateway\.yaml:10:\d+: .*min_similarity/);
  }
});
