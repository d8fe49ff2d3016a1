// SPDX-License-Identifier: MIT
// `bascule load` (docs/load.md): the real binary run against a real gateway in front of
// bascule-sim. The report's counts, targets, workflows, attempts, errors by status and code,
// TTFT of streams and tokens; the JSON report; the --duration bound; bad arguments (exit 2).
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSim, startGateway, bins } from '../lib/harness.mjs';

let sim, gw, dir;

const RUN_TIMEOUT_MS = 60_000;

/** Runs `bascule load ARGS`; resolves {code, stdout, stderr}. Killed (by PID) past the bound. */
function load(args) {
  return new Promise((resolve, reject) => {
    const child = spawn(bins.bascule, ['load', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), RUN_TIMEOUT_MS);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (/ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:/.test(stderr)) {
        reject(new Error(`bascule load printed a sanitizer report:\n${stderr}`));
      }
      resolve({ code: code ?? signal, stdout, stderr });
    });
  });
}

function jsonFile(name) {
  return join(dir, name);
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'bascule-load-'));
  sim = await startSim();
  await sim.setModel('upstream-slow', { token_delay_ms: 5 });
  await sim.setModel('upstream-down', { script: [{ action: 'status', status: 503 }], repeat: true });
  await sim.setModel('upstream-hang', { script: [{ action: 'hang' }], repeat: true });
  gw = await startGateway({
    config: `
listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: warn }
providers:
  sim:
    kind: openai_compatible
    base_url: "${sim.base}"
    keys: ["sk-load"]
    health: { probe: none }
targets:
  m1@sim: { provider: sim, model: upstream-m1 }
  slow@sim: { provider: sim, model: upstream-slow }
  down@sim: { provider: sim, model: upstream-down }
  hang@sim: { provider: sim, model: upstream-hang }
  priced@sim: { provider: sim, model: upstream-priced, price: { input_per_mtok: 0, output_per_mtok: 1000, cached_input_per_mtok: 0 } }
routes:
  chat: { primary: [m1@sim] }
  slow: { primary: [slow@sim] }
  down: { primary: [down@sim] }
  hang: { primary: [hang@sim] }
  priced: { primary: [priced@sim] }
`,
  });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('50 requests, 5 at a time: 100% success, the route target seen, the JSON adds up', async () => {
  const out = jsonFile('plain.json');
  const r = await load(['--url', gw.url, '--model', 'chat', '--requests', '50', '--concurrency', '5', '--json', out]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /success rate\s+100\.00%/);
  assert.match(r.stdout, /targets\s+m1@sim=50/);
  assert.match(r.stdout, /workflows\s+primary=50/);
  assert.match(r.stdout, /attempts\/request mean 1\.00\s+max 1/);
  // stderr is not a terminal here: plain progress lines, the last one final
  assert.match(r.stderr, /load: 50\/50 in [\d.]+ s, [\d.]+ req\/s, 0 errors/);
  const j = JSON.parse(readFileSync(out, 'utf8'));
  assert.equal(j.url, `${gw.url}/v1/chat/completions`);
  assert.equal(j.model, 'chat');
  assert.equal(j.sent, 50);
  assert.equal(j.completed, 50);
  assert.equal(j.ok + j.errors_total, j.completed);
  assert.equal(j.ok, 50);
  assert.equal(j.cancelled, 0);
  assert.equal(j.success_rate, 1);
  assert.ok(j.requests_per_s > 0);
  assert.equal(j.latency_ms.samples, 50);
  assert.ok(j.latency_ms.p50 <= j.latency_ms.p95 && j.latency_ms.p95 <= j.latency_ms.p99);
  assert.ok(j.latency_ms.p99 <= j.latency_ms.max);
  assert.equal(j.ttft_ms, null);
  assert.deepEqual(j.targets, { 'm1@sim': 50 });
  assert.deepEqual(j.workflows, { primary: 50 });
  assert.deepEqual(j.errors, []);
  assert.deepEqual(j.attempts, { responses: 50, mean: 1, max: 1 });
  assert.equal(j.tokens.responses, 50);
  assert.ok(j.tokens.input_per_1k > 0 && j.tokens.output_per_1k > 0);
  // the sim's default answer is 12 tokens: 12,000 per 1,000 requests
  assert.equal(j.tokens.output_per_1k, 12000);
  assert.equal(j.cost, null);
  assert.equal(j.planned_requests, 50);
  assert.equal(j.duration_s, null);
});

test('--stream reports cost from the closing x-bascule-cost-usd comment of each stream', async () => {
  // 12 output tokens at $1,000 per Mtok: $0.012 a request, $12 per 1,000.
  const out = jsonFile('stream-cost.json');
  const r = await load(['--url', gw.url, '--model', 'priced', '--requests', '10', '--concurrency', '2',
    '--stream', '--json', out]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /cost\/1k req\s+\$12\.000000\s+\(x-bascule-cost-usd in 10 responses\)/);
  const j = JSON.parse(readFileSync(out, 'utf8'));
  assert.equal(j.ok, 10);
  assert.equal(j.cost.responses, 10);
  assert.ok(Math.abs(j.cost.usd - 0.12) < 1e-9, JSON.stringify(j.cost));
  assert.ok(Math.abs(j.cost.usd_per_1k - 12) < 1e-6, JSON.stringify(j.cost));
});

test('--stream measures TTFT from the first data: event and finds usage in the last chunk', async () => {
  const out = jsonFile('stream.json');
  const r = await load(['--url', `${gw.url}/v1/`, '--model', 'slow', '--requests', '50', '--concurrency', '5',
    '--stream', '--json', out]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /TTFT ms\s+p50 [\d.]+\s+p95/);
  const j = JSON.parse(readFileSync(out, 'utf8'));
  assert.equal(j.stream, true);
  assert.equal(j.ok, 50);
  assert.equal(j.ttft_ms.samples, 50);
  // The sim waits 5 ms before each of the 12 tokens and the end after the first event: every
  // request's latency is at least its TTFT + 60 ms, so each order statistic is too.
  assert.ok(j.latency_ms.p50 - j.ttft_ms.p50 >= 50, JSON.stringify(j));
  assert.ok(j.latency_ms.p99 - j.ttft_ms.p99 >= 50, JSON.stringify(j));
  assert.equal(j.tokens.responses, 50);
  assert.equal(j.tokens.output_per_1k, 12000);
  assert.deepEqual(j.targets, { 'slow@sim': 50 });
  const seen = await sim.lastRequest('upstream-slow');
  assert.equal(seen.body.stream, true);
  assert.deepEqual(seen.body.stream_options, { include_usage: true });
});

test('a route whose model answers 503: errors by status and code', async () => {
  const out = jsonFile('down.json');
  // what the gateway answers this route, to compare with the report
  const probe = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'down', messages: [{ role: 'user', content: 'x' }] }),
  });
  const probeBody = await probe.json();
  assert.ok(probe.status >= 500);
  const r = await load(['--url', gw.url, '--model', 'down', '--requests', '50', '--concurrency', '5', '--json', out]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /success rate\s+0\.00%/);
  assert.match(r.stdout, /errors \(status code: count\)/);
  const j = JSON.parse(readFileSync(out, 'utf8'));
  assert.equal(j.ok, 0);
  assert.equal(j.errors_total, 50);
  assert.equal(j.errors.reduce((n, e) => n + e.count, 0), 50);
  for (const e of j.errors) {
    assert.ok(e.status >= 500, JSON.stringify(e));
    assert.match(e.code, /^[a-z_]+$/);
    assert.match(r.stdout, new RegExp(`${e.status} ${e.code}: ${e.count}`));
  }
  assert.ok(j.errors.some((e) => e.status === probe.status && e.code === probeBody.error.code),
    `${probe.status} ${probeBody.error.code} in ${JSON.stringify(j.errors)}`);
  assert.equal(j.latency_ms, null); // latency percentiles are of successes
});

test('--body FILE: its fields are sent with the route as model', async () => {
  const body = join(dir, 'body.json');
  writeFileSync(body, JSON.stringify({ model: 'ignored', messages: [{ role: 'user', content: 'from the file' }],
    temperature: 0.25, stream: true }));
  const r = await load(['--url', gw.url, '--model', 'chat', '--requests', '3', '--concurrency', '1', '--body', body,
    '--key', 'sk-client']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /3 completed .*\(3 ok, 0 errors\)/);
  const seen = await sim.lastRequest('upstream-m1');
  assert.equal(seen.body.temperature, 0.25);
  assert.equal(seen.body.messages[0].content, 'from the file');
  assert.equal(seen.body.stream, undefined); // no --stream: the file's stream is dropped
});

test('--duration bounds a run: requests still in flight are cancelled, not counted', async () => {
  const out = jsonFile('hang.json');
  const r = await load(['--url', gw.url, '--model', 'hang', '--duration', '0.5', '--concurrency', '3', '--json', out]);
  assert.equal(r.code, 0, r.stderr);
  const j = JSON.parse(readFileSync(out, 'utf8'));
  assert.equal(j.sent, 3);
  assert.equal(j.completed, 0);
  assert.equal(j.cancelled, 3);
  assert.equal(j.planned_requests, null);
  assert.equal(j.duration_s, 0.5);
  assert.ok(j.elapsed_s >= 0.5);
  assert.match(r.stdout, /3 cancelled at the end/);
});

test('bad arguments: a clear error, the usage, exit 2', async () => {
  const notObject = join(dir, 'array.json');
  writeFileSync(notObject, '[1, 2]');
  const cases = [
    [['--model', 'chat'], /--url and --model are required/],
    [['--url', gw.url], /--url and --model are required/],
    [['--url', gw.url, '--model', 'chat', '--concurrency', '0'], /invalid value "0" for --concurrency/],
    [['--url', gw.url, '--model', 'chat', '--requests', 'ten'], /invalid value "ten" for --requests/],
    [['--url', gw.url, '--model', 'chat', '--duration', '-3'], /invalid value "-3" for --duration/],
    [['--url', 'ftp://127.0.0.1', '--model', 'chat'], /--url must be/],
    [['--url', gw.url, '--model', 'chat', '--frobnicate'], /unknown option/],
    [['--url', gw.url, '--model', 'chat', 'extra'], /unexpected argument: extra/],
    [['--url', gw.url, '--model', 'chat', '--body', join(dir, 'missing.json')], /cannot open it/],
    [['--url', gw.url, '--model', 'chat', '--body', notObject], /not a JSON object/],
  ];
  for (const [args, why] of cases) {
    const r = await load(args);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, why, args.join(' '));
    assert.equal(r.stdout, '', args.join(' '));
    if (!args.includes('--body')) assert.match(r.stderr, /usage: bascule load --url URL --model ROUTE/);
  }
  const help = await load(['--help']);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /usage: bascule load/);
});
