-- GET /v1/agents/sessions/{id}: the URL given to wrk names one existing session.
dofile(os.getenv("BENCH_DIR") .. "/report.lua")
