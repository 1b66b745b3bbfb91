"""The walkthrough (shared/WALKTHROUGH.md), runnable unattended against a rebyte server.

    export REBYTE_BASE_URL=http://127.0.0.1:8787/v1   # the default
    export REBYTE_API_KEY=rbk_...                      # required
    python examples/walkthrough.py

It does what the walkthrough does, with the official `openai` client used exactly as there: a saved agent
with an MCP stdio server and a client function, a standalone environment with an input file and one setup
command, two sessions attached to it by reference, one streamed turn whose client function runs in this
process, the artifacts of the turn, the same session through the Responses API, and cleanup. Along the way it
prints what the user should see: the environment going `pending` → `ready`, each `command_execution` or
`mcp_call` with its output, the artifacts of `main` (and none of `helper`), and, on any failure, what failed
(which server, which step, which model). Exit status: 0 when everything worked, 1 when a turn, a response or
the environment failed, 2 when a request was refused.

Switches, all optional (for running unattended, e.g. in the project's compatibility suite):

    REBYTE_WALKTHROUGH_OFFLINE=1   no network needed: the setup command becomes one that needs no network
                                   (instead of `pip install --quiet pandas`), the environment's network is
                                   disabled, and npm is told to stay offline (see the MCP note below)
    REBYTE_WALKTHROUGH_SETUP=CMD   the environment's one setup command, whatever the mode
    REBYTE_WALKTHROUGH_MCP_REQUIRED=1
                                   make the MCP server required, as WALKTHROUGH.md has it
    REBYTE_MODEL=NAME              the model (default gpt-6-luna)
    REBYTE_ENVIRONMENT_ID=env_...  reuse an environment an earlier run kept instead of creating one: its setup
                                   has run already and does not run again
    REBYTE_KEEP_ENVIRONMENT=1      do not delete the environment at the end (print its id for a later run)
"""

from __future__ import annotations

import base64
import os
import sys
from typing import Any

import openai
from openai import OpenAI

BASE_URL = os.environ.get("REBYTE_BASE_URL", "http://127.0.0.1:8787/v1")
MODEL = os.environ.get("REBYTE_MODEL", "gpt-6-luna")
OFFLINE = os.environ.get("REBYTE_WALKTHROUGH_OFFLINE") == "1"
KEEP_ENVIRONMENT = os.environ.get("REBYTE_KEEP_ENVIRONMENT") == "1"
REUSE_ENVIRONMENT = os.environ.get("REBYTE_ENVIRONMENT_ID") or None

# WALKTHROUGH.md installs pandas, which needs the network; offline, the setup checks that the standard library
# has what the task needs instead, and leaves a mark per run in /workspace/.setup-runs (setup runs once per
# environment, so the mark is there once however many sessions and runs use it).
SETUP = os.environ.get("REBYTE_WALKTHROUGH_SETUP") or (
    "python3 -c 'import csv, statistics' && echo setup >> /workspace/.setup-runs"
    if OFFLINE
    else "pip install --quiet pandas"
)

# The MCP server runs inside the environment's sandbox through `npx`, which downloads
# @modelcontextprotocol/server-filesystem from the npm registry on first use: it cannot start offline (npm
# retries for a while, then gives up). WALKTHROUGH.md marks it `required: True`, which would fail every turn
# where npm cannot be reached; here it is `required: False` unless REBYTE_WALKTHROUGH_MCP_REQUIRED=1, so the run
# goes on without its tools (the turn then uses the built-in `shell` tool instead). Offline, npm is told so
# (`npm_config_offline`), which makes it give up at once instead of after its retries.
MCP_REQUIRED = os.environ.get("REBYTE_WALKTHROUGH_MCP_REQUIRED") == "1"


def say(*parts: Any) -> None:
    print(*parts, flush=True)


def describe_item(item: Any) -> str | None:
    """One line for a step of the turn: a command and what it printed, or an MCP call and its result."""
    if item.type == "command_execution":
        output = (item.output or "").strip()
        return f"$ {item.command}  [exit {item.exit_code}, {item.status}]" + (f"\n{output}" if output else "")
    if item.type == "mcp_call":
        result = item.error if item.error else item.output
        return f"mcp {item.server_label}.{item.name}  [{item.status}]\n{result}"
    return None


def main() -> int:
    api_key = os.environ.get("REBYTE_API_KEY")
    if not api_key:
        say("error: set REBYTE_API_KEY to a key of your server (rebyte serve prints one on first start)")
        return 2

    client = OpenAI(api_key=api_key, base_url=BASE_URL, default_headers={"OpenAI-Beta": "agents=v1"})
    created: dict[str, Any] = {"sessions": [], "environment": None, "agent": None}
    try:
        return run(client, created)
    except openai.APIStatusError as e:
        request = e.response.request
        say(f"error: {request.method} {request.url.path} answered {e.status_code}: {e.message}")
        return 2
    except openai.APIConnectionError as e:
        say(f"error: cannot reach {BASE_URL}: {e}")
        return 2
    finally:
        cleanup(client, created)


def run(client: OpenAI, created: dict[str, Any]) -> int:
    # A saved agent with an MCP server that runs inside the environment's sandbox.
    agent = client.beta.agents.create(
        model=MODEL,
        instructions="You are a careful data assistant.",
        tools=[{"type": "mcp", "server_label": "files", "required": MCP_REQUIRED,
                "transport": {"type": "stdio", "command": "npx", "cwd": "/workspace",
                              "args": ["-y", "@modelcontextprotocol/server-filesystem", "/workspace"]}},
               {"type": "function", "name": "now", "description": "The current time",
                "parameters": {"type": "object", "properties": {}}}],
    )
    created["agent"] = agent.id
    say(f"agent {agent.id}: model {agent.model}, MCP server 'files' ({'required' if MCP_REQUIRED else 'optional'})")

    # A standalone environment with an input file and one setup command; nothing starts yet.
    if REUSE_ENVIRONMENT:
        env = client.beta.agents.environments.retrieve(REUSE_ENVIRONMENT)
        say(f"environment {env.id}: {env.status} (reused: its setup does not run again)")
    else:
        env = client.beta.agents.environments.create(environment={
            "type": "openai_hosted",
            "files": [{"type": "inline", "path": "/workspace/input.csv",
                       "data": base64.b64encode(b"city,temp\nParis,21\nOslo,9\n").decode()}],
            "setup_commands": [{"command": SETUP}],
            "network": {"access": "disabled" if OFFLINE else "enabled"},
            **({"env": {"npm_config_offline": "true"}} if OFFLINE else {}),
        })
        say(f"environment {env.id}: {env.status}")
    created["environment"] = env.id

    # Two sessions share that one sandbox: same files, same processes.
    main = client.beta.agents.sessions.create(agent_id=agent.id,
                                              environment={"type": "reference", "environment_id": env.id})
    created["sessions"].append(main.id)
    helper = client.beta.agents.sessions.create(agent_id=agent.id,
                                                environment={"type": "reference", "environment_id": env.id})
    created["sessions"].append(helper.id)
    say(f"sessions main {main.id} and helper {helper.id} share environment {main.environment.id}")

    # One turn, streamed as it happens; a client function runs in this process.
    def now(args: dict[str, Any]) -> str:
        say("\n[now() called by the model]")
        return "2026-11-30T12:00:00Z"

    failure = None
    tools_used: list[str] = []
    with client.beta.agents.sessions.stream(
            main.id,
            input="Average the temperatures in input.csv and write report.md to your output directory.",
            tool_handlers={"now": now}) as stream:
        for event in stream:
            if event.type == "agent.session.turn.output_text.delta":
                print(event.delta, end="", flush=True)
            elif event.type == "agent.session.turn.item.done":
                if event.item.type in ("command_execution", "mcp_call", "function_call"):
                    tools_used.append(event.item.type)
                line = describe_item(event.item)
                if line:
                    say(f"\n{line}")
            elif event.type == "agent.session.turn.failed":
                failure = event.turn.error
    say()

    env = client.beta.agents.environments.retrieve(env.id)
    say(f"environment {env.id}: {env.status}")
    if env.status == "failed":
        error = env.to_dict().get("error") or {}
        say(f"environment setup failed at step `{error.get('step')}`: {error.get('message')}")
        if error.get("output"):
            say(f"its output:\n{error['output'].rstrip()}")
    else:
        log = (env.to_dict().get("setup_log") or "").strip()
        if log:
            say(f"setup (ran once, when the environment first started):\n{log}")
    if failure is not None:
        say(f"turn failed: {failure.code}: {failure.message}")
        return 1

    # What a turn that did not do what the walkthrough shows still printed: say so, and exit non-zero.
    problems = []
    if not tools_used:
        problems.append(f"the turn called no tool: model {MODEL} answered without using the sandbox, the MCP "
                        "server or the client function (does it support tool calling?)")

    # What the turn produced, collected from $REBYTE_OUTPUT_DIR.
    artifacts = client.beta.agents.sessions.artifacts.list(main.id).data
    for artifact in artifacts:
        print(artifact)
    if not artifacts:
        problems.append("the turn produced no artifact: nothing was written to $REBYTE_OUTPUT_DIR "
                        "(the model did not write report.md there)")
    helper_artifacts = client.beta.agents.sessions.artifacts.list(helper.id).data
    say(f"helper has {len(helper_artifacts)} artifact(s): each session publishes only its own outputs")

    # The same session through the Responses API.
    reply = client.responses.create(model=MODEL, conversation=f"conv_{main.id}",
                                    input="Now list the cities, coldest first.")
    if reply.status != "completed":
        error = reply.error
        say(f"response {reply.id} {reply.status}: {error.message if error else reply.incomplete_details}")
        return 1
    print(reply.output_text)
    for problem in problems:
        say(f"not as the walkthrough shows: {problem}")
    return 1 if problems else 0


def cleanup(client: OpenAI, created: dict[str, Any]) -> None:
    """Sessions first, then the environment (it outlives them otherwise), then the agent."""
    for sid in created["sessions"]:
        try:
            client.beta.agents.sessions.delete(sid)
        except openai.APIError as e:
            say(f"cleanup: deleting session {sid} failed: {e}")
    env_id = created["environment"]
    if env_id and KEEP_ENVIRONMENT:
        say(f"kept environment {env_id} (REBYTE_ENVIRONMENT_ID={env_id} reuses it; delete it when done)")
    elif env_id:
        try:
            client.delete(f"/agents/environments/{env_id}", cast_to=object)
            say(f"deleted environment {env_id}")
        except openai.APIError as e:
            say(f"cleanup: deleting environment {env_id} failed: {e}")
    if created["agent"]:
        try:
            client.beta.agents.delete(created["agent"])
        except openai.APIError as e:
            say(f"cleanup: deleting agent {created['agent']} failed: {e}")
    client.close()


if __name__ == "__main__":
    sys.exit(main())
