// SPDX-License-Identifier: MIT
// --check-config refuses an operator key that is also a client key (issue 24): with
// admin.key equal to a client's key that client could disable targets and reset spends, with
// metrics.key equal to one it could read every client's figures. Each is an error with the
// file, line and column of the operator key, naming the client, never the key.
import { test } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { bins } from '../lib/harness.mjs';

const KEY = 'sk-client-alice-0123456789';

function check(text) {
  const dir = mkdtempSync(join(tmpdir(), 'bascule-cfg-'));
  const file = join(dir, 'gateway.yaml');
  writeFileSync(file, text);
  try {
    const r = spawnSync(bins.bascule, ['--check-config', file], { encoding: 'utf8' });
    return { ...r, file };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const base = `listen: "127.0.0.1:1"
providers:
  p: { kind: openai_compatible, base_url: "http://127.0.0.1:9/v1", keys: ["sk-up"] }
targets:
  t: { provider: p, model: m }
routes:
  r: { primary: [t] }
clients:
  bob: { key: "sk-client-bob-0123456789", routes: [r] }
  alice: { key: "${KEY}", routes: [r] }
`;

const esc = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

test('admin.key equal to a client key: an error at its line, naming the client', () => {
  const r = check(`${base}admin:\n  key: "${KEY}"\n`);
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, new RegExp(`${esc(r.file)}:12:8: error: 'key' in admin: is the key of client 'alice' \\(line 10\\)`));
  assert.ok(!r.stderr.includes(KEY), 'the key is not printed');
});

test('metrics.key equal to a client key: an error at its line, naming the client', () => {
  const r = check(`${base}metrics: { key: "${KEY}" }\n`);
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, new RegExp(`${esc(r.file)}:11:17: error: 'key' in metrics: is the key of client 'alice' \\(line 10\\)`));
});

test('operator keys distinct from every client key pass', () => {
  const r = check(`${base}admin: { key: "sk-admin-0123456789abcdef" }\nmetrics: { key: "sk-metrics-0123456789" }\n`);
  assert.equal(r.status, 0, r.stderr);
});
