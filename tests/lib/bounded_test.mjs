// SPDX-License-Identifier: MIT
// bounded_test.mjs -- node:test with a time bound on every test and hook, so that a
// regression that hangs fails that test instead of holding the run until CI gives up.
// `node --test --test-timeout` cannot do this in Node 20: it bounds each file as a whole
// (the runner's per-file test inherits it), which would cut long files, not hung tests.
//
//   import { test, before, after } from '../lib/bounded_test.mjs';
//   test('a slower one', { timeout: 300_000 }, async () => { ... }); // a test's own bound wins
//
// The default is TEST_TIMEOUT_MS (BASCULE_TEST_TIMEOUT_MS overrides it). The slowest tests
// wait on timers, not the CPU: 7.8 s (accept.test's fd shortage), 6.1 s (redis_limits' lease
// TTL) and 6.1 s (bench_streams) in the ASan/UBSan run of the whole suite at
// --test-concurrency=2, 7.6, 6.3 and 6.2 s under ThreadSanitizer. 120 s is 15 times that,
// room for CPU burners (make test-stress) and a loaded CI machine.
import * as nodeTest from 'node:test';

export const TEST_TIMEOUT_MS = Number(process.env.BASCULE_TEST_TIMEOUT_MS) || 120_000;

/** <args> of test([name][, options][, fn]) or hook([fn][, options]) with a timeout added. */
function bounded(args) {
  const at = args.findIndex((a) => a !== null && typeof a === 'object');
  if (at >= 0) {
    if (args[at].timeout === undefined) args[at] = { ...args[at], timeout: TEST_TIMEOUT_MS };
    return args;
  }
  const fn = args.findIndex((a) => typeof a === 'function');
  args.splice(fn < 0 ? args.length : fn, 0, { timeout: TEST_TIMEOUT_MS });
  return args;
}

/** node:test's test(), bounded by TEST_TIMEOUT_MS unless its options set a timeout. */
export function test(...args) {
  return nodeTest.test(...bounded(args));
}
export const it = test;

// Hooks take (fn, options): the options go after the function.
const hook = (fn) => (body, options = {}) =>
  fn(body, options.timeout === undefined ? { ...options, timeout: TEST_TIMEOUT_MS } : options);
export const before = hook(nodeTest.before);
export const after = hook(nodeTest.after);
export const beforeEach = hook(nodeTest.beforeEach);
export const afterEach = hook(nodeTest.afterEach);

// A suite is as long as its tests: each of them is bounded, the suite is not.
export const { describe, mock } = nodeTest;
