// SPDX-License-Identifier: MIT
// The operator console (GET /console, docs/internals/keys.md) in headless Chromium: sign in
// with the admin key, see the keys with spend against budget, create a key (its secret shown
// once), rotate it, revoke it (two clicks), read the audit trail; a read admin key sees the
// lists and its writes are refused. Every change is checked against the gateway itself.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startSim, startGateway, waitFor } from '../lib/harness.mjs';
import { startChromium } from '../lib/chromium.mjs';

const ADMIN = 'admin-key-0123456789abcdef';
const READER = 'reader-key-0123456789abcdef';
const dir = mkdtempSync(path.join(os.tmpdir(), 'bascule-console-'));
let sim, gw, browser;

before(async () => {
  sim = await startSim();
  await sim.setModel('con-model', { tokens: 2 });
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
workers: 1
admin:
  key: "${ADMIN}"
  keys: [{ id: viewer, key: "${READER}", role: read }]
store: { kind: sqlite, path: "${path.join(dir, 'state.db')}" }
providers:
  sim: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-s"], health: { probe: none } }
targets:
  t1:
    provider: sim
    model: con-model
    price: { input_per_mtok: 0, output_per_mtok: 1000000 }
routes:
  chat: { primary: [t1] }
`,
  });
  browser = await startChromium(`${gw.url}/console`);
});

after(async () => {
  await browser?.stop();
  await gw?.stop();
  await sim?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function status(key) {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: 'chat', messages: [{ role: 'user', content: 'hi' }] }),
  });
  await res.arrayBuffer();
  return res.status;
}

const page = (expr) => browser.evaluate(expr);
const until = (expr, what) => waitFor(async () => page(expr), { timeoutMs: 10000, everyMs: 50, what });
const rowText = (id) => `(document.querySelector('tr[data-id="${id}"]')?.textContent ?? '')`;

async function signIn(key) {
  await until(`document.readyState==='complete' && !!document.getElementById('key')`, 'the console page');
  await page(`document.getElementById('key').value=${JSON.stringify(key)};document.body.dataset.ready='';
    document.getElementById('signin').click();true`);
  await until(`document.body.dataset.ready==='keys'`, 'the keys view');
}

test('keys, spend against budget, create, rotate, revoke and the audit trail in Chromium', async () => {
  // A key made through the API, with some spend, is listed.
  const made = await (await fetch(`${gw.url}/admin/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}` },
    body: JSON.stringify({ client: 'preexisting', routes: ['chat'], budget: '10/month' }),
  })).json();
  assert.equal(await status(made.secret), 200); // $2
  // A client name that is HTML is shown as text, never run.
  const xss = '<img src=x onerror="window.__pwned=1">';
  assert.equal((await fetch(`${gw.url}/admin/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}` },
    body: JSON.stringify({ client: xss, routes: ['chat'], metadata: { note: xss } }),
  })).status, 201);
  await signIn(ADMIN);
  assert.equal(await page(`window.__pwned === undefined && [...document.querySelectorAll('#keys td')].some((td) => td.textContent === ${JSON.stringify(xss)})`), true);
  const row = await until(`(${rowText(made.id)}).includes('$2.0000') && ${rowText(made.id)}`, 'spend shown');
  assert.match(row, /preexisting.*api.*active.*chat.*\$2\.0000.*\$10\.0000\/month/);

  // Create through the form: the secret is shown once and works.
  await page(`const f=document.getElementById('create');f.client.value='console-made';f.routes.value='chat';
    f.budget.value='5/day';f.querySelector('button').click();true`);
  const shown = await until(`/bsk_[0-9a-f]{48}/.test(document.getElementById('secret').textContent) &&
    document.getElementById('secret').textContent`, 'the new secret');
  const id = /(key_[0-9a-f]{16})/.exec(shown)[1];
  const secret = /(bsk_[0-9a-f]{48})/.exec(shown)[1];
  assert.match(shown, /shown once/);
  assert.equal(await status(secret), 200);
  await until(`(${rowText(id)}).includes('console-made')`, 'the new row');
  await browser.screenshot(path.join(process.env.BASCULE_SCREENSHOT_DIR ?? dir, 'console.png'));

  // Rotate: a new secret; the old one keeps its grace period. The rotation redraws the list
  // after it shows the secret: wait for that redraw, or a click below lands on a button the
  // redraw then replaces (Revoke's first click would be lost).
  await page(`document.body.dataset.ready='';document.querySelector('button[data-act="rotate"][data-id="${id}"]').click();true`);
  const rotated = await until(`(t=>{const m=/bsk_[0-9a-f]{48}/.exec(t);return m&&m[0]!==${JSON.stringify(secret)}&&m[0]})(document.getElementById('secret').textContent)`, 'the rotated secret');
  await until(`document.body.dataset.ready==='keys'`, 'the list redrawn after the rotation');
  assert.equal(await status(rotated), 200);

  // Revoke takes two clicks; then the key is refused.
  await page(`document.querySelector('button[data-act="revoke"][data-id="${id}"]').click();true`);
  assert.equal(await status(rotated), 200, 'one click does not revoke');
  await page(`document.querySelector('button[data-act="revoke"][data-id="${id}"]').click();true`);
  await until(`(${rowText(id)}).includes('revoked')`, 'the revoked row');
  assert.equal(await status(rotated), 401);
  assert.equal(await status(secret), 401);

  // The list never shows a secret once the page is reloaded.
  await page(`location.reload();true`);
  await until(`document.body && document.body.dataset.ready==='keys'`, 'the reloaded keys view');
  const html = await page(`document.documentElement.outerHTML`);
  for (const s of [secret, rotated, made.secret, ADMIN]) assert.ok(!html.includes(s), 'a secret in the page');

  // Audit: who changed what.
  await page(`document.querySelector('nav button[data-view="audit"]').click();true`);
  await until(`document.body.dataset.ready==='audit'`, 'the audit view');
  const audit = await page(`document.getElementById('audit').textContent`);
  for (const a of ['key.create', 'key.rotate', 'key.revoke']) assert.ok(audit.includes(a), a);
  assert.ok(audit.includes(id));
  await page(`document.querySelector('nav button[data-view="keys"]').click();true`);
});

test('teams in Chromium: create, spend against budget, a refused delete, delete', async () => {
  await signIn(ADMIN);
  await page(`document.querySelector('nav button[data-view="teams"]').click();true`);
  await until(`document.body.dataset.ready==='teams'`, 'the teams view');
  await page(`{const f=document.getElementById('create-team');f.team.value='console-team';f.routes.value='chat';
    f.budget.value='9/month';f.querySelector('button').click()}true`);
  await until(`(${rowText('console-team')}).includes('$9.0000/month')`, 'the new team');
  const k = await (await fetch(`${gw.url}/admin/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}` },
    body: JSON.stringify({ client: 'teamed', team: 'console-team', routes: ['chat'] }),
  })).json();
  assert.equal(await status(k.secret), 200); // $2 to the team
  await page(`document.querySelector('nav button[data-view="keys"]').click();true`);
  await until(`document.body.dataset.ready==='keys'`, 'the keys view');
  await page(`document.querySelector('nav button[data-view="teams"]').click();true`);
  const row = await until(`document.body.dataset.ready==='teams' && (${rowText('console-team')}).includes('$2.0000') && ${rowText('console-team')}`, 'the team spend');
  assert.match(row, /console-team.*chat.*key_[0-9a-f]{16}.*\$2\.0000.*\$9\.0000\/month/);
  // Delete takes two clicks and is refused while a live key is in the team.
  const del = `document.querySelector('button[data-act="delete"][data-id="console-team"]').click();true`;
  await page(del);
  await page(del);
  await until(`/live keys/.test(document.getElementById('msg').textContent)`, 'the refusal');
  await fetch(`${gw.url}/admin/keys/${k.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${ADMIN}` } });
  await page(`document.querySelector('nav button[data-view="keys"]').click();true`);
  await until(`document.body.dataset.ready==='keys'`, 'the keys view');
  await page(`document.querySelector('nav button[data-view="teams"]').click();true`);
  await until(`document.body.dataset.ready==='teams' && !!document.querySelector('button[data-act="delete"][data-id="console-team"]')`, 'the teams view again');
  await page(del);
  await page(del);
  await until(`!document.querySelector('tr[data-id="console-team"]')`, 'the deleted team');
  await page(`document.querySelector('nav button[data-view="keys"]').click();true`);
  await until(`document.body.dataset.ready==='keys'`, 'the keys view');
});

test('a read admin key sees the console and its writes are refused', async () => {
  await signIn(READER);
  await page(`const f=document.getElementById('create');f.client.value='nope';f.routes.value='chat';
    f.querySelector('button').click();true`);
  const msg = await until(`document.getElementById('msg').textContent`, 'the refusal');
  assert.match(msg, /may only read/);
  const keys = await (await fetch(`${gw.url}/admin/keys`, { headers: { authorization: `Bearer ${ADMIN}` } })).json();
  assert.ok(!keys.keys.some((k) => k.client === 'nope'));
});

test('the console page is served with a restrictive policy and holds no data', async () => {
  const res = await fetch(`${gw.url}/console`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-security-policy'), /frame-ancestors 'none'/);
  const text = await res.text();
  assert.ok(!text.includes('key_') && !text.includes(ADMIN));
});
