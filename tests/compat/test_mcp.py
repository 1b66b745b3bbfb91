"""Issues 5 and 6, MCP connections through the unmodified client: agents and sessions with
`tools=[{"type": "mcp", ...}]`, a turn in which the scripted model calls `search_tools` then
`call_tool` against `@modelcontextprotocol/server-everything` (Streamable HTTP, from the mcp
crate's `tests/servers` npm install), the `mcp_call` item through `sessions.items.list`, a
required server that cannot initialize, and a session-level inline `authorization` that is
never shown (the mcp crate's `http.mjs` auth fixture)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import threading
from typing import Iterator

import openai
import pytest

from harness import REPO_ROOT, conforms
from scripted import NONE, call, reply, send, turns, wait_turn, wait_until

SERVERS = REPO_ROOT / "crates" / "mcp" / "tests" / "servers"
EVERYTHING = SERVERS / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"


def ensure_npm() -> None:
    if not EVERYTHING.exists():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=SERVERS, check=True)


def start_node(args: list[str], ready: re.Pattern[str], env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], re.Match[str]]:
    """Starts `node args…` in SERVERS; waits for a stdout or stderr line matching `ready`."""
    ensure_npm()
    proc = subprocess.Popen(
        ["node", *args], cwd=SERVERS, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        found = ready.search(line)
        if found:
            # Keep draining so the server never blocks on a full pipe.
            threading.Thread(target=lambda: [None for _ in proc.stdout or []], daemon=True).start()
            return proc, found
    raise RuntimeError(f"node {args} exited with {proc.wait()} before it was ready")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def everything() -> Iterator[str]:
    """server-everything in Streamable HTTP mode; yields its MCP URL."""
    port = free_port()
    proc, _ = start_node([str(EVERYTHING), "streamableHttp"], re.compile("listening on port"), {**os.environ, "PORT": str(port)})
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def auth_fixture() -> Iterator[str]:
    """`http.mjs`: answers 401 unless `Authorization: Bearer s3cret-token` and `X-Tenant: acme`."""
    proc, found = start_node([str(SERVERS / "http.mjs"), "default"], re.compile(r"listening (\d+)"))
    try:
        yield f"http://127.0.0.1:{found.group(1)}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def mcp_tool(url: str, label: str = "everything", **fields: object) -> dict[str, object]:
    return {"type": "mcp", "server_label": label, "required": True, "transport": {"type": "http", "server_url": url}, **fields}


def tool_result(body: dict[str, object], call_id: str) -> str:
    for m in body["messages"]:  # type: ignore[union-attr]
        if m.get("role") == "tool" and m.get("tool_call_id") == call_id:  # type: ignore[union-attr]
            return m["content"]  # type: ignore[index,return-value]
    raise AssertionError(f"no tool result for {call_id}")


def run(client: openai.OpenAI, sid: str, text: str) -> object:
    send(client, sid, text)
    turn = wait_until(lambda: turns(client, sid), "the turn")[-1]
    return wait_turn(client, sid, turn.id)


def test_a_saved_agent_with_an_mcp_server_searches_then_calls_in_a_turn(client, model, everything):
    """Spec: "Configured MCP servers automatically give the model search_tools and call_tool";
    "Rebyte executes the call on the MCP server" and records it as an mcp_call Item."""
    agent = client.beta.agents.create(model="gpt-test", tools=[mcp_tool(everything)])
    assert conforms(agent)["tools"][0]["transport"] == {"type": "http", "server_url": everything, "headers": {}}
    model.script(
        call("search_tools", {"query": "echo message", "server": "everything"}, id="c_search"),
        call("call_tool", {"server": "everything", "name": "echo", "arguments": {"message": "hi"}}, id="c_call"),
        reply("The server said hi."),
    )
    sid = client.beta.agents.sessions.create(environment=NONE, agent_id=agent.id).id
    turn = run(client, sid, "Echo hi through MCP")
    assert turn.status == "completed", turn

    bodies = model.bodies()
    offered = sorted(t["function"]["name"] for t in bodies[0]["tools"])
    assert offered == ["call_tool", "list_mcp_resource_templates", "list_mcp_resources", "read_mcp_resource", "search_tools"]
    found = json.loads(tool_result(bodies[1], "c_search"))
    echo = next(r for r in found["results"] if r["name"] == "echo")
    assert echo["server"] == "everything" and "message" in echo["inputSchema"]["properties"]
    assert tool_result(bodies[2], "c_call") == "Echo: hi"

    items = [conforms(i) for i in client.beta.agents.sessions.items.list(sid, order="asc")]
    calls = [i for i in items if i["type"] == "mcp_call"]
    assert calls == [
        {
            "id": calls[0]["id"],
            "type": "mcp_call",
            "turn_id": turn.id,
            "call_id": "c_call",
            "server_label": "everything",
            "name": "echo",
            "arguments": {"message": "hi"},
            "output": "Echo: hi",
            "error": None,
            "status": "completed",
        }
    ]
    assert items[-1]["content"][0]["text"] == "The server said hi."


def test_a_required_server_that_cannot_initialize_fails_the_turn_before_any_model_call(client, model):
    """Spec: "If a required server cannot initialize, the Turn fails." """
    sid = client.beta.agents.sessions.create(
        environment=NONE, agent={"model": "gpt-test", "tools": [mcp_tool(f"http://127.0.0.1:{free_port()}/mcp", "company")]}
    ).id
    turn = run(client, sid, "hello")
    assert turn.status == "failed"
    error = conforms(turn)["error"]
    assert error["code"] == "connection_failed"
    assert "'company'" in error["message"] and "initialize" in error["message"], error
    assert model.stats()["requests"] == 0


def test_inline_session_authorization_reaches_the_server_and_is_never_returned(client, model, auth_fixture):
    """Spec: "Use Session-level transport.authorization or transport.headers for inline HTTP
    authentication. These values are encrypted and omitted from public Session resources." """
    tool = mcp_tool(auth_fixture, "company")
    tool["transport"] = {**tool["transport"], "authorization": "Bearer s3cret-token", "headers": {"X-Tenant": "acme"}}  # type: ignore[dict-item]
    session = client.beta.agents.sessions.create(environment=NONE, agent={"model": "gpt-test", "tools": [tool]})
    model.script(
        call("call_tool", {"server": "company", "name": "add_tool", "arguments": {"name": "x"}}, id="c1"),
        reply("done"),
    )
    turn = run(client, session.id, "go")
    assert turn.status == "completed", turn
    assert tool_result(model.bodies()[1], "c1") == "added x"
    shown = [
        conforms(session),
        conforms(client.beta.agents.sessions.retrieve(session.id)),
        *[conforms(i) for i in client.beta.agents.sessions.items.list(session.id)],
    ]
    assert shown[1]["agent"]["tools"][0]["transport"] == {"type": "http", "server_url": auth_fixture, "headers": {}}
    assert "s3cret-token" not in json.dumps(shown) and "X-Tenant" not in json.dumps(shown)


def test_saved_agents_refuse_inline_mcp_secrets(client):
    """Decision (issue 5): saved agents keep no inline HTTP secrets; sessions supply them."""
    tool = mcp_tool("https://mcp.example/mcp", "company")
    tool["transport"] = {**tool["transport"], "authorization": "Bearer t"}  # type: ignore[dict-item]
    with pytest.raises(openai.BadRequestError) as e:
        client.beta.agents.create(model="gpt-test", tools=[tool])
    assert e.value.body["param"] == "tools[0].transport.authorization"  # type: ignore[index]
