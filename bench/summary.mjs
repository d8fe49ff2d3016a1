// SPDX-License-Identifier: MIT
// summary.mjs -- percentiles of the benchmark's samples (milliseconds), shared by the
// streams client and the driver that pools its rounds.

/** Nearest-rank percentile of an array of numbers; null when empty. */
export function pct(values, p) {
  if (values.length === 0) return null;
  const s = [...values].sort((a, b) => a - b);
  const i = Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1));
  return s[i];
}

/** { n, p50, p90, p99, max } of <values>, rounded to the microsecond. */
export function summary(values) {
  const r = (x) => (x === null ? null : Math.round(x * 1000) / 1000);
  return { n: values.length, p50: r(pct(values, 50)), p90: r(pct(values, 90)), p99: r(pct(values, 99)), max: r(pct(values, 100)) };
}

/** p50 and p99 of <gateway> minus those of <direct> (summaries); null where either is. */
export function added(gateway, direct) {
  const d = (p) => (gateway[p] === null || direct[p] === null ? null : Math.round((gateway[p] - direct[p]) * 1000) / 1000);
  return { p50: d('p50'), p99: d('p99') };
}
