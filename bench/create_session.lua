-- POST /v1/agents/sessions with environment none. With BENCH_AGENT_ID set the
-- session snapshots that saved agent; otherwise it carries an inline agent.
dofile(os.getenv("BENCH_DIR") .. "/report.lua")

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local agent_id = os.getenv("BENCH_AGENT_ID")
if agent_id and agent_id ~= "" then
   wrk.body = '{"environment":{"type":"none"},"agent_id":"' .. agent_id .. '","metadata":{"bench":"wrk"}}'
else
   wrk.body = '{"environment":{"type":"none"},"agent":{"model":"gpt-bench","instructions":"Benchmark."},"metadata":{"bench":"wrk"}}'
end
