-- SPDX-License-Identifier: MIT
-- chat.lua -- wrk script: POST /v1/chat/completions with a fixed JSON body.
--
--   wrk -s bench/chat.lua URL -- BODY_FILE [DELAY_MS] [Header: value ...]
--
-- BODY_FILE is the request body (bench/request.json). DELAY_MS, when > 0, paces each
-- connection: wrk waits that long after a response before sending the next request
-- (a moderate, steady load instead of a closed loop as fast as possible). Extra
-- arguments of the form "Name: value" are added as request headers (Portkey's routing
-- headers). done() prints one line "BENCH_RESULT {json}" with the figures bench.mjs
-- reads; latencies are in microseconds.

local delay_ms = 0

function init(args)
  local path = args[1]
  if path == nil then
    error("chat.lua: usage: -- BODY_FILE [DELAY_MS] [Header: value ...]")
  end
  local f = assert(io.open(path, "rb"))
  wrk.body = f:read("*a")
  f:close()
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Authorization"] = "Bearer sk-bench-not-a-real-key"
  local first_header = 2
  if args[2] ~= nil and args[2]:match("^%d+$") then
    delay_ms = tonumber(args[2])
    first_header = 3
  end
  for i = first_header, #args do
    local name, value = args[i]:match("^([^:]+):%s*(.*)$")
    if name == nil then
      error("chat.lua: bad header argument: " .. args[i])
    end
    wrk.headers[name] = value
  end
  -- wrk decides whether a script paces requests by looking for a global delay() after
  -- init() has run, so it is defined only when a delay was asked for.
  if delay_ms > 0 then
    function delay()
      return delay_ms
    end
  end
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_RESULT {"requests":%d,"duration_us":%d,"bytes":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"min":%d,"mean":%.1f,"max":%d,"stdev":%.1f,' ..
    '"p50":%d,"p90":%d,"p99":%d,"p999":%d}}\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency.min, latency.mean, latency.max, latency.stdev,
    latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency:percentile(99.9)))
end
