// SPDX-License-Identifier: MIT
// The reference pages stay complete: docs/configuration.md's contents line links every
// section (## heading) it has, and docs/api.md names every path src/api/dispatch.c routes
// and has a section for each model endpoint (/v1/responses among them); the README's layout
// map names every src/ directory and only paths that exist.
import { test } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '../lib/harness.mjs';

const read = (p) => readFileSync(path.join(REPO_ROOT, p), 'utf8');
/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes. */
const slug = (h) => h.toLowerCase().replace(/[^a-z0-9 _-]/g, '').replace(/ /g, '-');

test('configuration.md: the contents line links every section', () => {
  const text = read('docs/configuration.md');
  const contents = /^Contents: [\s\S]*?\n\n/m.exec(text)?.[0] ?? '';
  assert.ok(contents, 'configuration.md has a "Contents:" paragraph');
  const linked = new Set([...contents.matchAll(/\]\(#([^)]+)\)/g)].map((m) => m[1]));
  const sections = [...text.matchAll(/^## (.+)$/gm)].map((m) => slug(m[1]));
  assert.deepEqual(sections.filter((s) => !linked.has(s)), [], 'sections missing from the contents line');
  assert.deepEqual([...linked].filter((l) => !sections.includes(l)), [], 'contents links to no section');
});

test('api.md: every routed path is documented, every model endpoint has its section', () => {
  const api = read('docs/api.md');
  const dispatch = read('src/api/dispatch.c');
  const paths = [...new Set([...dispatch.matchAll(/(?:is\(path, |BSC_STR\()"(\/[^"]*)"/g)].map((m) => m[1]))];
  assert.ok(paths.length >= 10, `dispatch.c routes many paths (${paths.length})`);
  for (const p of paths) assert.ok(api.includes(p.replace(/\/$/, '')), `docs/api.md does not name ${p}`);
  for (const ep of ['POST /v1/chat/completions', 'POST /v1/messages', 'POST /v1/responses',
    'POST /v1/embeddings', 'GET /v1/models', 'POST /v1/feedback'])
    assert.match(api, new RegExp(`^## ${ep.replace(/[/.]/g, '\\$&')}$`, 'm'), `no section for ${ep}`);
  const contents = /^Contents: [\s\S]*?\n\n/m.exec(api)?.[0] ?? '';
  for (const h of [...api.matchAll(/^## (.+)$/gm)].map((m) => slug(m[1])))
    assert.ok(contents.includes(`(#${h})`), `api.md contents does not link #${h}`);
});

test("README layout: every src/ directory is on the map, every path on it exists", () => {
  const readme = read('README.md');
  const map = /^## Layout\n\n```\n([\s\S]*?)```/m.exec(readme)?.[1] ?? '';
  assert.ok(map, 'README has a Layout block');
  const named = [...map.matchAll(/(?:^|\s)((?:src|tests|sim|examples|deploy|debian|docs|mk|scripts|bench)(?:\/[a-z_]+)*\/?)(?=\s|$)/gm)]
    .map((m) => m[1].replace(/\/$/, ''));
  for (const p of named) assert.ok(existsSync(path.join(REPO_ROOT, p)), `the layout names ${p}, which does not exist`);
  for (const d of readdirSync(path.join(REPO_ROOT, 'src'), { withFileTypes: true }).filter((e) => e.isDirectory()))
    assert.ok(named.includes(`src/${d.name}`), `src/${d.name} is not on the README's layout map`);
  assert.ok(map.includes('Containerfile') && existsSync(path.join(REPO_ROOT, 'Containerfile')) || !map.includes('Containerfile'),
    'the Containerfile the map names exists');
});
