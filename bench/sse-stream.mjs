// SPDX-License-Identifier: MIT
// sse-stream.mjs -- one streaming chat request as the benchmark's clients see it: the time
// to the first content token, and what the rest of the stream does. Used by streams.mjs for
// the held streams and by probes.mjs (a worker thread) for the probe pairs.

import http from 'node:http';
import { performance } from 'node:perf_hooks';

const MESSAGES = [
  { role: 'system', content: 'You are a concise assistant.' },
  { role: 'user', content: 'Write a short paragraph about suspension bridges.' },
];

function body(model) {
  // max_tokens above any stream length the benchmark asks of the sim.
  return JSON.stringify({ model, messages: MESSAGES, stream: true, max_tokens: 4096 });
}

/** `data:` lines in a chunk: one per event the gateway relayed (a chunk holds whole lines). */
export function countEvents(chunk) {
  let n = 0;
  for (let i = chunk.indexOf('data:'); i >= 0; i = chunk.indexOf('data:', i + 5)) n++;
  return n;
}

/**
 * One streaming request. `full` parses every event (probes: checks [DONE] and counts
 * content deltas); otherwise parsing stops at the first token and the rest of the stream
 * is only watched for an error event or an early end.
 * `onEvents(n)` hears of the events seen after the first token when `full` is false.
 * Returns { req, st, first: Promise<ttftMs>, done: Promise<result>, close }.
 */
export function openStream(url, model, agent, full, onEvents = () => {}) {
  const u = new URL(url);
  const st = { ttft: null, tokens: 0, sawDone: false, error: null, status: 0, ended: false, closedByUs: false };
  let resolveFirst;
  let resolveDone;
  const first = new Promise((r) => (resolveFirst = r));
  const done = new Promise((r) => (resolveDone = r));
  const t0 = performance.now();
  const payload = body(model);
  let buf = '';
  let parsing = true;

  const fail = (msg) => {
    if (!st.error) st.error = msg;
    resolveFirst(null);
  };

  const onEvent = (ev) => {
    let data = '';
    for (const line of ev.split(/\r?\n/)) {
      if (line.startsWith('data:')) data += (data ? '\n' : '') + line.slice(5).trimStart();
    }
    if (!data) return;
    if (data === '[DONE]') {
      st.sawDone = true;
      return;
    }
    let obj;
    try {
      obj = JSON.parse(data);
    } catch {
      fail(`bad SSE data: ${data.slice(0, 80)}`);
      return;
    }
    if (obj.error) {
      fail(`error event: ${JSON.stringify(obj.error).slice(0, 160)}`);
      return;
    }
    const c = obj.choices?.[0]?.delta?.content;
    if (typeof c === 'string' && c.length > 0) {
      st.tokens++;
      if (st.ttft === null) {
        st.ttft = performance.now() - t0;
        resolveFirst(st.ttft);
        if (!full) parsing = false;
      }
    }
  };

  const req = http.request(
    {
      host: u.hostname,
      port: u.port,
      path: u.pathname,
      method: 'POST',
      agent,
      headers: {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(payload),
        authorization: 'Bearer sk-bench-not-a-real-key',
        accept: 'text/event-stream',
      },
    },
    (res) => {
      st.status = res.statusCode;
      st.reused = req.reusedSocket; // false: this request opened its connection
      if (res.statusCode !== 200) fail(`HTTP ${res.statusCode}`);
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        if (!parsing) {
          onEvents(countEvents(chunk));
          if (chunk.includes('data: {"error"')) fail('error event after first token');
          if (chunk.includes('[DONE]')) st.sawDone = true;
          return;
        }
        buf += chunk;
        let i;
        while ((i = buf.search(/\r?\n\r?\n/)) >= 0) {
          const ev = buf.slice(0, i);
          buf = buf.slice(buf[i] === '\r' ? i + 4 : i + 2);
          onEvent(ev);
          if (!parsing) {
            buf = '';
            break;
          }
        }
      });
      res.on('end', () => {
        st.ended = true;
        if (!st.closedByUs) st.endedBeforeClose = true;
        if (st.ttft === null) fail('stream ended before the first token');
        resolveDone(st);
      });
      res.on('error', (e) => {
        if (!st.closedByUs) fail(`response error: ${e.message}`);
        resolveDone(st);
      });
      res.on('close', () => resolveDone(st));
    },
  );
  req.on('error', (e) => {
    if (!st.closedByUs) fail(`request error: ${e.code ?? e.message}`);
    resolveDone(st);
  });
  req.end(payload);
  return { req, st, first, done, close: () => { st.closedByUs = true; req.destroy(); } };
}
