// SPDX-License-Identifier: MIT
// Issue 24 item 2: a stream its client leaves, or an upstream cuts, costs what the provider
// bills (docs/internals/spend.md, "Cost"): the provider's usage where it arrived, else the
// estimate -- the prompt at the request's bytes / 4, the output at one token per text frame
// relayed -- in the client's spend (/admin/clients), bascule_cost_usd_total and the access
// line (cost_estimated: true), so the budget stops the client afterwards. An attempt that
// failed before any token costs nothing. The upstream is a small HTTP server of the test's
// own that streams a few chunks and then holds the stream open, so exactly those chunks
// were relayed when the client leaves; the cut cases use bascule-sim's scripted `cut`.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startSim, startGateway, waitFor } from '../lib/harness.mjs';

const ADMIN = 'admin-key-0123456789abcdef';
const KEYS = {
  alpha: 'alpha-key-0123456789abcdef',
  beta: 'beta-key-0123456789abcdef',
  gamma: 'gamma-key-0123456789abcdef',
  delta: 'delta-key-0123456789abcdef',
};
const IN_USD = 100 / 1e6; // input_per_mtok: 100
const OUT_USD = 1; // output_per_mtok: 1000000
let sim, gw, up;
const upstream = { mode: 'estimate', open: 0, closed: 0 };

const chunk = (delta, extra = {}) =>
  `data: ${JSON.stringify({ id: 'c-1', object: 'chat.completion.chunk', created: 1, model: 'm',
    choices: [{ index: 0, delta, finish_reason: null }], ...extra })}\n\n`;

// Streams the role chunk and three tokens (and, in mode 'usage', the finish and usage
// chunks), then holds the response open until the gateway goes away.
function hostile(req, res) {
  req.resume();
  req.on('end', () => {
    upstream.open++;
    res.on('close', () => { upstream.closed++; });
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(chunk({ role: 'assistant', content: '' }));
    for (const t of ['tok1', 'tok2', 'tok3']) res.write(chunk({ content: t }));
    if (upstream.mode === 'usage') {
      res.write(`data: ${JSON.stringify({ id: 'c-1', object: 'chat.completion.chunk', created: 1,
        model: 'm', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`);
      res.write(`data: ${JSON.stringify({ id: 'c-1', object: 'chat.completion.chunk', created: 1,
        model: 'm', choices: [], usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 } })}\n\n`);
    }
  });
}

const config = (upBase) => `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: info, format: json }
admin: { key: "${ADMIN}" }
providers:
  hostile: { kind: openai_compatible, base_url: "${upBase}", keys: ["sk-h"], health: { probe: none } }
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-s"], health: { probe: none } }
targets:
  held: { provider: hostile, model: m, price: { input_per_mtok: 100, output_per_mtok: 1000000 } }
  cut: { provider: sim, model: cut-model, price: { input_per_mtok: 100, output_per_mtok: 1000000 } }
routes:
  held: { primary: [held] }
  cut: { primary: [cut] }
clients:
  alpha: { key: "\${K_ALPHA}", routes: ["*"], budget: { usd: 1, period: day } }
  beta: { key: "\${K_BETA}", routes: ["*"] }
  gamma: { key: "\${K_GAMMA}", routes: ["*"] }
  delta: { key: "\${K_DELTA}", routes: ["*"] }
`;

before(async () => {
  sim = await startSim();
  up = http.createServer(hostile);
  await new Promise((resolve) => up.listen(0, '127.0.0.1', resolve));
  gw = await startGateway({
    env: { K_ALPHA: KEYS.alpha, K_BETA: KEYS.beta, K_GAMMA: KEYS.gamma, K_DELTA: KEYS.delta },
    config: config(`http://127.0.0.1:${up.address().port}/v1`),
  });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
  up?.closeAllConnections();
  await new Promise((resolve) => (up ? up.close(resolve) : resolve()));
});

const bodyOf = (route, extra = {}) => JSON.stringify({
  model: route, stream: true, messages: [{ role: 'user', content: 'x'.repeat(40000) }], ...extra,
});

const post = (client, body, signal) =>
  fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', signal, body,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${KEYS[client]}` },
  });

/** Reads the stream until <until>(text) holds, then leaves (aborts the connection). */
async function readThenLeave(client, body, until) {
  const ac = new AbortController();
  const res = await post(client, body, ac.signal);
  assert.equal(res.status, 200);
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let text = '';
  while (!until(text)) {
    const { value, done } = await reader.read();
    assert.ok(!done, `the stream ended before the client left: ${text}`);
    text += dec.decode(value, { stream: true });
  }
  ac.abort();
  return text;
}

const admin = async (p) =>
  (await fetch(`${gw.url}/admin/${p}`, { headers: { authorization: `Bearer ${ADMIN}` } })).json();
const spendOf = async (id) => (await admin('clients')).clients.find((c) => c.id === id).spend_usd;

async function costMetric(client, route, target) {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const m = new RegExp(`\\nbascule_cost_usd_total\\{client="${client}",route="${route}",target="${target}"\\} (\\S+)\\n`).exec(text);
  return m ? Number(m[1]) : 0;
}

const accessLine = (client) => waitFor(
  () => gw.accessLog().find((l) => l.type === 'access' && l.client === client),
  { what: `the access line of ${client}` });

const near = (got, want, what) =>
  assert.ok(Math.abs(got - want) < 1e-8, `${what}: ${got}, want ${want}`);

test('a client that leaves a stream pays the prompt and the output relayed, estimated, and its budget stops it', async () => {
  upstream.mode = 'estimate';
  const body = bodyOf('held');
  const prompt = Math.floor(Buffer.byteLength(body) / 4); // the router's estimate
  const opened = upstream.closed;
  await readThenLeave('alpha', body, (t) => t.includes('tok3'));
  await waitFor(() => upstream.closed > opened, { what: 'the upstream stream cancelled' });
  const want = prompt * IN_USD + 3 * OUT_USD;

  const line = await accessLine('alpha');
  assert.equal(line.termination, 'client_abort');
  assert.equal(line.input_tokens, prompt);
  assert.equal(line.output_tokens, 3);
  assert.equal(line.cost_estimated, true);
  near(line.cost_usd, Math.round(want * 1e8) / 1e8, 'the access line cost_usd');
  near(await spendOf('alpha'), want, 'the spend of alpha');
  near(await costMetric('alpha', 'held', 'held'), want, 'bascule_cost_usd_total');

  // $4.0015 of a $1 budget: the next request is refused, nothing sent upstream.
  const before = upstream.open;
  const res = await post('alpha', bodyOf('held'));
  assert.equal(res.status, 429);
  assert.equal((await res.json()).error.code, 'budget_exceeded');
  assert.equal(upstream.open, before);
});

test('a client that leaves after the usage arrived pays the provider\'s usage, not an estimate', async () => {
  upstream.mode = 'usage';
  const opened = upstream.closed;
  await readThenLeave('beta', bodyOf('held', { stream_options: { include_usage: true } }),
    (t) => t.includes('"prompt_tokens":7'));
  await waitFor(() => upstream.closed > opened, { what: 'the upstream stream cancelled' });
  const want = 7 * IN_USD + 3 * OUT_USD;

  const line = await accessLine('beta');
  assert.equal(line.termination, 'client_abort');
  assert.equal(line.input_tokens, 7);
  assert.equal(line.output_tokens, 3);
  assert.equal(line.cost_estimated, undefined);
  near(line.cost_usd, want, 'the access line cost_usd');
  near(await spendOf('beta'), want, 'the spend of beta');
  near(await costMetric('beta', 'held', 'held'), want, 'bascule_cost_usd_total');
});

test('a stream the upstream cuts after tokens is charged; one cut before any token is not', async () => {
  // cut after 4 events: the role chunk and three tokens, then the connection closes.
  await sim.setModel('cut-model', { script: [{ action: 'cut', after_events: 4 }, { action: 'cut', after_events: 1 }] });
  const body = bodyOf('cut');
  const prompt = Math.floor(Buffer.byteLength(body) / 4);
  const res = await post('gamma', body);
  assert.equal(res.status, 200);
  await res.text().catch(() => ''); // the gateway breaks the stream after its error event
  const want = prompt * IN_USD + 3 * OUT_USD;
  const line = await accessLine('gamma');
  assert.equal(line.termination, 'upstream_interrupted');
  assert.equal(line.output_tokens, 3);
  assert.equal(line.cost_estimated, true);
  near(await spendOf('gamma'), want, 'the spend of gamma');
  near(await costMetric('gamma', 'cut', 'cut'), want, 'bascule_cost_usd_total');

  // The second step cuts after the role chunk alone: no token was generated, no charge.
  const res2 = await post('delta', body);
  await res2.text().catch(() => '');
  const line2 = await accessLine('delta');
  assert.equal(line2.cost_estimated, undefined);
  assert.equal(await spendOf('delta'), 0);
  assert.equal(await costMetric('delta', 'cut', 'cut'), 0);
});
