// SPDX-License-Identifier: MIT
// Headless Chromium driven over the DevTools protocol, for tests of the gateway's pages: a
// private profile in a temp dir, a free loopback port, one page; evaluate() runs an
// expression in the page (promises awaited), screenshot() writes a PNG. Stopped by
// Browser.close, then by PID; never by name.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { WebSocket } from 'undici';
import { freePort, waitFor } from './harness.mjs';

export async function startChromium(url) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bascule-chromium-'));
  const port = await freePort();
  const child = spawn('chromium', ['--headless=new', '--no-sandbox', '--disable-gpu', '--no-first-run',
    '--disable-extensions', '--disable-background-networking', `--user-data-dir=${dir}`,
    `--remote-debugging-port=${port}`, '--remote-allow-origins=*', '--window-size=1280,900', url],
  { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  const target = await waitFor(async () => {
    try {
      const list = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json();
      return list.find((t) => t.type === 'page' && t.url.startsWith(url.split('#')[0]));
    } catch {
      return null;
    }
  }, { timeoutMs: 30000, everyMs: 100, what: 'the Chromium page' });
  const ws = new WebSocket(target.webSocketDebuggerUrl);
  await new Promise((resolve, reject) => { ws.onopen = resolve; ws.onerror = reject; });
  let next = 1;
  const pending = new Map();
  ws.onmessage = (ev) => {
    const m = JSON.parse(ev.data);
    if (m.id && pending.has(m.id)) {
      pending.get(m.id)(m);
      pending.delete(m.id);
    }
  };
  const send = (method, params = {}) => new Promise((resolve, reject) => {
    const id = next++;
    const timer = setTimeout(() => { pending.delete(id); reject(new Error(`${method} timed out`)); }, 20000);
    pending.set(id, (m) => { clearTimeout(timer); m.error ? reject(new Error(m.error.message)) : resolve(m.result); });
    ws.send(JSON.stringify({ id, method, params }));
  });
  return {
    send,
    get stderr() { return stderr; },
    async evaluate(expression) {
      const r = await send('Runtime.evaluate', { expression, awaitPromise: true, returnByValue: true });
      if (r.exceptionDetails) throw new Error(`page: ${r.exceptionDetails.exception?.description ?? r.exceptionDetails.text}`);
      return r.result.value;
    },
    async screenshot(file) {
      const r = await send('Page.captureScreenshot', { format: 'png' });
      writeFileSync(file, Buffer.from(r.data, 'base64'));
    },
    async stop() {
      try { await send('Browser.close'); } catch { /* already gone */ }
      ws.close();
      const t = setTimeout(() => { try { process.kill(child.pid, 'SIGKILL'); } catch { /* gone */ } }, 5000);
      await exited;
      clearTimeout(t);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
