// SPDX-License-Identifier: MIT
// Writes deploy/grafana/bascule.json, the Grafana dashboard for bascule's /metrics:
//   node deploy/grafana/make-dashboard.mjs
// The panels are listed here once; the JSON is generated so that layout and ids stay
// consistent. Every metric a query names must exist in a running gateway's /metrics
// (tests/integration/deploy_metrics.test.mjs checks it).
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const DS = { type: 'prometheus', uid: '${datasource}' };
const R = 'route=~"$route"';
const T = 'target=~"$target"';
const q = (expr, legendFormat) => ({ expr, legendFormat });
const quantiles = (metric, by, sel) =>
  [0.5, 0.95, 0.99].map((p) =>
    q(`histogram_quantile(${p}, sum by (le, ${by}) (rate(${metric}_bucket{${sel}}[$__rate_interval])))`,
      `p${p * 100} {{${by}}}`));

// [section title, [panel: {title, unit, targets, type?, stack?, description?}]]
const sections = [
  ['Traffic and errors', [
    { title: 'Requests/s by route', unit: 'reqps',
      targets: [q(`sum by (route) (rate(bascule_requests_total{${R}}[$__rate_interval]))`, '{{route}}')] },
    { title: 'Requests/s by outcome', unit: 'reqps', stack: true,
      targets: [q(`sum by (outcome) (rate(bascule_requests_total{${R}}[$__rate_interval]))`, '{{outcome}}')] },
    { title: 'Error ratio by route', unit: 'percentunit',
      targets: [q(`sum by (route) (rate(bascule_requests_total{${R},outcome!~"ok|client_error|client_abort"}[$__rate_interval])) / sum by (route) (rate(bascule_requests_total{${R}}[$__rate_interval]))`, '{{route}}')] },
    { title: 'Typed upstream failures by kind', unit: 'ops', stack: true,
      description: 'bascule_attempts_total{kind}: the normalized failure taxonomy (docs/internals/taxonomy.md).',
      targets: [q(`sum by (kind) (rate(bascule_attempts_total{${T},kind!="ok"}[$__rate_interval]))`, '{{kind}}')] },
    { title: 'Outcomes by layer (transport, contract, task)', unit: 'ops', stack: true,
      targets: [q(`sum by (layer, result) (rate(bascule_outcomes_total{${R}}[$__rate_interval]))`, '{{layer}} {{result}}')] },
  ]],
  ['Latency', [
    { title: 'Request duration by route', unit: 's', targets: quantiles('bascule_request_duration_seconds', 'route', R) },
    { title: 'Time to first token by route', unit: 's', targets: quantiles('bascule_ttft_seconds', 'route', R) },
    { title: 'Attempt duration by target', unit: 's', targets: quantiles('bascule_attempt_duration_seconds', 'target', T) },
    { title: 'Attempt time to first token by target', unit: 's', targets: quantiles('bascule_attempt_ttft_seconds', 'target', T) },
    { title: 'Gateway overhead (time not waiting on upstreams)', unit: 's',
      description: 'bascule_overhead_seconds: parsing, routing, translation and queueing for the loop; the same figure as x-bascule-overhead-ms.',
      targets: quantiles('bascule_overhead_seconds', 'route', R) },
  ]],
  ['Recovery', [
    { title: 'Retries, failovers and fallbacks/s', unit: 'ops',
      targets: [
        q(`sum by (route) (rate(bascule_retries_total{${R}}[$__rate_interval]))`, 'retry {{route}}'),
        q(`sum by (route) (rate(bascule_failovers_total{${R}}[$__rate_interval]))`, 'failover {{route}}'),
        q(`sum by (route) (rate(bascule_fallbacks_total{${R}}[$__rate_interval]))`, 'fallback {{route}}'),
      ] },
    { title: 'Answers by workflow', unit: 'ops', stack: true,
      targets: [q('sum by (workflow) (rate(bascule_workflow_outcomes_total{layer="transport"}[$__rate_interval]))', '{{workflow}}')] },
    { title: 'Retry budget', unit: 'ops',
      targets: [
        q('sum(rate(bascule_retry_budget_spent_total[$__rate_interval]))', 'granted'),
        q('sum(rate(bascule_retry_budget_rejections_total[$__rate_interval]))', 'refused'),
      ] },
  ]],
  ['Circuits and keys', [
    { title: 'Circuits not closed', unit: 'short', type: 'state',
      description: 'bascule_breaker_state{state}: 1 for the current state of each target.',
      targets: [q(`max by (target, state) (bascule_breaker_state{${T},state!="closed"}) == 1`, '{{target}} {{state}}')] },
    { title: 'Circuit transitions', unit: 'short',
      targets: [q(`sum by (target, to) (increase(bascule_breaker_transitions_total{${T}}[$__rate_interval]))`, '{{target}} → {{to}}')] },
    { title: 'Eligible targets per route', unit: 'short',
      targets: [q(`min by (route) (bascule_route_eligible_targets{${R}})`, '{{route}}')] },
    { title: 'Key cooldowns and re-verifications', unit: 'short',
      targets: [
        q('sum by (provider, reason) (increase(bascule_key_cooldowns_total[$__rate_interval]))', 'cooldown {{provider}} {{reason}}'),
        q('sum by (provider, result) (increase(bascule_key_reverifications_total[$__rate_interval]))', 'reverify {{provider}} {{result}}'),
      ] },
  ]],
  ['Limits and queueing', [
    { title: 'Limit decisions', unit: 'ops', stack: true,
      targets: [q('sum by (limit, outcome) (rate(bascule_limit_decisions_total{outcome!="allowed"}[$__rate_interval]))', '{{limit}} {{outcome}}')] },
    { title: 'Queued and in flight per target', unit: 'short',
      targets: [
        q(`sum by (target) (bascule_queue_depth{${T}})`, 'queued {{target}}'),
        q(`sum by (target) (bascule_upstream_inflight{${T}})`, 'in flight {{target}}'),
      ] },
    { title: 'Adaptive limits per target', unit: 'short',
      targets: [
        q(`max by (target) (bascule_target_effective_concurrency{${T}})`, 'concurrency {{target}}'),
        q(`max by (target) (bascule_target_effective_rpm{${T}})`, 'rpm {{target}}'),
      ] },
    { title: 'Client connections', unit: 'short',
      targets: [q('sum by (instance) (bascule_connections)', '{{instance}}')] },
  ]],
  ['Cost and budgets', [
    { title: 'Spend (USD/hour) by client', unit: 'currencyUSD', stack: true,
      targets: [q(`sum by (client) (rate(bascule_cost_usd_total{${R}}[$__rate_interval])) * 3600`, '{{client}}')] },
    { title: 'Spend (USD/hour) by target', unit: 'currencyUSD', stack: true,
      targets: [q(`sum by (target) (rate(bascule_cost_usd_total{${T}}[$__rate_interval])) * 3600`, '{{target}}')] },
    { title: 'Budget used', unit: 'percentunit',
      targets: [q('max by (client) (bascule_client_spend_usd) / max by (client) (bascule_client_budget_usd > 0)', '{{client}}')] },
    { title: 'Tokens/s by type', unit: 'short', stack: true,
      targets: [q(`sum by (direction) (rate(bascule_tokens_total{${R}}[$__rate_interval]))`, '{{direction}}')] },
  ]],
  ['Process and store', [
    { title: 'Store up', unit: 'short', targets: [q('min by (instance) (bascule_store_up)', '{{instance}}')] },
    { title: 'Config reloads', unit: 'short',
      targets: [q('sum by (result) (increase(bascule_config_reloads_total[$__rate_interval]))', '{{result}}')] },
    { title: 'CPU', unit: 'percentunit',
      targets: [q('rate(process_cpu_seconds_total{job=~"$job"}[$__rate_interval])', '{{instance}}')] },
    { title: 'Resident memory', unit: 'bytes',
      targets: [q('process_resident_memory_bytes{job=~"$job"}', '{{instance}}')] },
    { title: 'File descriptors', unit: 'short',
      targets: [
        q('process_open_fds{job=~"$job"}', 'open {{instance}}'),
        q('process_max_fds{job=~"$job"}', 'max {{instance}}'),
      ] },
    { title: 'Version', unit: 'short', type: 'table',
      targets: [q('max by (instance, version, revision) (bascule_build_info{job=~"$job"})', '{{version}} {{revision}}')] },
    { title: 'Metrics dropped', unit: 'short',
      targets: [q('sum(increase(bascule_metrics_dropped_total[$__rate_interval]))', 'dropped')] },
  ]],
];

function panel(p, id, x, y) {
  const common = {
    id, title: p.title, datasource: DS, gridPos: { h: 8, w: 8, x, y },
    description: p.description ?? '',
    targets: p.targets.map((t, i) => ({ ...t, datasource: DS, refId: String.fromCharCode(65 + i) })),
  };
  if (p.type === 'table')
    return { ...common, type: 'table', fieldConfig: { defaults: {}, overrides: [] },
      options: { showHeader: true }, transformations: [{ id: 'labelsToFields', options: {} }] };
  if (p.type === 'state')
    return { ...common, type: 'state-timeline', fieldConfig: { defaults: { unit: p.unit }, overrides: [] },
      options: { mergeValues: true, showValue: 'never' } };
  return {
    ...common, type: 'timeseries',
    fieldConfig: {
      defaults: { unit: p.unit, custom: { drawStyle: 'line', fillOpacity: p.stack ? 30 : 5,
        stacking: { mode: p.stack ? 'normal' : 'none', group: 'A' } } },
      overrides: [],
    },
    options: { legend: { displayMode: 'list', placement: 'bottom' }, tooltip: { mode: 'multi', sort: 'desc' } },
  };
}

const panels = [];
let id = 1, y = 0;
for (const [title, list] of sections) {
  panels.push({ id: id++, type: 'row', title, collapsed: false, gridPos: { h: 1, w: 24, x: 0, y: y++ }, panels: [] });
  list.forEach((p, i) => {
    panels.push(panel(p, id++, (i % 3) * 8, y + Math.floor(i / 3) * 8));
  });
  y += Math.ceil(list.length / 3) * 8;
}

const variable = (name, query, label) => ({
  name, label, type: 'query', datasource: DS, query: { query, refId: name },
  definition: query, includeAll: true, multi: true, allValue: '.*',
  current: { selected: true, text: ['All'], value: ['$__all'] }, refresh: 2, sort: 1,
});

const dashboard = {
  title: 'bascule',
  uid: 'bascule-gateway',
  description: 'bascule LLM API gateway: traffic, typed failures, latency and TTFT, overhead, recovery, circuits, limits, cost, process.',
  tags: ['bascule', 'llm', 'gateway'],
  editable: true,
  schemaVersion: 38,
  version: 1,
  time: { from: 'now-6h', to: 'now' },
  refresh: '30s',
  timezone: '',
  graphTooltip: 1,
  annotations: { list: [] },
  templating: {
    list: [
      { name: 'datasource', label: 'Data source', type: 'datasource', query: 'prometheus',
        current: {}, hide: 0, refresh: 1 },
      variable('job', 'label_values(bascule_build_info, job)', 'Job'),
      variable('route', 'label_values(bascule_requests_total, route)', 'Route'),
      variable('target', 'label_values(bascule_attempts_total, target)', 'Target'),
    ],
  },
  panels,
};

const out = path.join(path.dirname(fileURLToPath(import.meta.url)), 'bascule.json');
writeFileSync(out, JSON.stringify(dashboard, null, 2) + '\n');
