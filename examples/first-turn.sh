#!/usr/bin/env bash
# One turn end to end with nothing but curl (and python3 to print the events):
# a session with an inline agent and a sandbox, its first input streamed as
# server-sent events until the turn ends, then the artifacts the turn wrote to
# $REBYTE_OUTPUT_DIR and their content.
#
#   REBYTE_API_KEY   a key of your server (required; rebyte serve printed one)
#   REBYTE_BASE_URL  default http://127.0.0.1:8787/v1
#   REBYTE_MODEL     default gpt-6-luna
#   REBYTE_INPUT     what to ask
set -euo pipefail
: "${REBYTE_API_KEY:?set REBYTE_API_KEY to a key of your server (rebyte serve prints one on first start)}"
base=${REBYTE_BASE_URL:-http://127.0.0.1:8787/v1}
model=${REBYTE_MODEL:-gpt-6-luna}
input=${REBYTE_INPUT:-Run a command in your sandbox and write hello.txt to your output directory.}
auth=(-H "Authorization: Bearer $REBYTE_API_KEY")
json() { python3 -c 'import json, sys; print(json.dumps(sys.argv[1]))' "$1"; }

# Each event on one line: its type, and what it carries that a person reads;
# the session's id goes to the file named by its argument.
read -r -d '' SHOW_EVENTS <<'PY' || true
import json, sys
session = None
for line in sys.stdin:
    if not line.startswith("data: {"):
        continue  # comments, ids, event names, and the closing `data: [DONE]`
    e = json.loads(line[6:])
    kind, item = e["type"], e.get("item") or {}
    if kind == "agent.session.created":
        session = e["session"]["id"]
        print(f"session {session}, environment {e['session']['environment']['id']}")
    elif kind == "agent.session.turn.output_text.delta":
        print(e["delta"], end="", flush=True)
    elif kind == "agent.session.turn.item.done" and item.get("type") == "command_execution":
        print(f"\n$ {item['command']}  [exit {item.get('exit_code')}]\n{item.get('output') or ''}", end="")
    elif kind == "agent.session.turn.item.done" and item.get("type") == "message" and item.get("role") == "assistant":
        print()
    elif kind in ("agent.session.turn.completed", "agent.session.turn.failed", "agent.session.turn.cancelled"):
        turn = e["turn"]
        error = turn.get("error") or {}
        print(f"turn {turn['status']}" + (f": {error.get('code')}: {error.get('message')}" if error else ""))
    elif kind.startswith("agent.session.environment."):
        print(f"[environment {kind.rsplit('.', 1)[1]}]")
if session:
    open(sys.argv[1], "w").write(session)
PY

# The session and its first turn, streamed until the turn ends.
body="{\"agent\": {\"model\": $(json "$model"), \"instructions\": \"You have a Linux sandbox; use the shell tool.\"},
       \"environment\": {\"type\": \"openai_hosted\"}, \"input\": $(json "$input"), \"stream\": true}"
id_file=$(mktemp)
trap 'rm -f "$id_file"' EXIT
curl -sSfN "${auth[@]}" -H 'Content-Type: application/json' "$base/agents/sessions" -d "$body" | python3 -u -c "$SHOW_EVENTS" "$id_file"
session=$(cat "$id_file")
[ -n "$session" ] || { echo "no session was created" >&2; exit 1; }

# What the turn left in its output directory: the session's artifacts.
artifacts=$(curl -sSf "${auth[@]}" "$base/agents/sessions/$session/artifacts")
ids=$(python3 -c 'import json, sys; [print(a["id"], a["path"]) for a in json.loads(sys.argv[1])["data"]]' "$artifacts")
[ -n "$ids" ] || { echo "the turn produced no artifact"; exit 1; }
while read -r id path; do
  echo "artifact $path:"
  curl -sSf "${auth[@]}" "$base/agents/sessions/$session/artifacts/$id/content"
done <<<"$ids"
