// Output checks (`checks:` on a route): an answer that fails a deterministic check is a
// contract_failure -- served by an approved fallback that passes the same checks, else a
// typed 502, never the failing answer. A buffered stream is checked before release; a
// pass-through stream is checked at its end and the failure only recorded.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startSim, startGateway, waitFor } from '../lib/harness.mjs';

let sim, gw, client;

const CHECKS = `checks: { max_chars: 40, min_chars: 1, forbidden: ["(?i)as an ai language model"], required: [], max_tool_calls: 8 }`;

before(async () => {
  sim = await startSim();
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 2
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-ck"], health: { probe: none } }
targets:
  ck-p: { provider: sim, model: ck-p }
  ck-f: { provider: sim, model: ck-f }
  ck-lone: { provider: sim, model: ck-lone }
  ck-req: { provider: sim, model: ck-req }
  ck-bp: { provider: sim, model: ck-bp }
  ck-bf: { provider: sim, model: ck-bf }
  ck-pt: { provider: sim, model: ck-pt }
routes:
  checked:
    primary: [ck-p]
    fallback: [ck-f]
    envelope: { allow_cross_model_fallback: true }
    ${CHECKS}
  lone:
    primary: [ck-lone]
    ${CHECKS}
  cited:
    primary: [ck-req]
    checks: { required: ["https?://[a-z.]+"] }
  buffered:
    primary: [ck-bp]
    fallback: [ck-bf]
    envelope: { allow_cross_model_fallback: true, on_stream_failure: buffer, max_same_target_attempts: 1 }
    ${CHECKS}
  passthrough:
    primary: [ck-pt]
    ${CHECKS}
`,
  });
  client = new OpenAI({ baseURL: gw.base, apiKey: 'x', maxRetries: 0 });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

const post = (body) => fetch(`${gw.base}/chat/completions`, {
  method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const metric = async (re) => Number((re.exec(await (await fetch(`${gw.url}/metrics`)).text()) || [])[1] || 0);

test('a forbidden match on the primary answer is served by the approved fallback', async () => {
  await sim.setModel('ck-p', { content: 'As an AI language model, I cannot.' });
  await sim.setModel('ck-f', { content: 'Here is the answer.' });
  const { data, response } = await client.chat.completions
    .create({ model: 'checked', messages: [{ role: 'user', content: 'q' }] }).withResponse();
  assert.equal(data.choices[0].message.content, 'Here is the answer.');
  assert.equal(response.headers.get('x-bascule-target'), 'ck-f');
  assert.equal(response.headers.get('x-bascule-workflow'), 'cross_model_fallback');
  assert.equal(response.headers.get('x-bascule-recovery-reason'), 'contract_failure');
  assert.equal(await sim.calls('ck-p'), 1);
  assert.equal(await sim.calls('ck-f'), 1);
});

test('no fallback: a forbidden match is a 502 contract_failure, never the answer', async () => {
  await sim.setModel('ck-lone', { content: 'as an AI Language Model I refuse' });
  const res = await post({ model: 'lone', messages: [{ role: 'user', content: 'q' }] });
  assert.equal(res.status, 502);
  const body = await res.json();
  assert.equal(body.error.code, 'contract_failure');
  assert.match(body.error.message, /check forbidden failed/);
  assert.ok(!JSON.stringify(body).includes('I refuse'));
});

test('max_chars: a too long answer fails its check', async () => {
  await sim.setModel('ck-lone', { content: 'x'.repeat(41) });
  const res = await post({ model: 'lone', messages: [{ role: 'user', content: 'q' }] });
  assert.equal(res.status, 502);
  const body = await res.json();
  assert.match(body.error.message, /max_chars failed: 41 characters/);
  await sim.setModel('ck-lone', { content: 'x'.repeat(40) });
  const ok = await post({ model: 'lone', messages: [{ role: 'user', content: 'q' }] });
  assert.equal(ok.status, 200);
});

test('required: an answer without the required pattern fails, one with it passes', async () => {
  await sim.setModel('ck-req', { content: 'no source given' });
  const res = await post({ model: 'cited', messages: [{ role: 'user', content: 'q' }] });
  assert.equal(res.status, 502);
  assert.match((await res.json()).error.message, /check required failed/);
  await sim.setModel('ck-req', { content: 'see https://example.org' });
  const ok = await post({ model: 'cited', messages: [{ role: 'user', content: 'q' }] });
  assert.equal(ok.status, 200);
});

test('a buffered stream is checked before release: the fallback stream is delivered', async () => {
  await sim.setModel('ck-bp', { content: 'As an AI language model, no.' });
  await sim.setModel('ck-bf', { content: 'Streamed and fine.' });
  const res = await post({ model: 'buffered', stream: true, messages: [{ role: 'user', content: 'q' }] });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-bascule-target'), 'ck-bf');
  const raw = await res.text();
  assert.ok(!/language model/i.test(raw), 'the failing stream never reaches the client');
  let text = '';
  for (const line of raw.split('\n')) {
    if (!line.startsWith('data: {')) continue;
    text += JSON.parse(line.slice(6)).choices?.[0]?.delta?.content ?? '';
  }
  assert.equal(text, 'Streamed and fine.');
  assert.equal(await sim.calls('ck-bp'), 1);
});

test('a pass-through stream is checked at its end and the failure recorded', async () => {
  const failed = /bascule_outcomes_total\{route="passthrough",layer="contract",result="failed"\} (\d+)/;
  const before = await metric(failed);
  await sim.setModel('ck-pt', { content: 'As an AI language model, streamed anyway.' });
  const res = await post({ model: 'passthrough', stream: true, messages: [{ role: 'user', content: 'q' }] });
  assert.equal(res.status, 200);
  const raw = await res.text(); // the bytes went out as they came: nothing to take back
  assert.match(raw, /data: \[DONE\]/);
  await waitFor(async () => (await metric(failed)) === before + 1, { what: 'the recorded check failure' });
  const okRe = /bascule_target_outcomes_total\{target="ck-pt",layer="contract",result="failed"\} (\d+)/;
  assert.equal(await metric(okRe), before + 1);
});
