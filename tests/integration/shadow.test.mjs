// Shadow traffic: a route's requests are mirrored to candidate targets, fire-and-forget.
// The client never waits for a copy, a request that may act is never copied, a route's
// copies in flight are capped, and every copy is counted, logged, compared with the
// primary's answer and shown on the status page.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startSim, startGateway, waitFor } from '../lib/harness.mjs';

let sim, gw;

before(async () => {
  sim = await startSim();
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: warn }
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-s"], health: { probe: none } }
  ant: { kind: anthropic, base_url: "${sim.url}/anthropic/v1", keys: ["sk-ant-s"], health: { probe: none } }
targets:
  prim: { provider: sim, model: s-prim }
  cand: { provider: sim, model: s-cand, price: { input_per_mtok: 1, output_per_mtok: 2 } }
  slowp: { provider: sim, model: s-slowp }
  slowc: { provider: sim, model: s-slowc }
  writep: { provider: sim, model: s-writep }
  writec: { provider: sim, model: s-writec }
  capp: { provider: sim, model: s-capp }
  capc: { provider: sim, model: s-capc }
  toolp: { provider: sim, model: s-toolp, capabilities: [text, streaming, tools] }
  toolgood: { provider: sim, model: s-toolgood, capabilities: [text, streaming, tools] }
  toolbad: { provider: sim, model: s-toolbad, capabilities: [text, streaming, tools] }
  halfp: { provider: sim, model: s-halfp }
  halfc: { provider: sim, model: s-halfc }
  crossp: { provider: sim, model: s-crossp, capabilities: [text, streaming, tools] }
  lagp: { provider: sim, model: s-lagp }
  failp: { provider: sim, model: s-failp }
  failc: { provider: sim, model: s-failc, breaker: { consecutive_failures: 2 } }
  lagc: { provider: sim, model: s-lagc }
  antc: { provider: ant, model: claude-shadow, capabilities: [text, streaming, tools] }
routes:
  mirrored:
    primary: [prim]
    shadow: { targets: [cand], percent: 100 }
  slow:
    primary: [slowp]
    shadow: { targets: [slowc] }
  writes:
    primary: [writep]
    envelope: { side_effects: write_possible }
    shadow: { targets: [writec] }
  capped:
    primary: [capp]
    shadow: { targets: [capc], max_concurrency: 1 }
  tooly:
    primary: [toolp]
    shadow: { targets: [toolgood, toolbad] }
  half:
    primary: [halfp]
    shadow: { targets: [halfc], percent: 50 }
  failing:
    primary: [failp]
    shadow: { targets: [failc] }
  lag:
    primary: [lagp]
    shadow: { targets: [lagc] }
  cross:
    primary: [crossp]
    shadow: { targets: [antc] }
`,
  });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

function chat(model, extra = {}, headers = {}, signal = undefined) {
  return fetch(`${gw.base}/chat/completions`, {
    method: 'POST',
    signal,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'mirror me' }], ...extra }),
  });
}

const simModel = async (model) => (await sim.stats()).models[model] ?? {};
const shadowLines = (route) => gw.accessLog().filter((l) => l.type === 'shadow' && l.route === route);
const metrics = async () => (await fetch(`${gw.url}/metrics`)).text();
const sample = (text, name, labels) => {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return line === undefined ? undefined : Number(line.split(' ').pop());
};

test('percent 100: the candidate receives every request, the client only the primary', async () => {
  for (let i = 0; i < 5; i++) {
    const res = await chat('mirrored');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-bascule-target'), 'prim');
    await res.json();
  }
  await waitFor(async () => (await simModel('s-cand')).completed === 5, { what: '5 mirrored calls' });
  assert.equal(await sim.calls('s-cand'), 5);
  assert.equal(await sim.calls('s-prim'), 5);
  const seen = await sim.lastRequest('s-cand');
  assert.deepEqual(seen.body.messages, [{ role: 'user', content: 'mirror me' }]);
  assert.equal(seen.headers['x-bascule-shadow'], '1');
});

test('a streamed request is mirrored as a stream, for its time to first token', async () => {
  await sim.setModel('s-cand', { token_delay_ms: 5 });
  const res = await chat('mirrored', { stream: true });
  assert.equal(res.status, 200);
  await res.text();
  await waitFor(async () => (await simModel('s-cand')).completed === 6, { what: 'the mirrored stream' });
  const seen = await sim.lastRequest('s-cand');
  assert.equal(seen.body.stream, true);
  await waitFor(() => shadowLines('mirrored').some((l) => l.stream), { what: 'the stream copy logged' });
  const line = shadowLines('mirrored').find((l) => l.stream);
  assert.equal(line.outcome, 'ok');
  assert.ok(line.ttft_ms > 0 && line.ttft_ms <= line.latency_ms, JSON.stringify(line));
  assert.ok(line.output_tokens > 0, 'usage read from the stream');
  await sim.setModel('s-cand', {});
});

test('metrics and one log line per mirrored request', async () => {
  await waitFor(() => shadowLines('mirrored').length === 6, { what: '6 shadow log lines' });
  for (const l of shadowLines('mirrored')) {
    assert.equal(l.target, 'cand');
    assert.equal(l.outcome, 'ok');
    assert.equal(l.transport, 'ok');
    assert.ok(l.latency_ms >= 0);
    assert.ok(l.input_tokens > 0 && l.output_tokens > 0);
    assert.ok(l.cost_usd > 0);
    if (!l.stream) assert.equal(l.ttft_ms, null);
  }
  const text = await metrics();
  assert.equal(sample(text, 'bascule_shadow_requests_total', 'route="mirrored",target="cand",outcome="ok"'), 6);
  assert.equal(sample(text, 'bascule_shadow_latency_seconds_count', 'route="mirrored",target="cand"'), 6);
  assert.ok(sample(text, 'bascule_shadow_tokens_total', 'route="mirrored",target="cand",direction="output"') > 0);
  assert.ok(sample(text, 'bascule_shadow_cost_usd_total', 'route="mirrored",target="cand"') > 0);
  // 5 single answers agree; a relayed primary stream is not kept whole: unknown.
  assert.equal(sample(text, 'bascule_shadow_agreement_total', 'route="mirrored",target="cand",result="agree"'), 5);
  assert.equal(sample(text, 'bascule_shadow_agreement_total', 'route="mirrored",target="cand",result="unknown"'), 1);
  // Shadows are not client requests: the route counts its 6 requests only.
  assert.equal(sample(text, 'bascule_requests_total', 'route="mirrored",outcome="ok"'), 6);
});

test('a slow candidate never delays the client', async () => {
  await sim.setModel('s-slowc', { script: [{ action: 'delay', delay_ms: 3000 }] });
  const res = await chat('slow');
  assert.equal(res.status, 200);
  await res.json();
  // The client has its whole answer; the copy reached the sim, which has not answered it yet.
  await waitFor(async () => (await simModel('s-slowc')).calls === 1, { what: 'the slow copy arriving' });
  const during = await simModel('s-slowc');
  assert.equal(during.in_flight, 1);
  assert.equal(during.completed, 0);
  await waitFor(() => shadowLines('slow').length === 1, { timeoutMs: 15000, what: 'the slow copy ending' });
  assert.equal(shadowLines('slow')[0].outcome, 'ok');
  assert.equal(shadowLines('slow')[0].agreement, 'agree');
});

test('a copy that ends first waits for the primary: unknown when the client goes away', async () => {
  await sim.setModel('s-lagp', { script: [{ action: 'hang' }] });
  const ctl = new AbortController();
  const pending = chat('lag', {}, {}, ctl.signal);
  // The copy has its answer while the primary is still held by the sim.
  await waitFor(async () => (await simModel('s-lagc')).completed === 1, { what: 'the copy answered' });
  assert.equal((await simModel('s-lagp')).in_flight, 1);
  const metricsNow = await metrics();
  assert.equal(sample(metricsNow, 'bascule_shadow_requests_total', 'route="lag",target="lagc",outcome="ok"'), 1);
  assert.equal(sample(metricsNow, 'bascule_shadow_agreement_total', 'route="lag",target="lagc",result="agree"'), 0, 'seeded at 0, not counted yet');
  // The client gives up: the primary has no answer, so agreement is unknown.
  ctl.abort();
  await pending.catch(() => {});
  await waitFor(() => shadowLines('lag').length === 1, { what: 'the copy settled' });
  assert.equal(shadowLines('lag')[0].agreement, 'unknown');
  assert.equal(shadowLines('lag')[0].outcome, 'ok');
});

test('a copy that ends first records agreement once the primary answers', async () => {
  await sim.setModel('s-lagp', { script: [{ action: 'delay', delay_ms: 3000 }] });
  const pending = chat('lag');
  await waitFor(async () => (await simModel('s-lagc')).completed === 2, { what: 'the copy answered' });
  const metricsNow = await metrics();
  // Read after the metrics: if the primary is still held now, it was then too.
  if ((await simModel('s-lagp')).in_flight === 1)
    assert.equal(sample(metricsNow, 'bascule_shadow_agreement_total', 'route="lag",target="lagc",result="agree"'), 0, 'seeded at 0, not counted yet');
  assert.equal((await pending).status, 200);
  await waitFor(() => shadowLines('lag').length === 2, { what: 'the copy settled' });
  assert.equal(shadowLines('lag')[1].agreement, 'agree');
});

test('nothing is mirrored for write_possible, from the route or the request', async () => {
  for (let i = 0; i < 3; i++) assert.equal((await chat('writes')).status, 200);
  const raised = await chat('mirrored', {}, { 'x-bascule-side-effects': 'write_possible' });
  assert.equal(raised.status, 200);
  // A sentinel after them: its copy arriving means the copies above would have been sent.
  const before = await sim.calls('s-cand');
  assert.equal((await chat('mirrored')).status, 200);
  await waitFor(async () => (await sim.calls('s-cand')) === before + 1, { what: 'the sentinel copy' });
  await waitFor(() => gw.accessLog().filter((l) => l.type === 'access' && l.route === 'writes' && l.status === 200).length === 3, {
    what: 'the write requests logged',
  });
  assert.equal(await sim.calls('s-writec'), 0);
  assert.equal(before, 6); // the raised request was not mirrored either
  assert.equal(shadowLines('writes').length, 0);
});

test('max_concurrency bounds the copies in flight; the others are skipped', async () => {
  await sim.setModel('s-capc', { script: [{ action: 'hang' }] });
  assert.equal((await chat('capped')).status, 200);
  await waitFor(async () => (await simModel('s-capc')).in_flight === 1, { what: 'the first copy hanging' });
  for (let i = 0; i < 3; i++) assert.equal((await chat('capped')).status, 200);
  await waitFor(async () => sample(await metrics(), 'bascule_shadow_requests_total',
    'route="capped",target="capc",outcome="skipped"') === 3, { what: '3 skipped copies' });
  const stats = await simModel('s-capc');
  assert.equal(stats.calls, 1);
  assert.equal(stats.in_flight, 1); // the first is still running: the others met a full cap
});

const weatherTools = [{
  type: 'function',
  function: {
    name: 'weather',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
}];

test('agreement: same tool, valid arguments agree; invalid arguments disagree', async () => {
  await sim.setModel('s-toolbad', { tool_arguments: '{"city": 42}' });
  const res = await chat('tooly', { tools: weatherTools });
  assert.equal(res.status, 200);
  assert.equal((await res.json()).choices[0].message.tool_calls[0].function.name, 'weather');
  await waitFor(() => shadowLines('tooly').length === 2, { what: 'both tool copies logged' });
  const by = Object.fromEntries(shadowLines('tooly').map((l) => [l.target, l]));
  assert.equal(by.toolgood.agreement, 'agree');
  assert.equal(by.toolgood.contract, 'ok');
  assert.equal(by.toolgood.tools, 'weather');
  assert.equal(by.toolbad.outcome, 'contract_failure');
  assert.equal(by.toolbad.contract, 'failed');
  assert.equal(by.toolbad.transport, 'ok');
  assert.equal(by.toolbad.agreement, 'disagree');
  const text = await metrics();
  assert.equal(sample(text, 'bascule_shadow_agreement_total', 'route="tooly",target="toolbad",result="disagree"'), 1);
  assert.equal(sample(text, 'bascule_shadow_requests_total', 'route="tooly",target="toolbad",outcome="contract_failure"'), 1);
});

test('streamed copies are checked too: the reassembled tool call against its parameters', async () => {
  const res = await chat('tooly', { tools: weatherTools, stream: true });
  assert.equal(res.status, 200);
  await res.text();
  await waitFor(() => shadowLines('tooly').filter((l) => l.stream).length === 2, { what: 'both streamed copies' });
  const by = Object.fromEntries(shadowLines('tooly').filter((l) => l.stream).map((l) => [l.target, l]));
  assert.equal(by.toolgood.contract, 'ok');
  assert.equal(by.toolgood.tools, 'weather');
  assert.ok(by.toolgood.ttft_ms > 0);
  assert.equal(by.toolbad.contract, 'failed');
  assert.equal(by.toolbad.outcome, 'contract_failure');
  // The primary's stream was relayed, not kept: nothing to compare with.
  assert.equal(by.toolgood.agreement, 'unknown');
});

test('a candidate of another dialect: translated, streamed or not, and compared', async () => {
  const res = await chat('cross', { tools: weatherTools });
  assert.equal(res.status, 200);
  await res.json();
  const streamed = await chat('cross', { tools: weatherTools, stream: true });
  assert.equal(streamed.status, 200);
  await streamed.text();
  await waitFor(() => shadowLines('cross').length === 2, { what: 'both anthropic copies' });
  const [single, stream] = [shadowLines('cross').find((l) => !l.stream), shadowLines('cross').find((l) => l.stream)];
  assert.equal(single.outcome, 'ok');
  assert.equal(single.tools, 'weather');
  assert.equal(single.agreement, 'agree');
  assert.equal(stream.outcome, 'ok');
  assert.equal(stream.tools, 'weather');
  assert.ok(stream.ttft_ms > 0 && stream.output_tokens > 0, JSON.stringify(stream));
  assert.equal((await sim.lastRequest('claude-shadow')).path, '/anthropic/v1/messages');
});

test('a failing candidate feeds its health statistics but never opens its circuit', async () => {
  await sim.setModel('s-failc', { script: [{ action: 'status', status: 500 }], repeat: true });
  for (let i = 0; i < 5; i++) assert.equal((await chat('failing')).status, 200);
  await waitFor(() => shadowLines('failing').length === 5, { what: '5 failed copies' });
  for (const l of shadowLines('failing')) {
    assert.equal(l.outcome, 'server_error');
    assert.equal(l.transport, 'failed');
    assert.equal(l.agreement, 'unknown');
  }
  const s = await (await fetch(`${gw.url}/status.json`)).json();
  const t = s.targets.find((x) => x.id === 'failc');
  assert.equal(t.failures, 5);
  assert.equal(t.circuit, 'closed');
  assert.equal(t.inflight, 0);
  const good = s.targets.find((x) => x.id === 'cand');
  assert.ok(good.successes >= 7 && good.ewma_latency_ms > 0 && good.ewma_ttft_ms > 0, JSON.stringify(good));
});

test('percent 50 mirrors every other request', async () => {
  for (let i = 0; i < 6; i++) assert.equal((await chat('half')).status, 200);
  await waitFor(() => shadowLines('half').length === 3, { what: '3 copies of 6' });
  await waitFor(() => gw.accessLog().filter((l) => l.type === 'access' && l.route === 'half' && l.status === 200).length === 6, {
    what: 'the half requests logged',
  });
  assert.equal(await sim.calls('s-halfc'), 3);
});

test('status.json shows each candidate: ok, failed, agreement rate, p50 latency', async () => {
  const s = await (await fetch(`${gw.url}/status.json`)).json();
  const row = (route, target) => s.shadow.find((x) => x.route === route && x.target === target);
  const cand = row('mirrored', 'cand');
  assert.equal(cand.ok, 7);
  assert.equal(cand.failed, 0);
  assert.equal(cand.agreement_rate, 1);
  assert.ok(cand.p50_latency_ms > 0);
  const bad = row('tooly', 'toolbad');
  assert.equal(bad.ok, 0);
  assert.equal(bad.failed, 2);
  assert.equal(bad.agreement_rate, 0);
  const page = await (await fetch(`${gw.url}/status`)).text();
  assert.match(page, /Shadow candidates/);
});
