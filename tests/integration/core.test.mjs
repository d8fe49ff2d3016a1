// Gateway core (issue: HTTP server, upstream, config, OpenAI pass-through, streaming):
// the real bascule binary against bascule-sim, driven by the official openai SDK and by
// raw sockets for malformed HTTP.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import net from 'node:net';
import OpenAI from 'openai';
import { startSim, startGateway, freePort, rawRequest, bins, waitFor, readStream } from '../lib/harness.mjs';

let sim, gw, client;

function config(port, simBase, extra = '') {
  return `
listen: "127.0.0.1:${port}"
workers: 2
log: { level: info, format: json }
limits:
  max_body_bytes: 65536
  max_header_bytes: 8192
  header_timeout_ms: 400
  idle_timeout_ms: 2000
providers:
  sim:
    kind: openai_compatible
    base_url: "${simBase}"
    keys: ["sk-test-a", "sk-test-b"]
targets:
  m1@sim: { provider: sim, model: upstream-m1 }
  m2@sim: { provider: sim, model: upstream-m2 }
routes:
  chat:
    primary: [m1@sim]
  other:
    primary: [m2@sim]
${extra}`;
}

before(async () => {
  sim = await startSim();
  const port = await freePort();
  gw = await startGateway({ config: config(port, sim.base) });
  client = new OpenAI({ baseURL: gw.base, apiKey: 'client-key', maxRetries: 0 });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

test('plain completion through the SDK: model rewritten, keys rotated, headers explain', async () => {
  await sim.reset();
  const { data, response } = await client.chat.completions
    .create({ model: 'chat', messages: [{ role: 'user', content: 'hello there' }] })
    .withResponse();
  assert.equal(data.object, 'chat.completion');
  assert.ok(data.choices[0].message.content.length > 0);
  assert.ok(data.usage.total_tokens > 0);
  assert.equal(response.headers.get('x-bascule-target'), 'm1@sim');
  assert.equal(response.headers.get('x-bascule-attempts'), '1');
  assert.match(response.headers.get('x-request-id'), /^req_/);
  await client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'again' }] });
  const seen = await sim.requests('upstream-m1');
  assert.equal(seen.length, 2);
  for (const r of seen) {
    assert.equal(r.body.model, 'upstream-m1');
    assert.notEqual(r.headers.authorization, 'Bearer client-key');
  }
  const keys = seen.map((r) => r.headers.authorization).sort();
  assert.deepEqual(keys, ['Bearer sk-test-a', 'Bearer sk-test-b']);
});

test('streaming through the SDK with include_usage: chunks, usage, [DONE]', async () => {
  await sim.reset();
  const stream = await client.chat.completions.create({
    model: 'chat', stream: true, stream_options: { include_usage: true },
    messages: [{ role: 'user', content: 'stream please' }],
  });
  let text = '';
  let usage = null;
  let chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    if (chunk.usage) usage = chunk.usage;
    text += chunk.choices?.[0]?.delta?.content ?? '';
  }
  assert.ok(chunks >= 3, `expected several chunks, got ${chunks}`);
  assert.ok(text.length > 0);
  assert.ok(usage && usage.completion_tokens > 0, 'usage chunk relayed');
  assert.equal(Buffer.from(text, 'utf8').toString('utf8'), text);
});

test('stream events reach the client as the upstream sends them (no buffering)', async () => {
  await sim.reset();
  await sim.setModel('upstream-m1', { tokens: 6, token_delay_ms: 150 });
  const t0 = Date.now();
  const stream = await client.chat.completions.create({
    model: 'chat', stream: true, messages: [{ role: 'user', content: 'slow' }],
  });
  const arrivals = [];
  for await (const chunk of stream) if (chunk.choices?.[0]?.delta?.content) arrivals.push(Date.now() - t0);
  await sim.setModel('upstream-m1', { tokens: 12, token_delay_ms: 0 });
  assert.ok(arrivals.length >= 5);
  // With 150 ms between upstream tokens, a buffering proxy would deliver all at once.
  assert.ok(arrivals[arrivals.length - 1] - arrivals[0] >= 400,
    `chunks spread over time: ${arrivals.join(',')}`);
});

test('malformed JSON is a 400 in the OpenAI error shape with the request id', async () => {
  const res = await fetch(`${gw.base}/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': 'my-req-1' },
    body: '{"model": "chat", "messages": [',
  });
  assert.equal(res.status, 400);
  assert.equal(res.headers.get('x-request-id'), 'my-req-1');
  const body = await res.json();
  assert.equal(body.error.type, 'invalid_request_error');
  assert.equal(body.error.code, 'invalid_json');
  assert.ok('param' in body.error);
  assert.match(body.error.message, /line 1 column/);
  assert.equal(body.request_id, 'my-req-1');
});

test('unknown model is a 404 model_not_found; the SDK raises NotFoundError', async () => {
  await assert.rejects(
    client.chat.completions.create({ model: 'nope', messages: [{ role: 'user', content: 'x' }] }),
    (err) => err.status === 404 && err.code === 'model_not_found');
});

test('validation errors: missing messages, non-boolean stream, duplicate model key', async () => {
  const post = (body) => fetch(`${gw.base}/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body });
  let r = await post('{"model":"chat"}');
  assert.equal(r.status, 400);
  assert.equal((await r.json()).error.code, 'invalid_messages');
  r = await post('{"model":"chat","stream":"yes","messages":[{"role":"user","content":"x"}]}');
  assert.equal(r.status, 400);
  r = await post('{"model":"chat","model":"other","messages":[{"role":"user","content":"x"}]}');
  assert.equal(r.status, 400);
  assert.match((await r.json()).error.message, /at most once/);
});

test('body over max_body_bytes is a 413', async () => {
  const big = JSON.stringify({ model: 'chat', messages: [{ role: 'user', content: 'x'.repeat(70000) }] });
  const res = await fetch(`${gw.base}/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: big });
  assert.equal(res.status, 413);
  const body = await res.json();
  assert.equal(body.error.code, 'request_too_large');
});

test('slow headers get a 408 and the connection closes', async () => {
  const raw = await rawRequest(gw.port, 'POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\n', { timeoutMs: 3000 });
  assert.match(raw, /^HTTP\/1\.1 408/);
  assert.match(raw, /"request_timeout"/);
});

test('headers over max_header_bytes get a 431', async () => {
  const raw = await rawRequest(gw.port,
    `GET /v1/models HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'a'.repeat(9000)}\r\n\r\n`, { timeoutMs: 3000 });
  assert.match(raw, /^HTTP\/1\.1 431/);
});

test('garbage instead of HTTP gets a 400', async () => {
  const raw = await rawRequest(gw.port, 'HELLO\x01\x02 what\r\n\r\n', { timeoutMs: 3000 });
  assert.match(raw, /^HTTP\/1\.1 400/);
});

test('pipelined requests are answered in order on one connection', async () => {
  const one = 'GET /health/live HTTP/1.1\r\nHost: localhost\r\n\r\n';
  const two = 'GET /v1/models HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n';
  const raw = await rawRequest(gw.port, one + two, { timeoutMs: 3000 });
  const first = raw.indexOf('{"status":"ok"}');
  const second = raw.indexOf('"object":"list"');
  assert.ok(first > 0 && second > first, raw);
  assert.equal((raw.match(/HTTP\/1\.1 200/g) || []).length, 2);
});

test('chunked request body is accepted', async () => {
  const body = JSON.stringify({ model: 'chat', messages: [{ role: 'user', content: 'chunked' }] });
  const half = Math.floor(body.length / 2);
  const chunks = [body.slice(0, half), body.slice(half)]
    .map((c) => `${Buffer.byteLength(c).toString(16)}\r\n${c}\r\n`).join('') + '0\r\n\r\n';
  const raw = await rawRequest(gw.port,
    'POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n' +
    'Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n' + chunks, { timeoutMs: 5000 });
  assert.match(raw, /HTTP\/1\.1 200 OK/);
  assert.match(raw, /chat\.completion/);
});

test('Expect: 100-continue gets 100 Continue before the body is sent', async () => {
  const body = JSON.stringify({ model: 'chat', messages: [{ role: 'user', content: 'expect' }] });
  const sock = net.connect(gw.port, '127.0.0.1');
  let got = '';
  sock.setEncoding('utf8');
  sock.on('data', (d) => { got += d; });
  await new Promise((r) => sock.once('connect', r));
  sock.write('POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`);
  await waitFor(() => got.includes('100 Continue'), { timeoutMs: 3000, what: '100 Continue' });
  assert.ok(!got.includes('200 OK'), 'nothing but 100 before the body');
  sock.write(body);
  await new Promise((r) => sock.once('close', r));
  assert.match(got, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 OK/);
  assert.match(got, /chat\.completion/);
});

test('Expect: 100-continue with a Content-Length over the limit gets 413 without reading the body', async () => {
  const raw = await rawRequest(gw.port,
    'POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Length: 999999\r\n' +
    'Expect: 100-continue\r\n\r\n', { timeoutMs: 3000 });
  assert.match(raw, /^HTTP\/1\.1 413/);
  assert.ok(!raw.includes('100 Continue'));
});

test('GET /v1/models lists the route aliases; health endpoints answer', async () => {
  const models = await client.models.list();
  const ids = [];
  for await (const m of models) ids.push(m.id);
  assert.deepEqual(ids.sort(), ['chat', 'other']);
  assert.equal((await fetch(`${gw.url}/health/live`)).status, 200);
  assert.equal((await fetch(`${gw.url}/health/ready`)).status, 200);
  assert.equal((await fetch(`${gw.url}/nope`)).status, 404);
});

test('a client that aborts mid-stream cancels the upstream transfer', async () => {
  await sim.reset();
  await sim.setModel('upstream-m1', { tokens: 40, token_delay_ms: 100 });
  const ac = new AbortController();
  const stream = await client.chat.completions.create({
    model: 'chat', stream: true, messages: [{ role: 'user', content: 'long' }] }, { signal: ac.signal });
  let n = 0;
  try {
    for await (const chunk of stream) { if (++n === 3) { ac.abort(); break; } }
  } catch { /* some SDK versions raise on abort */ }
  assert.equal(n, 3);
  // The sim sees its client (the gateway) go away before the 4 s stream would end: wait
  // for the call to end either way, then check how.
  const stats = await waitFor(async () => {
    const s = await sim.stats();
    const m = s.models['upstream-m1'];
    return m && m.cancelled + m.completed >= 1 ? s : null;
  }, { timeoutMs: 15_000, what: 'the upstream call to end' });
  await sim.setModel('upstream-m1', { tokens: 12, token_delay_ms: 0 });
  assert.equal(stats.models['upstream-m1'].calls, 1);
  assert.equal(stats.models['upstream-m1'].cancelled, 1);
  assert.equal(stats.models['upstream-m1'].completed, 0);
});

test('an upstream that cuts a stream after the first byte ends it with an error event', async () => {
  await sim.reset();
  await sim.setModel('upstream-m1', { script: [{ action: 'cut', after_events: 3 }] });
  const res = await fetch(`${gw.base}/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'chat', stream: true, messages: [{ role: 'user', content: 'x' }] }) });
  assert.equal(res.status, 200);
  const { text, broken } = await readStream(res);
  assert.equal(broken, true, 'the stream ends broken: no chunked terminator, the connection closes');
  const events = text.split('\n\n').filter(Boolean);
  const last = events[events.length - 1];
  assert.match(last, /^data: \{"error":/);
  const err = JSON.parse(last.slice(6));
  assert.equal(err.error.code, 'upstream_interrupted');
  assert.match(err.request_id, /^req_/);
  assert.ok(!text.includes('[DONE]'));
  // The SDK raises on it.
  await sim.setModel('upstream-m1', { script: [{ action: 'cut', after_events: 3 }] });
  const stream = await client.chat.completions.create({
    model: 'chat', stream: true, messages: [{ role: 'user', content: 'x' }] });
  await assert.rejects((async () => { for await (const _ of stream); })());
  await sim.reset();
});

test('the access log has one JSON line per request, without prompts or keys', async () => {
  await sim.reset();
  await client.chat.completions.create({
    model: 'chat', messages: [{ role: 'user', content: 'SECRET-PROMPT-TEXT' }] },
    { headers: { 'x-request-id': 'log-check-1' } });
  const line = await waitFor(
    () => gw.accessLog().find((l) => l.type === 'access' && l.request_id === 'log-check-1'),
    { what: 'the access line' });
  assert.equal(line.route, 'chat');
  assert.equal(line.target, 'm1@sim');
  assert.equal(line.status, 200);
  for (const k of ['bytes_in', 'bytes_out', 'duration_ms', 'ttfb_ms']) assert.equal(typeof line[k], 'number');
  const logs = gw.logs();
  assert.ok(!logs.includes('SECRET-PROMPT-TEXT'));
  assert.ok(!logs.includes('sk-test-a'));
});

test('SIGHUP: a bad config is rejected and the old one keeps serving; a good one applies', async () => {
  const bad = config(gw.port, sim.base).replace('primary: [m2@sim]', 'primery: [m2@sim]');
  const r1 = await gw.reload(bad);
  assert.match(r1, /rejected/);
  assert.match(gw.logs(), /:\d+:\d+: error: .*primery/);
  const ok = await client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'x' }] });
  assert.equal(ok.object, 'chat.completion');
  const good = config(gw.port, sim.base).replace('  other:\n', '  renamed:\n');
  const r2 = await gw.reload(good);
  assert.match(r2, /reloaded/);
  const models = [];
  for await (const m of await client.models.list()) models.push(m.id);
  assert.deepEqual(models.sort(), ['chat', 'renamed']);
});

test('--check-config reports errors with file:line:column and exits 1', () => {
  const dir = mkdtempSync(join(tmpdir(), 'bascule-cfg-'));
  const file = join(dir, 'bad.yaml');
  writeFileSync(file, 'listen: "127.0.0.1:1"\nproviders: {}\ntargets:\n  t: { provider: ghost, model: m }\nroutes:\n  r: { primary: [t], bogus: 1 }\n');
  const r = spawnSync(bins.bascule, ['--check-config', file], { encoding: 'utf8' });
  assert.equal(r.status, 1);
  assert.match(r.stderr, new RegExp(`${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:4:\\d+: error: .*ghost`));
  assert.match(r.stderr, /:6:\d+: error: .*bogus/);
  const v = spawnSync(bins.bascule, ['--version'], { encoding: 'utf8' });
  assert.equal(v.status, 0);
  assert.match(v.stdout, /^bascule \d+\.\d+/);
});
