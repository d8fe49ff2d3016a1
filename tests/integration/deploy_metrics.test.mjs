// SPDX-License-Identifier: MIT
// The dashboard and the alert rules that ship (deploy/grafana/bascule.json,
// deploy/prometheus/bascule-rules.yml) name only metrics a running gateway exports: every
// bascule_* and process_* name in a query or rule is a family in /metrics (a histogram's
// _bucket/_sum/_count by its family), and every one an alert reads has a sample before any
// traffic, so no alert is silently blind. promtool's own unit tests of the rules pass
// (deploy/prometheus/bascule-rules.test.yml), as does `promtool check rules`.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { startSim, startGateway, REPO_ROOT } from '../lib/harness.mjs';

const DASHBOARD = path.join(REPO_ROOT, 'deploy/grafana/bascule.json');
const RULES = path.join(REPO_ROOT, 'deploy/prometheus/bascule-rules.yml');
const RULES_TEST = path.join(REPO_ROOT, 'deploy/prometheus/bascule-rules.test.yml');
let sim, gw, exposition;

const config = (simUrl) => `listen: "127.0.0.1:{{PORT}}"
workers: 1
log: { level: warn, format: json }
providers:
  sim: { kind: openai, base_url: "${simUrl}/v1", keys: ["sk-sim"], health: { probe: none } }
targets:
  t@sim: { provider: sim, model: deploy-m, price: { input_per_mtok: 1, output_per_mtok: 1 } }
routes:
  chat: { primary: [t@sim] }
clients:
  team: { key: "team-key-0123456789abcdef", routes: [chat], budget: { usd: 10, period: day } }
`;

before(async () => {
  sim = await startSim();
  gw = await startGateway({ config: config(sim.url) });
  const res = await fetch(`${gw.url}/metrics`);
  assert.equal(res.status, 200);
  exposition = await res.text();
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

/** Every bascule_* / process_* name in <text>, a histogram's series by their family. */
function metricNames(text) {
  const names = new Set();
  for (const [name] of text.matchAll(/\b(?:bascule|process)_[a-z_]+[a-z]\b/g))
    names.add(name.replace(/_(bucket|sum|count)$/, ''));
  return names;
}

const families = () => new Set([...exposition.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]));
const hasSample = (name) => new RegExp(`^${name}(\\{[^}]*\\})? `, 'm').test(exposition);

test('every metric the dashboard queries is a family of /metrics', () => {
  const dash = JSON.parse(readFileSync(DASHBOARD, 'utf8'));
  const exprs = [];
  const walk = (p) => {
    for (const t of p.targets ?? []) exprs.push(t.expr);
    for (const c of p.panels ?? []) walk(c);
  };
  dash.panels.forEach(walk);
  for (const v of dash.templating.list) if (v.definition) exprs.push(v.definition);
  const names = metricNames(exprs.join('\n'));
  assert.ok(names.size >= 30, `the dashboard reads many metrics (${names.size})`);
  const have = families();
  const missing = [...names].filter((n) => !have.has(n));
  assert.deepEqual(missing, [], 'dashboard metrics missing from /metrics');
});

test('every metric the alert rules read is in /metrics with a sample before any traffic', () => {
  const names = metricNames(readFileSync(RULES, 'utf8'));
  assert.ok(names.size >= 8, `the rules read several metrics (${names.size})`);
  const have = families();
  assert.deepEqual([...names].filter((n) => !have.has(n)), [], 'rule metrics missing from /metrics');
  assert.deepEqual([...names].filter((n) => !hasSample(n)), [], 'rule metrics without a sample');
});

test('promtool accepts the rules and their unit tests pass', () => {
  let out;
  try {
    out = execFileSync('promtool', ['check', 'rules', RULES], { encoding: 'utf8' });
    out += execFileSync('promtool', ['test', 'rules', RULES_TEST], { encoding: 'utf8', cwd: path.dirname(RULES_TEST) });
  } catch (err) {
    if (err.code === 'ENOENT') assert.fail('promtool is not installed (scripts/install-deps installs prometheus)');
    assert.fail(`promtool failed:\n${err.stdout ?? ''}${err.stderr ?? ''}`);
  }
  assert.match(out, /SUCCESS/);
});
