// SPDX-License-Identifier: MIT
// profiles_cn.test.mjs -- the doubao (Volcengine Ark) and ernie (Baidu Qianfan) error
// dialects end to end, and 2xx answers that are no completion (an error hidden in a 200,
// a JSON body instead of a stream, a stream without a single completion chunk): each is
// classified by its content and fails over, or stops when the content is refused; none is
// ever relayed as a success. Every case has its own provider so cooled keys and breakers
// of one case never touch another.
import { test, before, after } from '../lib/bounded_test.mjs';
import assert from 'node:assert/strict';
import { startSim, startGateway, waitFor } from '../lib/harness.mjs';

let sim, gw;

const arkErr = (code, message, type) => ({ error: { code, message, param: '', type } });

// name -> {profile, step (the primary's answer, every time), stream, want: 'failover' | status}
const CASES = {
  ark_rpm: { profile: 'doubao', step: { status: 429, body: arkErr('RateLimitExceeded.EndpointRPMExceeded', 'The request has exceeded the rate limit (RPM) of the endpoint.', 'TooManyRequests') } },
  ark_tpm: { profile: 'doubao', step: { status: 429, body: arkErr('RateLimitExceeded.EndpointTPMExceeded', 'The request has exceeded the rate limit (TPM) of the endpoint.', 'TooManyRequests') } },
  ark_overloaded: { profile: 'doubao', step: { status: 429, body: arkErr('ServerOverloaded', 'The service is currently unable to handle additional requests due to server overload.', 'TooManyRequests') } },
  ark_closed: { profile: 'doubao', step: { status: 400, body: arkErr('InvalidEndpoint.ClosedEndpoint', 'The request targeted an endpoint that is currently closed or temporarily unavailable.', 'BadRequest') } },
  ark_overdue: { profile: 'doubao', step: { status: 403, body: arkErr('AccountOverdueError', 'The request failed because your account has an overdue balance.', 'Forbidden') } },
  ark_auth: { profile: 'doubao', step: { status: 401, body: arkErr('AuthenticationError', 'The API key or AK/SK in the request is missing or invalid.', 'Unauthorized') } },
  ark_notfound: { profile: 'doubao', step: { status: 404, body: arkErr('InvalidEndpointOrModel.NotFound', 'The model or endpoint ep-x does not exist or you do not have access to it.', 'NotFound') } },
  ark_risk_in: { profile: 'doubao', want: 400, step: { status: 400, body: arkErr('InputTextRiskDetection', 'The request could not be processed because the input text includes sensitive content.', 'BadRequest') } },
  ark_risk_out: { profile: 'doubao', want: 400, step: { status: 400, body: arkErr('OutputTextRiskDetection', 'The request could not be processed because the output text includes sensitive content.', 'BadRequest') } },
  ark_risk_img: { profile: 'doubao', want: 400, step: { status: 400, body: arkErr('InputImageRiskDetection', 'The request could not be processed because the input image includes sensitive content.', 'BadRequest') } },
  ark_rpm_stream: { profile: 'doubao', stream: true, step: { status: 429, body: arkErr('RateLimitExceeded.EndpointRPMExceeded', 'RPM', 'TooManyRequests') } },
  ernie_rpm: { profile: 'ernie', step: { status: 200, body: { code: 336501, msg: 'Rate limit reached for RPM' } } },
  ernie_tpm: { profile: 'ernie', step: { status: 200, body: { code: 336502, msg: 'Rate limit reached for TPM' } } },
  ernie_rpm_stream: { profile: 'ernie', stream: true, step: { status: 200, body: { code: 336501, msg: 'Rate limit reached for RPM' } } },
  ernie_new_code: { profile: 'ernie', step: { status: 200, body: { code: 'rpm_rate_limit_exceeded', message: 'Rate limit reached for RPM' } } },
  ernie_legacy_qps: { profile: 'ernie', step: { status: 200, body: { error_code: 18, error_msg: 'Open api qps request limit reached' } } },
  ernie_legacy_qps_stream: { profile: 'ernie', stream: true, step: { status: 200, body: { error_code: 18, error_msg: 'Open api qps request limit reached' } } },
  ernie_legacy_daily: { profile: 'ernie', step: { status: 200, body: { error_code: 17, error_msg: 'Open api daily request limit reached' } } },
  ernie_sse_event: { profile: 'ernie', stream: true, step: { status: 200, headers: { 'content-type': 'text/event-stream' }, body: 'data: {"code":336502,"msg":"Rate limit reached for TPM"}\n\n' } },
  compat_throttle: { step: { status: 200, body: { code: 'Throttling.RateQuota', message: 'Requests rate limit exceeded, please try again later.', request_id: 'r-1' } } },
  compat_throttle_stream: { stream: true, step: { status: 200, body: { code: 'Throttling.RateQuota', message: 'Requests rate limit exceeded, please try again later.', request_id: 'r-2' } } },
  compat_json_stream: { stream: true, step: { status: 200, body: { id: 'x', object: 'chat.completion.chunk', created: 1, model: 'm' } } },
  compat_no_completion: { stream: true, step: { status: 200, headers: { 'content-type': 'text/event-stream' }, body: ': keep-alive\n\ndata: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[]}\n\ndata: [DONE]\n\n' } },
  compat_done_only: { stream: true, step: { status: 200, headers: { 'content-type': 'text/event-stream' }, body: 'data: [DONE]\n\n' } },
};

before(async () => {
  sim = await startSim();
  const prov = [], tgt = [], rt = [];
  prov.push(`  backup: { kind: openai_compatible, base_url: "${sim.base}", keys: ["sk-backup"], health: { probe: none } }`);
  for (const [name, c] of Object.entries(CASES)) {
    const profile = c.profile ? `profile: ${c.profile}, ` : '';
    prov.push(`  p-${name}: { kind: openai_compatible, ${profile}base_url: "${sim.base}", keys: ["sk-${name}"], health: { probe: none } }`);
    tgt.push(`  t-${name}: { provider: p-${name}, model: m-${name} }`);
    tgt.push(`  eq-${name}: { provider: backup, model: eq-${name} }`);
    rt.push(`  r-${name}: { primary: [t-${name}], equivalent: [eq-${name}] }`);
  }
  gw = await startGateway({
    config: `listen: "127.0.0.1:{{PORT}}"
providers:
${prov.join('\n')}
targets:
${tgt.join('\n')}
routes:
${rt.join('\n')}
`,
  });
  for (const [name, c] of Object.entries(CASES))
    await sim.setModel(`m-${name}`, { repeat: true, script: [{ action: 'status', ...c.step }] });
});

after(async () => {
  await gw?.stop();
  await sim?.stop();
});

async function chat(name, stream) {
  const res = await fetch(`${gw.base}/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: `r-${name}`, stream: !!stream, messages: [{ role: 'user', content: 'hi' }] }),
  });
  return { res, text: await res.text() };
}

for (const [name, c] of Object.entries(CASES)) {
  const want = c.want ?? 'failover';
  test(`${name}: ${want === 'failover' ? 'fails over to the equivalent target' : `stops with ${want}`}`, async () => {
    const { res, text } = await chat(name, c.stream);
    assert.ok(await sim.calls(`m-${name}`) >= 1, 'the primary was asked');
    if (want === 'failover') {
      assert.equal(res.status, 200, text);
      assert.equal(res.headers.get('x-bascule-target'), `eq-${name}`, text);
      if (c.stream) {
        assert.match(res.headers.get('content-type'), /^text\/event-stream/);
        assert.match(text, /"content":"Hello/);
        assert.match(text, /data: \[DONE\]/);
        assert.doesNotMatch(text, /336501|336502|Throttling|error_code|keep-alive/);
      } else {
        const body = JSON.parse(text);
        assert.equal(body.choices[0].message.role, 'assistant');
        assert.equal(await sim.calls(`eq-${name}`), 1);
      }
      return;
    }
    assert.equal(res.status, want, text);
    assert.equal(JSON.parse(text).error.code, 'content_policy_violation');
    assert.equal(await sim.calls(`eq-${name}`), 0, 'no failover after a refusal of the content');
    assert.equal(await sim.calls(`m-${name}`), 1, 'no replay either');
  });
}

// The attempt log names the kind each answer was read as (what the breaker and the key
// cooling act on), so a rate limit hidden in a 200 is a rate limit, not "unknown".
test('kinds in the access log: hidden limits read as rate limits, closed endpoint as overload', async () => {
  const want = {
    'r-ernie_rpm': 'rate_limited', 'r-ernie_rpm_stream': 'rate_limited', 'r-ernie_legacy_daily': 'quota_exhausted',
    'r-compat_throttle': 'rate_limited', 'r-compat_throttle_stream': 'rate_limited',
    'r-ark_closed': 'overloaded', 'r-ark_overdue': 'quota_exhausted', 'r-ark_overloaded': 'overloaded',
    'r-compat_no_completion': 'unknown', 'r-ernie_sse_event': 'rate_limited',
  };
  const line = (route) => gw.accessLog().find((l) => l.type === 'access' && l.route === route);
  await waitFor(() => Object.keys(want).every(line), { what: 'access lines' });
  for (const [route, kind] of Object.entries(want)) {
    const first = line(route).attempt_log[0];
    assert.equal(first.target, `t-${route.slice(2)}`, route);
    assert.equal(first.kind, kind, `${route}: ${JSON.stringify(line(route).attempt_log)}`);
  }
});
