// OpenTelemetry spans: one trace per request with a request span and one span per attempt,
// exported as OTLP/HTTP JSON to a collector (a small receiver written here); the client's
// traceparent is continued and the upstream receives the attempt's traceparent. A collector
// that hangs or is not there never holds up a request.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startSim, startGateway, waitFor, freePort } from '../lib/harness.mjs';

const TID = '4bf92f3577b34da6a3ce929d0e0e4736';
const SID = '00f067aa0ba902b7';

/** An OTLP/HTTP receiver on loopback: collects every POSTed body; <hang> never answers. */
function startReceiver({ hang = false } = {}) {
  const bodies = [];
  const held = [];
  const srv = http.createServer((req, res) => {
    let data = '';
    req.on('data', (c) => { data += c; });
    req.on('end', () => {
      bodies.push({ path: req.url, type: req.headers['content-type'], auth: req.headers['x-collector-key'], json: JSON.parse(data) });
      if (hang) held.push(res);
      else res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  return new Promise((resolve) => srv.listen(0, '127.0.0.1', () => resolve({
    url: `http://127.0.0.1:${srv.address().port}`,
    bodies,
    spans: () => bodies.flatMap((b) => b.json.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans))),
    stop: () => new Promise((r) => { held.forEach((h) => h.destroy()); srv.closeAllConnections(); srv.close(r); }),
  })));
}

function config(simBase, endpoint) {
  return `listen: "127.0.0.1:{{PORT}}"
workers: 2
telemetry: { otlp_endpoint: "${endpoint}", service_name: bascule-test, sample: 1.0, headers: { x-collector-key: k1 } }
providers:
  sim: { kind: openai_compatible, base_url: "${simBase}", keys: ["sk-tel"], health: { probe: none } }
  sim2: { kind: openai_compatible, base_url: "${simBase}", keys: ["sk-tel2"], health: { probe: none } }
targets:
  tel-p: { provider: sim, model: tel-p }
  tel-e: { provider: sim2, model: tel-e }
routes:
  traced:
    primary: [tel-p]
    equivalent: [tel-e]
    envelope: { max_same_target_attempts: 1 }
`;
}

let sim, rx, gw;

before(async () => {
  sim = await startSim();
  rx = await startReceiver();
  gw = await startGateway({ config: config(sim.base, rx.url) });
});

after(async () => {
  await gw?.stop();
  await rx?.stop();
  await sim?.stop();
});

const chat = (base, headers = {}) => fetch(`${base}/chat/completions`, {
  method: 'POST', headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify({ model: 'traced', messages: [{ role: 'user', content: 'the-secret-prompt' }] }) });
const attrs = (span) => Object.fromEntries(span.attributes.map((a) => [a.key, Object.values(a.value)[0]]));

test('a failover is one trace: a request span and two attempt spans, the client trace kept', async () => {
  await sim.setModel('tel-p', { script: [{ action: 'status', status: 503, times: 5 }] });
  await sim.setModel('tel-e', { content: 'the-secret-answer' });
  const res = await chat(gw.base, { traceparent: `00-${TID}-${SID}-01` });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-bascule-workflow'), 'equivalent_failover');
  await res.text();
  const spans = await waitFor(() => {
    const s = rx.spans().filter((x) => x.traceId === TID);
    return s.length >= 3 && s;
  }, { what: 'three spans of the trace' });
  assert.equal(spans.length, 3);
  const root = spans.find((s) => s.name === 'bascule.request');
  const tries = spans.filter((s) => s.name === 'bascule.attempt')
    .sort((a, b) => Number(attrs(a)['bascule.attempt']) - Number(attrs(b)['bascule.attempt']));
  assert.equal(root.parentSpanId, SID, 'the request span is a child of the client span');
  assert.equal(root.kind, 2);
  assert.match(root.startTimeUnixNano, /^\d{19}$/);
  assert.ok(BigInt(root.endTimeUnixNano) >= BigInt(root.startTimeUnixNano));
  const ra = attrs(root);
  assert.equal(ra['bascule.route'], 'traced');
  assert.equal(ra['bascule.workflow'], 'equivalent_failover');
  assert.equal(ra['bascule.outcome'], 'ok');
  assert.equal(ra['bascule.attempts'], '2');
  assert.equal(ra['http.response.status_code'], '200');
  assert.ok('gen_ai.usage.input_tokens' in ra && 'gen_ai.usage.output_tokens' in ra);
  assert.equal(typeof ra['bascule.cost_usd'], 'number');
  assert.equal(tries.length, 2);
  for (const t of tries) {
    assert.equal(t.parentSpanId, root.spanId);
    assert.match(t.spanId, /^[0-9a-f]{16}$/);
  }
  const [a1, a2] = tries.map(attrs);
  assert.equal(a1['bascule.target'], 'tel-p');
  assert.equal(a1['bascule.provider'], 'sim');
  assert.equal(a1['bascule.failure_kind'], 'overloaded');
  assert.equal(a1['http.response.status_code'], '503');
  assert.equal(a1['bascule.workflow'], 'primary');
  assert.equal(a1['bascule.circuit'], 'closed');
  assert.equal(a1['bascule.delay_ms'], '0');
  assert.match(a1['bascule.time_left_ms'], /^\d+$/);
  assert.equal(tries[0].status.code, 2);
  assert.equal(a2['bascule.target'], 'tel-e');
  assert.equal(a2['bascule.provider'], 'sim2');
  assert.equal(a2['bascule.workflow'], 'equivalent_failover');
  assert.equal(a2['bascule.outcome'], 'ok');
  assert.equal(a2['http.response.status_code'], '200');
  assert.ok(!('bascule.failure_kind' in a2));
  // the upstream saw each attempt's own span, in the client's trace
  const up1 = (await sim.lastRequest('tel-p')).headers.traceparent;
  const up2 = (await sim.lastRequest('tel-e')).headers.traceparent;
  assert.equal(up1, `00-${TID}-${tries[0].spanId}-01`);
  assert.equal(up2, `00-${TID}-${tries[1].spanId}-01`);
  // how it was exported, and what never goes into a span
  const b = rx.bodies[0];
  assert.equal(b.path, '/v1/traces');
  assert.equal(b.type, 'application/json');
  assert.equal(b.auth, 'k1');
  assert.equal(b.json.resourceSpans[0].resource.attributes[0].value.stringValue, 'bascule-test');
  const all = JSON.stringify(rx.bodies.map((x) => x.json));
  assert.ok(!all.includes('the-secret-prompt') && !all.includes('the-secret-answer'));
  // The export is counted once the collector's answer is read, after it had the body.
  await waitFor(async () => /bascule_spans_exported_total [1-9]/.test(
    await (await fetch(`${gw.url}/metrics`)).text()), { what: 'the export counted' });
});

test('without a traceparent the request starts its own trace, sent upstream', async () => {
  await sim.setModel('tel-p', { content: 'ok' });
  const res = await chat(gw.base);
  assert.equal(res.status, 200);
  const rid = res.headers.get('x-request-id');
  await res.text();
  const root = await waitFor(() => rx.spans().find((s) => s.name === 'bascule.request' &&
    attrs(s)['bascule.request_id'] === rid), { what: 'the request span' });
  assert.equal(root.parentSpanId, undefined);
  assert.notEqual(root.traceId, TID);
  const up = (await sim.lastRequest('tel-p')).headers.traceparent;
  assert.match(up, new RegExp(`^00-${root.traceId}-[0-9a-f]{16}-01$`));
});

test('a collector that hangs, or is not there, never holds up requests', async () => {
  const hung = await startReceiver({ hang: true });
  const gw2 = await startGateway({ config: config(sim.base, hung.url) });
  const gw3 = await startGateway({ config: config(sim.base, `http://127.0.0.1:${await freePort()}`) });
  try {
    await sim.setModel('tel-p', { content: 'ok' });
    const first = await chat(gw2.base);
    assert.equal(first.status, 200);
    await first.text();
    await waitFor(() => hung.bodies.length === 1, { what: 'the exporter to be stuck on the hung collector' });
    // the exporter is blocked on its POST: requests go on regardless, and their spans queue
    for (let i = 0; i < 20; i++) {
      const r = await chat(gw2.base);
      assert.equal(r.status, 200);
      await r.text();
    }
    assert.equal(hung.bodies.length, 1);
    for (let i = 0; i < 3; i++) {
      const r = await chat(gw3.base);
      assert.equal(r.status, 200);
      await r.text();
    }
    const dropped = /bascule_spans_dropped_total (\d+)/;
    await waitFor(async () => Number((dropped.exec(await (await fetch(`${gw3.url}/metrics`)).text()) || [])[1] || 0) >= 3,
      { what: 'the spans refused by a closed port counted as dropped' });
  } finally {
    await gw2.stop();
    await gw3.stop();
    await hung.stop();
  }
});

test('without a collector the client trace still goes upstream, flagged not sampled', async () => {
  const off = await startGateway({ config: config(sim.base, '') });
  try {
    await sim.setModel('tel-p', { content: 'ok' });
    const res = await chat(off.base, { traceparent: `00-${TID}-${SID}-01` });
    assert.equal(res.status, 200);
    await res.text();
    const up = (await sim.lastRequest('tel-p')).headers.traceparent;
    assert.match(up, new RegExp(`^00-${TID}-[0-9a-f]{16}-00$`));
    assert.ok(!up.includes(SID), 'the upstream is a child of the gateway, not of the client');
    const plain = await chat(off.base, {});
    assert.equal(plain.status, 200);
    await plain.text();
    assert.equal((await sim.lastRequest('tel-p')).headers.traceparent, undefined,
      'no collector and no client trace: the upstream request has no traceparent');
  } finally {
    await off.stop();
  }
});
