// Secrets never leave the gateway: an upstream that quotes the credential it was sent
// (`Incorrect API key provided: sk-...`) in an error message, a typed error, a stream error
// event or a DashScope-style body is answered with the key masked, on openai, anthropic and
// gemini targets, plain and streaming, to OpenAI and Anthropic clients; the gateway's own
// output (access and attempt lines, warnings) never holds a key either. Also: the process
// is not dumpable unless debug.core_dumps says so.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { startSim, startGateway, waitFor, readStream } from '../lib/harness.mjs';

const ADMIN = 'admin-secret-4f1c9e2b7d3a8c60';
const KEYS = {
  oai: 'sk-live-oai-7Hq2Lm9Xw4Rt8Zp1',
  ant: 'sk-ant-api03-Vb6Nc3Kd8Jf2Gh5T',
  gem: 'AIzaSyD-gem-3Qw7Er9Ty2Ui5Op8',
};
// A refused key cools down: the 401 scenarios get providers (and keys) of their own.
const KEYS401 = {
  oai: 'sk-live-oai401-Jm4Kn7Lp2Qr5',
  ant: 'sk-ant-api03-401-Ws8Xv3Yt6Zu1',
  gem: 'AIzaSyD-gem401-Ab3Cd6Ef9Gh2',
};
const HEADER_TOKEN = 'hdr-token-9a8b7c6d5e4f3a2b';
const SECRETS = [ADMIN, HEADER_TOKEN, ...Object.values(KEYS), ...Object.values(KEYS401)];
// What a careless upstream says: every secret, and one cut short at the end.
const LEAK = `Incorrect API key provided: ${KEYS.oai}; ${KEYS.ant}; ${KEYS.gem}; admin ${ADMIN}; ` +
  `header Bearer ${HEADER_TOKEN}; ${Object.values(KEYS401).join(' ')}; cut ${KEYS.oai.slice(0, 14)}`;
let requests = 0; // how many went through the gateway: each writes one access line
let sim, gw;

function config(simUrl) {
  return `listen: "127.0.0.1:{{PORT}}"
workers: 2
log: { level: info, format: json }
admin: { key: "${ADMIN}" }
providers:
  oai:
    kind: openai
    base_url: "${simUrl}/v1"
    keys: ["${KEYS.oai}"]
    headers: { Authorization-Extra: "Bearer ${HEADER_TOKEN}" }
    health: { probe: none }
  ant: { kind: anthropic, base_url: "${simUrl}/anthropic/v1", keys: ["${KEYS.ant}"], health: { probe: none } }
  gem: { kind: gemini, base_url: "${simUrl}/v1beta", keys: ["${KEYS.gem}"], health: { probe: none } }
  oai401: { kind: openai, base_url: "${simUrl}/v1", keys: ["${KEYS401.oai}"], health: { probe: none } }
  ant401: { kind: anthropic, base_url: "${simUrl}/anthropic/v1", keys: ["${KEYS401.ant}"], health: { probe: none } }
  gem401: { kind: gemini, base_url: "${simUrl}/v1beta", keys: ["${KEYS401.gem}"], health: { probe: none } }
targets:
  t-oai: { provider: oai, model: sec-oai, capabilities: [text, streaming] }
  t-ant: { provider: ant, model: sec-ant, capabilities: [text, streaming] }
  t-gem: { provider: gem, model: sec-gem, capabilities: [text, streaming] }
  t-oai401: { provider: oai401, model: sec-oai401, capabilities: [text, streaming] }
  t-ant401: { provider: ant401, model: sec-ant401, capabilities: [text, streaming] }
  t-gem401: { provider: gem401, model: sec-gem401, capabilities: [text, streaming] }
routes:
  oai: { primary: [t-oai], envelope: { max_attempts: 1 } }
  ant: { primary: [t-ant], envelope: { max_attempts: 1 } }
  gem: { primary: [t-gem], envelope: { max_attempts: 1 } }
  oai401: { primary: [t-oai401], envelope: { max_attempts: 1 } }
  ant401: { primary: [t-ant401], envelope: { max_attempts: 1 } }
  gem401: { primary: [t-gem401], envelope: { max_attempts: 1 } }
`;
}

before(async () => {
  sim = await startSim();
  gw = await startGateway({ config: config(sim.url) });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

function assertNoSecret(text, what) {
  for (const s of SECRETS) {
    assert.ok(!text.includes(s), `${what} holds the secret ${s}:\n${text}`);
    assert.ok(!text.includes(s.slice(0, 14)), `${what} holds a prefix of ${s}:\n${text}`);
  }
}

async function chat(route, stream) {
  requests++;
  const res = await fetch(`${gw.base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer client-key' },
    body: JSON.stringify({ model: route, stream, messages: [{ role: 'user', content: 'hi' }] }),
  });
  return { status: res.status, text: (await readStream(res)).text };
}

async function messages(route, stream) {
  requests++;
  const res = await fetch(`${gw.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': 'client-key', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: route, stream, max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }),
  });
  return { status: res.status, text: (await readStream(res)).text };
}

const MODELS = { oai: 'sec-oai', ant: 'sec-ant', gem: 'sec-gem' };
const MODELS401 = { oai: 'sec-oai401', ant: 'sec-ant401', gem: 'sec-gem401' };

for (const route of ['oai', 'ant', 'gem']) {
  for (const stream of [false, true]) {
    const mode = stream ? 'streaming' : 'plain';

    test(`${route}, ${mode}: a 400 quoting the keys reaches the client masked`, async () => {
      await sim.setModel(MODELS[route], { script: [{ action: 'status', status: 400, message: LEAK, times: 2 }] });
      for (const call of [chat, messages]) {
        const { status, text } = await call(route, stream);
        assert.equal(status, 400, text);
        assertNoSecret(text, `${call.name} ${route} ${mode}`);
        // The message is forwarded (a client fault), so the mask shows.
        assert.match(text, /Incorrect API key provided: \[REDACTED\]/);
      }
    });

    test(`${route}, ${mode}: a 401 quoting the key leaks nothing`, async () => {
      await sim.setModel(MODELS401[route], { script: [{ action: 'status', status: 401, message: LEAK }], repeat: true });
      for (const call of [chat, messages]) {
        const { status, text } = await call(`${route}401`, stream);
        assert.ok(status >= 400, text);
        assertNoSecret(text, `${call.name} ${route} ${mode}`);
      }
    });
  }
}

test('a custom error body (DashScope-like top-level message) is masked too', async () => {
  await sim.setModel('sec-oai', {
    script: [{ action: 'status', status: 400, body: { code: 'InvalidApiKey', message: LEAK } }],
  });
  const { status, text } = await chat('oai', false);
  assert.equal(status, 400, text);
  assertNoSecret(text, 'custom body');
});

test('an error event after the first byte is masked in the stream', async () => {
  for (const route of ['oai', 'ant', 'gem']) {
    await sim.setModel(MODELS[route], { script: [{ action: 'error_200', after_events: 6, message: LEAK, times: 2 }] });
    for (const call of [chat, messages]) {
      const { text } = await call(route, true);
      assertNoSecret(text, `${call.name} ${route} stream error event`);
      assert.match(text, /\[REDACTED\]/, `${call.name} ${route}: the error event is forwarded`);
    }
  }
  // Plain (non-stream) errors hidden in a 200 as well.
  for (const route of ['oai', 'ant', 'gem']) {
    await sim.setModel(MODELS[route], { script: [{ action: 'error_200', message: LEAK }] });
    const { text } = await chat(route, false);
    assertNoSecret(text, `${route} error in a 200`);
  }
});

test("the gateway's own output holds no key", async () => {
  // Every request above wrote its access and attempt lines; wait for the last ones.
  await waitFor(() => gw.accessLog().filter((l) => l.type === 'access').length >= requests, {
    what: 'the access lines of every request',
  });
  assertNoSecret(gw.logs(), 'stdout/stderr');
});

test('the process is not dumpable by default, and says so at start', async () => {
  assert.match(gw.logs(), /core dumps off \(not dumpable\)/);
  // Non-dumpable processes have their /proc files owned by root; visible when we are not.
  if (process.getuid && process.getuid() !== 0) {
    assert.equal(statSync(`/proc/${gw.proc.pid}/status`).uid, 0);
  }
  assert.ok(readFileSync(`/proc/${gw.proc.pid}/status`, 'utf8').includes('bascule'));
});

test('debug.core_dumps: true keeps the process dumpable', async () => {
  const gw2 = await startGateway({ config: `debug: { core_dumps: true }\n${config(sim.url)}` });
  try {
    assert.match(gw2.logs(), /core dumps allowed \(debug\.core_dumps\)/);
    if (process.getuid && process.getuid() !== 0) {
      assert.equal(statSync(`/proc/${gw2.proc.pid}/status`).uid, process.getuid());
    }
  } finally {
    await gw2.stop();
  }
});
