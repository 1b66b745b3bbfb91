"""Issue 14 through the unmodified client: `programmatic_tool_calling` (and the spec's
`dynamic_workflow`) beside an MCP server, a turn whose scripted model runs a program that
calls `server-everything`, recorded as `program` / `program_output` items that the client's
`ConversationItem` types parse, with their `item.added` / `item.done` events on the session
stream; deferred functions found with `tool_search` and then called."""

from __future__ import annotations

import json

import openai
import pytest

from harness import conforms
from scripted import NONE, call, collect, reply, send, wait_turn, wait_until, turns
from test_mcp import everything, mcp_tool, run, tool_result  # noqa: F401  (the fixture is used by name)

CODE = """
const sum = await call_tool({server: "everything", name: "get-sum", arguments: {a: 20, b: 22}});
const echo = await call_tool({server: "everything", name: "echo", arguments: {message: "hi"}});
console.log("two calls");
return {sum, echo};
"""


def test_a_program_is_recorded_as_program_items_the_client_parses(client, model, everything):
    tool = {"type": "programmatic_tool_calling", "enabled": True}
    agent = client.beta.agents.create(model="gpt-test", tools=[mcp_tool(everything), tool])
    assert conforms(agent)["tools"][1] == tool
    model.script(call("dynamic_workflow", {"code": CODE}, id="p1"), reply("42 and hi"))
    sid = client.beta.agents.sessions.create(environment=NONE, agent_id=agent.id).id
    with client.beta.agents.sessions.events.stream(sid, timeout=60) as stream:
        send(client, sid, "compute")
        events = collect(stream, lambda e: e.type == "agent.session.idle")
    turn = wait_turn(client, sid, wait_until(lambda: turns(client, sid), "the turn")[-1].id)
    assert turn.status == "completed", turn

    result = tool_result(model.bodies()[1], "p1")
    assert result == json.dumps({"sum": "The sum of 20 and 22 is 42.", "echo": "Echo: hi"}, separators=(",", ":")) \
        + "\n\nconsole output:\ntwo calls"
    items = [i for i in client.conversations.items.list(f"conv_{sid}", order="asc") if i.type.startswith("program")]
    program, output = (conforms(i) for i in items)
    assert program == {"id": program["id"], "type": "program", "call_id": "p1", "code": CODE,
                       "fingerprint": program["fingerprint"]}
    assert output == {"id": output["id"], "type": "program_output", "call_id": "p1", "result": result,
                      "status": "completed"}
    seen = [(e.type, e.item.to_dict()["type"]) for e in events
            if e.type.startswith("agent.session.turn.item.") and e.item.to_dict()["type"].startswith("program")]
    assert seen == [
        ("agent.session.turn.item.added", "program"),
        ("agent.session.turn.item.done", "program"),
        ("agent.session.turn.item.added", "program_output"),
        ("agent.session.turn.item.done", "program_output"),
    ]
    kinds = [i.to_dict()["type"] for i in client.beta.agents.sessions.items.list(sid, order="asc")]
    assert "mcp_call" not in kinds and kinds.count("program") == 1


def test_workflow_without_an_mcp_server_is_refused_naming_the_field(client):
    with pytest.raises(openai.BadRequestError) as e:
        client.beta.agents.create(model="gpt-test", tools=[{"type": "dynamic_workflow"}])
    assert e.value.body["param"] == "tools[0].type"  # type: ignore[index]


def test_a_deferred_function_is_found_with_tool_search_then_called(client, model):
    deferred = {"type": "function", "name": "weather", "description": "The weather forecast for a city",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}, "defer_loading": True}
    agent = client.beta.agents.create(model="gpt-test", tools=[deferred, {"type": "tool_search"}])
    assert conforms(agent)["tools"] == [{**deferred}, {"type": "tool_search"}]
    model.script(
        call("tool_search", {"query": "weather"}, id="s1"),
        call("weather", {"city": "Oslo"}, id="w1"),
        reply("Rainy."),
    )
    sid = client.beta.agents.sessions.create(environment=NONE, agent_id=agent.id).id
    send(client, sid, "Weather in Oslo?")
    turn = wait_until(lambda: turns(client, sid), "the turn")[-1]
    wait_turn(client, sid, turn.id, "waiting")
    session = client.beta.agents.sessions.retrieve(sid)
    assert session.status == "requires_action"
    client.beta.agents.sessions.events.create(
        sid, events=[{"type": "agent.session.input.tool_result", "turn_id": turn.id, "call_id": "w1",
                      "success": True, "output": "rain"}]
    )
    assert wait_turn(client, sid, turn.id).status == "completed"
    bodies = model.bodies()
    assert sorted(t["function"]["name"] for t in bodies[0]["tools"]) == ["tool_search"]
    assert sorted(t["function"]["name"] for t in bodies[1]["tools"]) == ["tool_search", "weather"]
    assert json.loads(tool_result(bodies[1], "s1"))["results"][0]["name"] == "weather"
    assert tool_result(bodies[2], "w1") == "rain"
