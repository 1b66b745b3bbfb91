"""Issue 15, item 5: approvals for MCP calls, durable. An MCP server's
`require_approval` (Rebyte extension, shaped like the Responses API's MCP
tool) makes a `call_tool` wait: the turn is `waiting`, the session's
`required_actions` holds the client's `mcp_approval_request`, and
`agent.session.input.mcp_approval_request_result` (or, on the Responses API,
an `mcp_approval_response` input item) runs or refuses the call. A waiting
turn survives a SIGKILL of the server."""

from __future__ import annotations

import signal
from typing import Any

import openai
import pytest
from openai.types.beta.agent_session import RequiredActionSessionRequiredActionResourceMcpApprovalRequest

from harness import conforms, error_of
from scripted import NONE, call, only_turn, reply, send, wait_turn, wait_until
from test_mcp import everything, mcp_tool, tool_result  # noqa: F401  (the fixture is used by name)

ECHO = {"server": "everything", "name": "echo", "arguments": {"message": "hi"}}


def decide(client: Any, sid: str, request_id: str, decision: str) -> None:
    client.beta.agents.sessions.events.create(sid, events=[{
        "type": "agent.session.input.mcp_approval_request_result",
        "request_id": request_id,
        "response": {"type": "mcp_tool_call", "decision": decision},
    }])


def waiting_request(client: Any, sid: str) -> RequiredActionSessionRequiredActionResourceMcpApprovalRequest:
    """The session's one approval request, once its turn waits."""
    turn = wait_turn(client, sid, only_turn(client, sid).id, "waiting")
    session = client.beta.agents.sessions.retrieve(sid)
    conforms(session)
    assert session.status == "requires_action"
    (action,) = session.required_actions
    assert isinstance(action, RequiredActionSessionRequiredActionResourceMcpApprovalRequest)
    assert action.turn_id == turn.id
    assert (action.request.server_label, action.request.name, action.request.arguments) == (
        "everything", "echo", {"message": "hi"})
    return action


def start(client: Any, model: Any, url: str, require_approval: Any) -> str:
    model.script(call("call_tool", ECHO, id="c_echo"), reply("Done."))
    sid = client.beta.agents.sessions.create(
        environment=NONE, agent={"model": "gpt-test", "tools": [mcp_tool(url, require_approval=require_approval)]}).id
    send(client, sid, "Echo hi")
    return sid


def mcp_calls(client: Any, sid: str) -> list[dict[str, Any]]:
    return [conforms(i) for i in client.beta.agents.sessions.items.list(sid, order="asc") if i.type == "mcp_call"]


def test_an_approved_call_runs_and_an_answered_request_is_a_409(client, model, everything):
    sid = start(client, model, everything, "always")
    action = waiting_request(client, sid)
    assert model.stats()["requests"] == 1, "the model waits with the turn"
    decide(client, sid, action.request_id, "approve")
    turn = wait_turn(client, sid, action.turn_id)
    assert turn.status == "completed", turn
    assert tool_result(model.bodies()[1], "c_echo") == "Echo: hi"
    (done,) = mcp_calls(client, sid)
    assert (done["status"], done["output"]) == ("completed", "Echo: hi")
    with pytest.raises(openai.ConflictError) as e:
        decide(client, sid, action.request_id, "approve")
    assert action.request_id in error_of(e.value)["message"]


def test_a_denied_call_does_not_run_and_the_model_is_told(client, model, everything):
    sid = start(client, model, everything, {"always": {"tool_names": ["echo", "tool-added-later"]}})
    action = waiting_request(client, sid)
    decide(client, sid, action.request_id, "deny")
    assert wait_turn(client, sid, action.turn_id).status == "completed"
    told = tool_result(model.bodies()[1], "c_echo")
    assert told.startswith("error: ") and "denied" in told
    (refused,) = mcp_calls(client, sid)
    assert (refused["status"], refused["output"], refused["error"]) == ("failed", None, told.removeprefix("error: "))


def test_tools_a_filter_does_not_ask_for_run_at_once(client, model, everything):
    sid = start(client, model, everything, {"always": {"tool_names": ["get-sum"]}, "never": {"tool_names": ["echo"]}})
    turn = wait_turn(client, sid, only_turn(client, sid).id)
    assert turn.status == "completed"
    assert tool_result(model.bodies()[1], "c_echo") == "Echo: hi"


@pytest.mark.parametrize("bad", ["sometimes", 3, {"always": ["echo"]}, {"maybe": {"tool_names": []}}])
def test_a_malformed_require_approval_is_a_400_naming_it(client, everything, bad):
    with pytest.raises(openai.BadRequestError) as e:
        client.beta.agents.create(model="gpt-test", tools=[mcp_tool(everything, require_approval=bad)])
    assert error_of(e.value)["param"].startswith("tools[0].require_approval")


def test_a_decision_that_is_malformed_or_names_no_request_is_refused(client, model, everything):
    sid = start(client, model, everything, "always")
    action = waiting_request(client, sid)
    with pytest.raises(openai.BadRequestError) as e:
        decide(client, sid, action.request_id, "maybe")
    assert error_of(e.value)["param"] == "events[0].response"
    with pytest.raises(openai.ConflictError):
        decide(client, sid, "mcpr_unknown", "approve")
    decide(client, sid, action.request_id, "cancel")
    assert wait_turn(client, sid, action.turn_id).status == "completed"
    assert "dismissed" in tool_result(model.bodies()[1], "c_echo")


def test_a_waiting_turn_survives_sigkill_and_the_answer_resumes_it(servers, model, everything):
    first = servers()
    c1 = first.client()
    sid = start(c1, model, everything, "always")
    action = waiting_request(c1, sid)
    assert first.stop(signal.SIGKILL) == -signal.SIGKILL
    second = servers()
    c2 = second.client()
    assert c2.beta.agents.sessions.turns.retrieve(action.turn_id, session_id=sid).status == "waiting"
    assert waiting_request(c2, sid).request_id == action.request_id
    decide(c2, sid, action.request_id, "approve")
    turn = wait_turn(c2, sid, action.turn_id)
    assert turn.status == "completed", turn
    assert tool_result(model.bodies()[-1], "c_echo") == "Echo: hi"
    assert [c["status"] for c in mcp_calls(c2, sid)] == ["completed"]


def test_a_client_function_call_also_survives_sigkill(servers, model):
    first = servers()
    c1 = first.client()
    tool = {"type": "function", "name": "now", "description": "The time", "parameters": {"type": "object"}}
    model.script(call("now", id="c_now"), reply("It is noon."))
    sid = c1.beta.agents.sessions.create(environment=NONE, agent={"model": "gpt-test", "tools": [tool]}).id
    send(c1, sid, "Time?")
    turn = wait_turn(c1, sid, only_turn(c1, sid).id, "waiting")
    assert first.stop(signal.SIGKILL) == -signal.SIGKILL
    c2 = servers().client()
    assert c2.beta.agents.sessions.retrieve(sid).status == "requires_action"
    c2.beta.agents.sessions.events.create(sid, events=[{
        "type": "agent.session.input.tool_result", "turn_id": turn.id, "call_id": "c_now", "success": True,
        "output": "12:00"}])
    assert wait_turn(c2, sid, turn.id).status == "completed"
    assert tool_result(model.bodies()[-1], "c_now") == "12:00"


def test_the_responses_api_shows_the_request_and_takes_an_mcp_approval_response(client, model, everything):
    model.script(call("call_tool", ECHO, id="c_echo"), reply("Done."))
    sid = client.beta.agents.sessions.create(
        environment=NONE, agent={"model": "gpt-test", "tools": [mcp_tool(everything, require_approval="always")]}).id
    first = client.responses.create(conversation=f"conv_{sid}", input="Echo hi")
    (request,) = [o for o in first.output if o.type == "mcp_approval_request"]
    assert (request.server_label, request.name) == ("everything", "echo")
    second = client.responses.create(previous_response_id=first.id, input=[
        {"type": "mcp_approval_response", "approval_request_id": request.id, "approve": True}])
    assert second.output_text == "Done."
    assert tool_result(model.bodies()[1], "c_echo") == "Echo: hi"
