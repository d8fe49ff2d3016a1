// Sixteen failover scenarios against bascule-sim, each scored by whether the client got the
// one whole answer (or, for a request the provider rightly refuses, that refusal): the kinds
// an outside failover suite scores a gateway on -- 429 with and without Retry-After, 500, 503,
// a reset, silence, a slow first token, a stream cut mid-answer, a stall, a malformed event, a
// stream without [DONE], context overflow, a content-filter 400, a fallback that refuses
// prefill, a flapping primary, and fail-over accounting.
//
// Two configurations of the same two-target route: "before" is what a newcomer writes
// (envelope defaults), "after" adds the keys of docs/configuration.md "Streams that finish":
// first_token_timeout_ms, stream_idle_timeout_ms and on_stream_failure: continue.
//
//   node bench/failover_scenarios.mjs            # build/bascule and build/bascule-sim
//   BASCULE_BIN=... BASCULE_SIM_BIN=... node bench/failover_scenarios.mjs [--json]
//   BEFORE_BIN=old/bascule node bench/failover_scenarios.mjs   # adds a column: the older
//                                                 # gateway binary with the "before" config
//
// Each scenario gets a fresh gateway, so one scenario's failures (a breaker opened by them)
// do not decide the next one.
//
// Times are scaled down from the suite's (a 20 s first token becomes 4 s, a 30 s stall 4 s),
// so the whole run takes about a minute. Every request is bounded (30 s).
import { startSim, startGateway, readStream, stopAll } from '../tests/lib/harness.mjs';

const SLOW_MS = 4000; // the slow first token and the stall
const JSON_OUT = process.argv.includes('--json');

function config(sim, after) {
  const extra = after
    ? ', first_token_timeout_ms: 1500, stream_idle_timeout_ms: 1500, on_stream_failure: continue, max_attempts: 4'
    : '';
  return `listen: "127.0.0.1:{{PORT}}"
workers: 1
log: { level: info, format: json }
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-fo"], health: { probe: none } }
targets:
  primary@sim: { provider: sim, model: fo-primary, context_window: 8000, price: { input_per_mtok: 1, output_per_mtok: 2 } }
  backup@sim: { provider: sim, model: fo-backup, capabilities: [text, streaming${after ? ', prefill' : ''}], price: { input_per_mtok: 1, output_per_mtok: 2 } }
routes:
  chat:
    primary: [primary@sim]
    fallback: [backup@sim]
    envelope: { deadline_ms: 20000, allow_cross_model_fallback: true${extra} }
`;
}

const cut = (n) => ({ action: 'cut', after_events: n + 1 }); // role chunk + n words

// Each: the primary's and the backup's specs, how many requests, and what counts as handled.
const scenarios = [
  { name: '429 with Retry-After', primary: { script: [{ action: 'status', status: 429, headers: { 'retry-after': '1' } }] } },
  { name: '429 without Retry-After', primary: { script: [{ action: 'status', status: 429 }] } },
  { name: '500', primary: { script: [{ action: 'status', status: 500 }] } },
  { name: '503', primary: { script: [{ action: 'status', status: 503 }] } },
  { name: 'connection reset', primary: { script: [{ action: 'reset' }] } },
  { name: 'silence (no answer)', primary: { script: [{ action: 'hang' }] } },
  { name: 'slow first token', primary: { script: [{ action: 'stall', after_events: 1, stall_ms: SLOW_MS }] }, fasterThan: SLOW_MS },
  { name: 'stream cut at 40 of 60 words', primary: { script: [cut(40)] } },
  { name: 'stall after 20 words', primary: { script: [{ action: 'stall', after_events: 21, stall_ms: 30000 }] } },
  { name: 'malformed 10th event', primary: { script: [{ action: 'malformed', after_events: 10 }] } },
  { name: 'stream without [DONE]', primary: { script: [{ action: 'no_done' }] } },
  { name: 'context overflow, fallback window undeclared', primary: { script: [{ action: 'status', status: 400, error_code: 'context_length_exceeded', message: 'too long' }] } },
  { name: 'content-filter 400', primary: { script: [{ action: 'status', status: 400, error_code: 'content_filter', message: 'filtered' }] }, expectStatus: 400 },
  { name: 'fallback refuses prefill', primary: { script: [cut(40), { action: 'status', status: 503, times: 5 }] }, backup: { prefill: 'refuse' } },
  { name: 'flapping primary (5 requests)', primary: { script: [{ action: 'status', status: 500 }, { action: 'ok' }], repeat: true }, requests: 5 },
  { name: 'fail-over accounting', primary: { script: [{ action: 'status', status: 503 }] }, accounting: true },
];

async function whole(sim) {
  await sim.setModel('fo-whole', { tokens: 60 });
  const res = await fetch(`${sim.base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-fo' },
    body: JSON.stringify({ model: 'fo-whole', messages: [{ role: 'user', content: 'x' }] }),
  });
  return (await res.json()).choices[0].message.content;
}

function streamedText(text) {
  return text.split('\n\n').filter((e) => e.startsWith('data: ') && e !== 'data: [DONE]')
    .map((e) => JSON.parse(e.slice(6))).map((c) => c.choices?.[0]?.delta?.content ?? '').join('');
}

async function one(gw, s, answer) {
  const t0 = Date.now();
  const res = await fetch(`${gw.base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'chat', stream: true, stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'x' }] }),
    signal: AbortSignal.timeout(30_000),
  }).catch((e) => ({ status: 0, error: e }));
  if (s.expectStatus)
    return { ok: res.status === s.expectStatus, detail: `status ${res.status}` };
  if (res.status !== 200)
    return { ok: false, detail: `status ${res.status}` };
  const { text, broken } = await readStream(res);
  const ms = Date.now() - t0;
  const got = streamedText(text);
  const done = text.split('\n\n').filter((e) => e.startsWith('data: ')).at(-1) === 'data: [DONE]';
  if (broken || !done || text.includes('"error"'))
    return { ok: false, detail: `interrupted (${got.length} of ${answer.length} chars)` };
  if (got !== answer)
    return { ok: false, detail: 'text differs from the whole answer' };
  if (s.fasterThan && ms >= s.fasterThan)
    return { ok: false, detail: `whole but late (${ms} ms)` };
  if (s.accounting) {
    // Both attempts on the access line, the answer's cost charged, the failover said.
    const id = res.headers.get('x-request-id');
    let access;
    for (let i = 0; i < 100 && !access; i++, await new Promise((r) => setTimeout(r, 20)))
      access = gw.accessLog().find((l) => l.type === 'access' && l.request_id === id);
    const tries = Number(res.headers.get('x-bascule-attempts'));
    if (tries !== 2 || access?.attempts !== 2 || !(access?.cost_usd > 0) ||
        !res.headers.get('x-bascule-recovery-reason'))
      return { ok: false, detail: `attempts ${tries}/${access?.attempts}, cost ${access?.cost_usd}` };
  }
  return { ok: true, detail: `${ms} ms` };
}

async function run(after, bin) {
  const saved = process.env.BASCULE_BIN;
  const sim = await startSim();
  const answer = await whole(sim);
  const rows = [];
  if (bin) process.env.BASCULE_BIN = bin;
  for (const s of scenarios) {
    await sim.reset();
    await sim.setModel('fo-primary', { tokens: 60, ...s.primary });
    await sim.setModel('fo-backup', { tokens: 60, ...(s.backup ?? {}) });
    const gw = await startGateway({ config: config(sim, after) });
    let ok = true;
    let detail = '';
    for (let i = 0; i < (s.requests ?? 1); i++) {
      const r = await one(gw, s, answer);
      ok &&= r.ok;
      detail = r.detail;
    }
    await gw.stop();
    rows.push({ scenario: s.name, rescued: ok, detail });
  }
  if (saved === undefined) delete process.env.BASCULE_BIN;
  else process.env.BASCULE_BIN = saved;
  await sim.stop();
  return rows;
}

const runs = [];
if (process.env.BEFORE_BIN) runs.push({ name: 'old binary, before', rows: await run(false, process.env.BEFORE_BIN) });
runs.push({ name: 'before config', rows: await run(false) });
runs.push({ name: 'after config', rows: await run(true) });
await stopAll();
if (JSON_OUT) {
  console.log(JSON.stringify(runs, null, 2));
} else {
  const w = Math.max(...scenarios.map((s) => s.name.length));
  const cell = (r) => `${r.rescued ? 'yes' : 'no '} ${r.detail}`.padEnd(30);
  console.log(`${'scenario'.padEnd(w)}  ${runs.map((r) => r.name.padEnd(30)).join('  ')}`);
  for (let i = 0; i < scenarios.length; i++)
    console.log(`${scenarios[i].name.padEnd(w)}  ${runs.map((r) => cell(r.rows[i])).join('  ')}`);
  const n = (rows) => rows.filter((r) => r.rescued).length;
  console.log(`rescued: ${runs.map((r) => `${r.name} ${n(r.rows)}/16`).join(', ')}`);
}
