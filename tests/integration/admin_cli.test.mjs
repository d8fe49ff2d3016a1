// SPDX-License-Identifier: MIT
// `bascule admin` (docs/api.md "bascule admin"): the command-line client of the admin API
// against a running gateway — keys create (human and --json), list, show, update, rotate,
// revoke, the audit trail, and its exit codes (0 answered 2xx, 1 refused or unreachable, 2
// bad arguments). Also: a memory store warns that run-time keys die with the process.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { startSim, startGateway, gatewayBinary } from '../lib/harness.mjs';

const ADMIN = 'admin-key-0123456789abcdef';
let sim, gw;

before(async () => {
  sim = await startSim();
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 1
admin: { key: "${ADMIN}" }
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-s"], health: { probe: none } }
targets:
  t1: { provider: sim, model: cli-model }
routes:
  support-agent: { primary: [t1] }
`,
  });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

function cli(args, { key = ADMIN, env = {} } = {}) {
  const argv = ['admin', '--url', gw.url, ...(key ? ['--key', key] : []), ...args];
  return new Promise((resolve) => {
    execFile(gatewayBinary(), argv, { timeout: 20000, env: { ...process.env, ...env } }, (err, stdout, stderr) => {
      resolve({ code: err ? err.code : 0, stdout, stderr });
    });
  });
}

async function status(key) {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: 'support-agent', messages: [{ role: 'user', content: 'hi' }] }),
  });
  await res.arrayBuffer();
  return res.status;
}

test('the memory store warns that run-time keys die with the process', () => {
  assert.match(gw.logs(), /store.kind memory: keys made through the admin API/);
});

test('keys create, list, show, update, rotate, revoke and audit against a running gateway', async () => {
  let r = await cli(['keys', 'create', '--client', 'alice', '--routes', 'support-agent', '--budget', '50/month']);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  const secret = /secret: (bsk_[0-9a-f]{48})/.exec(r.stdout)?.[1];
  const id = /(key_[0-9a-f]{16})/.exec(r.stdout)?.[1];
  assert.ok(secret && id, r.stdout);
  assert.match(r.stdout, /shown once/);
  assert.equal(await status(secret), 200);

  r = await cli(['--json', 'keys', 'create', '--client', 'bob', '--routes', 'support-agent', '--rpm', '10']);
  assert.equal(r.code, 0);
  const bob = JSON.parse(r.stdout);
  assert.equal(bob.client, 'bob');
  assert.equal(bob.rpm, 10);

  r = await cli(['keys', 'list']);
  assert.equal(r.code, 0);
  assert.match(r.stdout, /^ID\s+SOURCE\s+CLIENT\s+STATUS/);
  assert.match(r.stdout, new RegExp(`${id}\\s+api\\s+alice\\s+active\\s+support-agent`));
  assert.match(r.stdout, /50(\.0)?\/month/);
  assert.ok(!r.stdout.includes(secret));

  r = await cli(['--json', 'keys', 'show', id]);
  assert.equal(JSON.parse(r.stdout).client, 'alice');

  r = await cli(['--json', 'keys', 'update', id, '--tpm', '5000']);
  assert.equal(r.code, 0, r.stdout);
  assert.equal(JSON.parse(r.stdout).tpm, 5000);

  r = await cli(['--json', 'keys', 'rotate', id, '--grace', '0']);
  assert.equal(r.code, 0);
  const rotated = JSON.parse(r.stdout).secret;
  assert.equal(await status(secret), 401);
  assert.equal(await status(rotated), 200);

  r = await cli(['keys', 'revoke', id]);
  assert.equal(r.code, 0);
  assert.match(r.stdout, /revoked/);
  assert.equal(await status(rotated), 401);

  r = await cli(['audit', '--subject', id]);
  assert.equal(r.code, 0);
  const actions = r.stdout.trim().split('\n').map((l) => l.split(/\s+/)[2]);
  assert.deepEqual(actions, ['key.create', 'key.update', 'key.rotate', 'key.revoke']);
  r = await cli(['--json', 'audit', '--since', String(Date.now() + 60000)]);
  assert.deepEqual(JSON.parse(r.stdout).entries, []);
});

test('teams create, list, show, update, delete; a key created in a team', async () => {
  let r = await cli(['teams', 'create', 'support', '--routes', 'support-agent', '--budget', '50/month', '--rpm', '100']);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /^support\s+support-agent\s+100\s+\S+\s+50(\.0)?\/month\s+0$/m);
  r = await cli(['--json', 'keys', 'create', '--client', 'alice', '--team', 'support', '--routes', 'support-agent', '--budget', '50/month']);
  assert.equal(r.code, 0, r.stdout);
  const key = JSON.parse(r.stdout);
  assert.equal(key.team, 'support');
  assert.equal(await status(key.secret), 200);
  r = await cli(['teams', 'list']);
  assert.equal(r.code, 0);
  assert.match(r.stdout, /^ID\s+ROUTES\s+RPM\s+SPEND_USD\s+BUDGET\s+KEYS$/m);
  assert.match(r.stdout, /^support\s+support-agent\s+100\s+\S+\s+50(\.0)?\/month\s+1$/m);
  r = await cli(['--json', 'teams', 'update', 'support', '--rpm', '200']);
  assert.equal(r.code, 0);
  assert.equal(JSON.parse(r.stdout).rpm, 200);
  r = await cli(['--json', 'teams', 'show', 'support']);
  assert.deepEqual(JSON.parse(r.stdout).keys, [key.id]);
  r = await cli(['teams', 'delete', 'support']);
  assert.equal(r.code, 1, 'a team with a live key is not deleted');
  assert.match(r.stdout, /team_in_use/);
  assert.equal((await cli(['keys', 'revoke', key.id])).code, 0);
  assert.equal((await cli(['teams', 'delete', 'support'])).code, 0);
  r = await cli(['--json', 'audit', '--subject', 'team:support']);
  assert.deepEqual(JSON.parse(r.stdout).entries.map((e) => e.action), ['team.create', 'team.update', 'team.delete']);
});

test('exit codes: refused 1, unreachable 1, bad arguments 2; the key from the environment', async () => {
  let r = await cli(['keys', 'list'], { key: 'wrong-key-0123456789' });
  assert.equal(r.code, 1);
  assert.match(r.stdout, /error: .*invalid_admin_key/);
  r = await cli(['keys', 'show', 'key_0000000000000000']);
  assert.equal(r.code, 1);
  r = await cli(['keys', 'frobnicate']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /usage: bascule admin/);
  r = await cli(['teams', 'show', 'no-such-team']);
  assert.equal(r.code, 1);
  assert.match(r.stdout, /error: .*team_not_found/);
  r = await cli(['teams', 'frobnicate', 'x']);
  assert.equal(r.code, 2);
  r = await cli(['keys', 'list'], { key: null, env: { BASCULE_ADMIN_KEY: ADMIN } });
  assert.equal(r.code, 0);
  r = await new Promise((resolve) =>
    execFile(gatewayBinary(), ['admin', '--url', 'http://127.0.0.1:1', '--key', ADMIN, 'keys', 'list'],
      { timeout: 20000 }, (err, stdout, stderr) => resolve({ code: err ? err.code : 0, stderr })));
  assert.equal(r.code, 1);
  assert.match(r.stderr, /bascule admin: /);
});
