// SPDX-License-Identifier: MIT
// readme.test.mjs -- the README's "Running it for real" commands work as written: the
// variables it exports are all examples/production.yaml needs to pass --check-config.
import { test } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT, bins } from '../lib/harness.mjs';

const run = promisify(execFile);

/** The names the README's `export A=... B=...` block sets (continuation lines included). */
function readmeExports() {
  const readme = readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8');
  const block = readme.match(/^export ((?:[^\n]*\\\n)*[^\n]*)/m);
  assert.ok(block, 'README has an export line for the production example');
  return [...block[1].matchAll(/([A-Z_][A-Z0-9_]*)=/g)].map((m) => m[1]);
}

test('examples/production.yaml checks clean with exactly the variables the README exports', async () => {
  const names = readmeExports();
  assert.ok(names.includes('OPENAI_API_KEY'));
  const env = { PATH: process.env.PATH };
  for (const n of names) env[n] = n === 'AZURE_OPENAI_RESOURCE' ? 'readme-resource' : `sk-readme-${n.toLowerCase()}`;
  const { stdout, stderr } = await run(bins.bascule,
    ['--check-config', path.join(REPO_ROOT, 'examples/production.yaml')], { env, timeout: 30_000 });
  assert.doesNotMatch(stdout + stderr, /error/i);
});

test('and without one of them --check-config names the missing variable', async () => {
  const names = readmeExports().filter((n) => n !== 'AZURE_OPENAI_RESOURCE');
  const env = { PATH: process.env.PATH };
  for (const n of names) env[n] = 'x';
  await assert.rejects(
    run(bins.bascule, ['--check-config', path.join(REPO_ROOT, 'examples/production.yaml')], { env, timeout: 30_000 }),
    (e) => e.code === 1 && /AZURE_OPENAI_RESOURCE/.test(e.stdout + e.stderr));
});
