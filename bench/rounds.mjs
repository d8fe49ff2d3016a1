// SPDX-License-Identifier: MIT
// rounds.mjs -- the closed-loop measuring of the side parts (tls.mjs, cache.mjs): a warm-up
// per column, then BENCH_ROUNDS rounds of BENCH_SECONDS/rounds each, the columns in an
// order rotated every round (so no column always runs right after another), a pause after
// each run for a saturated column to drain.
import { sleep } from './proc.mjs';

/**
 * Measures each column of <live> ({ key, t, rounds: [], failed }) with <measure>(x, seconds,
 * wrkOpts), which resolves one round's figures (pushed to x.rounds); a column that fails is
 * marked x.failed and left out of the later rounds. <h> holds C, log and runWrk; <tag>
 * prefixes the log lines.
 */
export async function closedLoopRounds(live, h, tag, measure) {
  const { C, log } = h;
  const closed = { connections: C.connections, threads: C.threads };
  for (const x of live) {
    log(`${tag} ${x.key}: warm-up, ${C.warmup} s`);
    if (C.warmup > 0) await h.runWrk(x.t.url, C.warmup, closed).catch((e) => (x.failed = e.message));
  }
  const R = Math.max(1, Math.round(C.rounds));
  const per = Math.max(1, Math.round(C.seconds / R));
  for (let r = 0; r < R; r++) {
    for (const x of live.map((_, i) => live[(i + r) % live.length])) {
      if (x.failed) continue;
      log(`${tag} round ${r + 1}/${R}: ${x.key}, ${per} s`);
      try {
        x.rounds.push(await measure(x, per, closed));
      } catch (e) {
        x.failed = e.message;
      }
      await sleep(C.settleMs);
    }
  }
  return per * R;
}
