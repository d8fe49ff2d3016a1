// SPDX-License-Identifier: MIT
// tls-streams.mjs -- RSS per held stream over an https:// upstream: bascule (one worker) in
// front of a Node TLS upstream that answers every streaming chat with its SSE head and one
// event, then holds the stream open. N streams are opened through bascule and held; the
// process's RSS growth over the held streams, divided by N, is the cost of one (its client
// connection, the router's request, the upstream transfer, its TLS connection).
//
//   node bench/tls-streams.mjs [N=1000] [builtin|curl|plain|nginx]
//   (plain: the builtin client on an http:// upstream, the same answers: what TLS adds;
//   nginx: nginx, one worker, proxy_pass https:// with verification, proxy_buffering off,
//   its worker's RSS measured the same way)
//   TLS_MAX=TLSv1.2                     caps the upstream's TLS version (default: 1.3)
//   BASCULE_BIN=build/bascule
//
// Loopback only; bounded (every wait has a deadline); every process it starts is ended by
// PID at exit.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import http from 'node:http';
import https from 'node:https';
import { spawn, spawnSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';

const N = Number(process.argv[2] || 1000);
const mode = process.argv[3] || 'builtin';
const plain = mode === 'plain';
const useNginx = mode === 'nginx';
const client = plain ? 'builtin' : mode;
const bin = process.env.BASCULE_BIN || path.join(path.dirname(new URL(import.meta.url).pathname), '..', 'build', 'bascule');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bascule-tls-streams-'));
const cert = path.join(dir, 'ca.pem');
const key = path.join(dir, 'key.pem');
const r = spawnSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
  '-days', '1', '-subj', '/CN=bench', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost', '-addext',
  'basicConstraints=critical,CA:TRUE', '-keyout', key, '-out', cert], { encoding: 'utf8', timeout: 20000 });
if (r.status !== 0) throw new Error(`openssl: ${r.stderr}`);

const event = `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm',
  choices: [{ index: 0, delta: { role: 'assistant', content: 'first' }, finish_reason: null }] })}\n\n`;
const held = new Set();
const onRequest = (req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(event);
    held.add(res);
    res.on('close', () => held.delete(res));
  });
};
const up = plain ? http.createServer(onRequest)
  : https.createServer({ cert: fs.readFileSync(cert), key: fs.readFileSync(key), ...(process.env.TLS_MAX ? { maxVersion: process.env.TLS_MAX } : {}) }, onRequest);
up.keepAliveTimeout = 0;
await new Promise((ok) => up.listen(0, '127.0.0.1', ok));
const upPort = up.address().port;

const gwPort = await new Promise((ok) => {
  const s = http.createServer().listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => ok(p)); });
});
fs.writeFileSync(path.join(dir, 'bascule.yaml'), `listen: "127.0.0.1:${gwPort}"
workers: 1
http_client: ${client}
log: { level: warn }
limits: { max_connections: ${N + 100} }
providers:
  up:
    kind: openai_compatible
    base_url: "${plain ? 'http' : 'https'}://127.0.0.1:${upPort}/v1"
    keys: ["k"]
    health: { probe: none }
    max_concurrency: ${N + 100}
    tls: { ca_file: "${cert}" }
targets:
  m@up: { provider: up, model: m }
routes:
  m: { primary: [m@up] }
`);
fs.writeFileSync(path.join(dir, 'nginx.conf'), `daemon off;
master_process on;
worker_processes 1;
worker_rlimit_nofile ${4 * N + 1000};
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections ${2 * N + 500}; }
http {
    access_log off;
    client_body_temp_path ${dir}/client_body;
    proxy_temp_path ${dir}/proxy;
    upstream llm { server 127.0.0.1:${upPort}; keepalive 64; }
    server {
        listen 127.0.0.1:${gwPort};
        location / {
            proxy_pass https://llm;
            proxy_ssl_verify on;
            proxy_ssl_trusted_certificate ${cert};
            proxy_ssl_name localhost;
            proxy_ssl_session_reuse on;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
        }
    }
}
`);
const gw = useNginx
  ? spawn('nginx', ['-c', path.join(dir, 'nginx.conf'), '-p', dir], { stdio: ['ignore', 'ignore', 'ignore'] })
  : spawn(bin, ['--config', path.join(dir, 'bascule.yaml')], { stdio: ['ignore', 'ignore', 'ignore'] });
const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
const streams = [];
// The process that holds the streams: bascule itself, or nginx's one worker.
const holder = () => (useNginx
  ? Number(fs.readFileSync(`/proc/${gw.pid}/task/${gw.pid}/children`, 'utf8').trim().split(/\s+/)[0])
  : gw.pid);
const rss = () => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${holder()}/status`, 'utf8'))[1]);

function open() {
  return new Promise((ok, fail) => {
    const req = http.request({ host: '127.0.0.1', port: gwPort, path: '/v1/chat/completions', method: 'POST', agent,
      headers: { 'content-type': 'application/json' } }, (res) => {
      res.once('data', () => ok());
      res.on('error', () => {});
    });
    req.on('error', fail);
    req.setTimeout(30000, () => fail(new Error('stream timed out')));
    req.end(JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] }));
    // Held: its upstream stream is open at the upstream (the answer's first event came).
    streams.push(req);
  });
}

try {
  for (let i = 0; i < 100; i++) {
    try { await fetch(`http://127.0.0.1:${gwPort}/health/live`); break; } catch { await sleep(50); }
  }
  for (let i = 0; useNginx && i < 100 && !fs.existsSync(`/proc/${gw.pid}/task/${gw.pid}/children`); i++) {
    await sleep(50);
  }
  await Promise.all(Array.from({ length: 20 }, open)); // warm-up: pools, first handshakes
  await sleep(500);
  const before = rss();
  for (let i = 0; i < N; i += 100) await Promise.all(Array.from({ length: Math.min(100, N - i) }, open));
  await sleep(1000);
  const after = rss();
  console.log(JSON.stringify({ mode, streams: N, rss_before_kib: before, rss_after_kib: after,
    kib_per_stream: Math.round(((after - before) / N) * 10) / 10, upstream_streams_held: held.size }));
} finally {
  for (const s of streams) s.destroy();
  gw.kill(useNginx ? 'SIGQUIT' : 'SIGTERM');
  up.closeAllConnections?.();
  up.close();
  fs.rmSync(dir, { recursive: true, force: true });
  setTimeout(() => process.exit(0), 500).unref();
}
