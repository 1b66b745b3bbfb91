-- Shared by the wrk scripts in this directory: the Authorization header and a
-- one-line machine-readable summary that scripts/bench-http turns into a table.
-- Loaded with dofile(); BENCH_DIR and REBYTE_KEY come from the environment.

local key = os.getenv("REBYTE_KEY") or error("REBYTE_KEY is not set")
wrk.headers["Authorization"] = "Bearer " .. key
wrk.headers["OpenAI-Beta"] = "agents=v1"

function done(summary, latency, requests)
   local e = summary.errors
   io.write(string.format(
      "BENCH requests=%d duration_us=%d rps=%.1f p50_us=%d p90_us=%d p99_us=%d max_us=%d non2xx=%d socket_errors=%d\n",
      summary.requests, summary.duration, summary.requests / (summary.duration / 1e6),
      latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
      e.status, e.connect + e.read + e.write + e.timeout))
end
