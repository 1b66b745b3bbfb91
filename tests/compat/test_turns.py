"""Issue 3, turns: input becomes a Turn that runs against the scripted model;
`client.beta.agents.sessions.turns` / `.turns.items` / `.items` show it in the
client's shapes. Failures (cancel, max_steps, upstream errors) end the turn with
a clear error and leave the session ready for the next input."""

from __future__ import annotations

import time
from typing import Any

import openai
import pytest

from harness import assert_recent, conforms, error_of
from scripted import NONE, NOW_TOOL, call, message, only_turn, reply, send, turns, wait_idle, wait_turn, wait_until


def usage(input_tokens: int = 0, output_tokens: int = 0, cached: int = 0, reasoning: int = 0) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": input_tokens + output_tokens,
    }


def expected_turn(turn: dict[str, Any], session_id: str, **fields: Any) -> dict[str, Any]:
    """A whole Turn: the documented fields, timestamps taken from `turn` and checked for order."""
    assert_recent(turn["created_at"])
    if turn.get("started_at") is not None:
        assert turn["created_at"] <= turn["started_at"] <= (turn.get("completed_at") or turn["started_at"])
    base = {
        "id": turn["id"],
        "object": "agent.session.turn",
        "agent_id": "agent_inline",
        "session_id": session_id,
        "status": "completed",
        "created_at": turn["created_at"],
        "started_at": turn.get("started_at"),
        "completed_at": turn.get("completed_at"),
        "error": None,
        "subagent_id": None,
        "usage": usage(),
        "prompt_cache_options": None,
    }
    base.update(fields)
    return base


def msg(item: dict[str, Any], turn_id: str, role: str, content: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    base = {
        "id": item["id"],
        "type": "message",
        "turn_id": turn_id,
        "role": role,
        "status": "completed",
        "content": content,
        "phase": "final_answer" if role == "assistant" else None,
    }
    base.update(fields)
    return base


def new_session(client, **agent: Any) -> str:
    return client.beta.agents.sessions.create(environment=NONE, agent={"model": "gpt-test", **agent}).id


def test_input_on_session_create_runs_a_turn_listed_with_its_items(client, model):
    model.script(reply("Hello there, friend", chunks=3))
    session = client.beta.agents.sessions.create(
        environment=NONE, agent={"model": "gpt-6-luna", "instructions": "Be brief."}, input="Say hello"
    )
    turn_id = only_turn(client, session.id).id
    wait_turn(client, session.id, turn_id)

    listed = client.beta.agents.sessions.turns.list(session.id)
    assert (listed.first_id, listed.last_id, listed.has_more) == (turn_id, turn_id, False)
    turn = conforms(listed.data[0])
    assert turn == expected_turn(turn, session.id)
    assert conforms(client.beta.agents.sessions.turns.retrieve(turn_id, session_id=session.id)) == turn

    items = [conforms(i) for i in client.beta.agents.sessions.turns.items.list(turn_id, session_id=session.id, order="asc")]
    assert items == [
        msg(items[0], turn_id, "user", [{"type": "input_text", "text": "Say hello"}]),
        msg(items[1], turn_id, "assistant", [{"type": "output_text", "text": "Hello there, friend"}]),
    ]
    session_items = client.beta.agents.sessions.items.list(session.id, order="asc")
    assert [conforms(i) for i in session_items] == items
    newest_first = client.beta.agents.sessions.items.list(session.id)
    assert [i.id for i in newest_first] == [i["id"] for i in items][::-1], "lists default to desc"

    [sent] = model.bodies()
    assert sent["model"] == "gpt-6-luna"
    assert sent["stream"] is True
    assert sent["messages"] == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hello"}]
    conforms(wait_idle(client, session.id))


def test_a_turn_and_its_session_report_the_models_token_usage(client, model):
    model.script(
        reply("one", usage={"input_tokens": 10, "output_tokens": 3, "cached_tokens": 4, "reasoning_tokens": 1}),
        reply("two", usage={"input_tokens": 20, "output_tokens": 5, "cached_tokens": 0, "reasoning_tokens": 2}),
    )
    sid = new_session(client)
    send(client, sid, "first")
    wait_turn(client, sid, only_turn(client, sid).id)
    send(client, sid, "second")
    wait_until(lambda: len(turns(client, sid)) == 2, "the second turn")
    first, second = turns(client, sid)
    second = wait_turn(client, sid, second.id)
    assert conforms(first)["usage"] == usage(10, 3, cached=4, reasoning=1)
    assert conforms(second)["usage"] == usage(20, 5, reasoning=2)
    assert conforms(wait_idle(client, sid))["usage"] == usage(30, 8, cached=4, reasoning=3)


def test_input_during_a_turn_is_queued_as_the_next_turn(client, model):
    """Issue 3: "Input that arrives while a turn runs is queued as the next turn: never two turns of one session
    at once, never lost input." """
    model.script(reply("first answer", latency_ms=400), reply("second answer"))
    sid = new_session(client)
    send(client, sid, "one")
    send(client, sid, "two")
    first, second = turns(client, sid)
    assert second.status == "queued"
    first = wait_turn(client, sid, first.id)
    second = wait_turn(client, sid, second.id)
    assert (first.status, second.status) == ("completed", "completed")
    assert second.started_at >= first.completed_at
    last = model.bodies()[-1]["messages"]
    assert [m["content"] for m in last] == ["one", "first answer", "two"], "the second turn sees the first"


def test_an_idempotency_key_applies_input_once(client, model):
    model.script(reply("once"), reply("twice"))
    sid = new_session(client)
    for _ in range(3):
        send(client, sid, "only once", idempotency_key="idem-key-1")
    turn = wait_turn(client, sid, only_turn(client, sid).id)
    assert turn.status == "completed"
    user_items = [i for i in client.beta.agents.sessions.items.list(sid) if i.role == "user"]
    assert len(user_items) == 1
    assert model.stats()["requests"] == 1
    send(client, sid, "another key", idempotency_key="idem-key-2")
    wait_until(lambda: len(turns(client, sid)) == 2, "a second turn for a new key")
    assert wait_turn(client, sid, turns(client, sid)[-1].id).status == "completed"


def test_a_client_function_makes_the_turn_wait_until_its_tool_result(client, model):
    model.script(call("now", id="call_now_1", text="Let me check."), reply("It is noon."))
    sid = new_session(client, tools=[NOW_TOOL])
    send(client, sid, "What time is it?")
    turn_id = only_turn(client, sid).id
    wait_turn(client, sid, turn_id, "waiting")
    session = wait_until(
        lambda: (s := client.beta.agents.sessions.retrieve(sid)).status == "requires_action" and s, "requires_action"
    )
    session = conforms(session)
    assert session["required_actions"] == [
        {"type": "function_call", "call_id": "call_now_1", "name": "now", "arguments": {}, "turn_id": turn_id}
    ]
    client.beta.agents.sessions.events.create(
        sid,
        events=[{"type": "agent.session.input.tool_result", "turn_id": turn_id, "call_id": "call_now_1",
                 "success": True, "output": "2026-11-30T12:00:00Z"}],
    )
    assert wait_turn(client, sid, turn_id).status == "completed"
    items = [conforms(i) for i in client.beta.agents.sessions.turns.items.list(turn_id, session_id=sid, order="asc")]
    assert items[2:4] == [
        {"id": items[2]["id"], "type": "function_call", "turn_id": turn_id, "call_id": "call_now_1", "name": "now",
         "arguments": {}, "status": "completed"},
        {"id": items[3]["id"], "type": "function_call_output", "turn_id": turn_id, "call_id": "call_now_1",
         "output": "2026-11-30T12:00:00Z", "error": None, "status": "completed"},
    ]
    assert [(i["type"], i.get("phase")) for i in items] == [
        ("message", None), ("message", "commentary"), ("function_call", None), ("function_call_output", None),
        ("message", "final_answer"),
    ]
    tool_message = model.bodies()[-1]["messages"][-1]
    assert tool_message == {"role": "tool", "tool_call_id": "call_now_1", "content": "2026-11-30T12:00:00Z"}
    assert conforms(wait_idle(client, sid))["required_actions"] == []

    # Issue 3 bad input: "a tool_result for a call that … was already answered".
    with pytest.raises(openai.BadRequestError) as e:
        client.beta.agents.sessions.events.create(
            sid,
            events=[{"type": "agent.session.input.tool_result", "turn_id": turn_id, "call_id": "call_now_1",
                     "success": True, "output": "again"}],
        )
    assert error_of(e.value)["message"] == "Unknown pending tool call: call_now_1"


def test_a_tool_result_for_an_unknown_call_is_a_bad_request_naming_it(client, model):
    """The client's tool dispatcher recognises exactly `Unknown pending tool call: <call_id>`."""
    model.script(reply("done"))
    sid = new_session(client)
    send(client, sid, "hi")
    turn_id = only_turn(client, sid).id
    wait_turn(client, sid, turn_id)
    with pytest.raises(openai.BadRequestError) as e:
        client.beta.agents.sessions.events.create(
            sid,
            events=[{"type": "agent.session.input.tool_result", "turn_id": turn_id, "call_id": "call_nope",
                     "success": True, "output": "x"}],
        )
    err = error_of(e.value)
    assert (err["code"], err["message"]) == ("invalid_request_error", "Unknown pending tool call: call_nope")


def test_cancel_during_a_stalled_model_cancels_the_turn_at_once_and_the_session_takes_new_input(client, model):
    model.script({"type": "stall"}, reply("after the cancel"))
    sid = new_session(client)
    send(client, sid, "hang")
    turn_id = only_turn(client, sid).id
    wait_turn(client, sid, turn_id, "in_progress")
    wait_until(lambda: model.stats()["requests"] == 1, "the model request")
    started = time.monotonic()
    client.beta.agents.sessions.events.create(sid, events=[{"type": "agent.session.input.cancel"}])
    turn = conforms(wait_turn(client, sid, turn_id))
    assert time.monotonic() - started < 2, "cancel stops the model stream at once"
    assert turn == expected_turn(turn, sid, status="cancelled", usage=None)
    assert turn["completed_at"] is not None
    wait_until(lambda: model.stats()["aborted"] == 1, "the model request to be dropped")
    conforms(wait_idle(client, sid))

    send(client, sid, "again")
    second = wait_turn(client, sid, turns(client, sid)[-1].id)
    assert second.status == "completed"
    assert [m["content"] for m in model.bodies()[-1]["messages"]] == ["hang", "again"]


def test_an_unknown_input_type_is_a_bad_request_naming_it(client, model):
    sid = new_session(client)
    for events, param in (([{"type": "agent.session.input.teleport"}], "events[0]"), ([], "events")):
        with pytest.raises(openai.BadRequestError) as e:
            client.beta.agents.sessions.events.create(sid, events=events)
        assert error_of(e.value)["param"].startswith(param)
    assert turns(client, sid) == []


def test_more_than_100_events_in_one_request_is_a_bad_request_and_applies_none(client, model):
    """Issue 17: one request carries at most 100 input events."""
    sid = new_session(client)
    with pytest.raises(openai.BadRequestError) as e:
        client.beta.agents.sessions.events.create(sid, events=[message(f"m{i}") for i in range(101)])
    err = error_of(e.value)
    assert err["param"] == "events"
    assert "at most 100 events" in err["message"], err
    assert turns(client, sid) == []
    assert model.stats()["requests"] == 0


def test_a_session_queues_at_most_100_turns_and_a_refused_submission_applies_nothing(client, model):
    """Issue 17: past 100 queued turns a submission is a 429 naming the limit, and nothing of it is kept."""
    model.script({"type": "stall"})
    sid = new_session(client)
    try:
        # One turn runs (stalled), 99 wait.
        client.beta.agents.sessions.events.create(sid, events=[message(f"m{i}") for i in range(100)])
        first = turns(client, sid)[0].id
        wait_turn(client, sid, first, "in_progress")
        # Two more would make 101 queued: refused whole, not in part.
        with pytest.raises(openai.RateLimitError) as e:
            client.with_options(max_retries=0).beta.agents.sessions.events.create(
                sid, events=[message("x1"), message("x2")]
            )
        err = error_of(e.value)
        assert (err["type"], err["code"]) == ("rate_limit_error", "too_many_queued_turns")
        assert "limit of 100" in err["message"], err
        assert e.value.response.headers.get("x-should-retry") == "false"
        assert len(turns(client, sid)) == 100
        # The 100th queued turn is accepted; the next is refused where the queue lives.
        send(client, sid, "the hundredth")
        with pytest.raises(openai.RateLimitError) as e:
            client.with_options(max_retries=0).beta.agents.sessions.events.create(sid, events=[message("one more")])
        err = error_of(e.value)
        assert err["code"] == "too_many_queued_turns"
        assert "the session already has 100 queued turns" in err["message"], err
        listed = turns(client, sid)
        assert len(listed) == 101
        assert [t.status for t in listed[1:]] == ["queued"] * 100
        assert model.stats()["requests"] == 1
    finally:
        # Deleting the session drops its queue and stops the stalled turn.
        client.beta.agents.sessions.delete(sid)
        wait_until(lambda: model.stats()["aborted"] == 1, "the model request to be dropped")


def test_cancel_with_no_active_turn_is_a_clear_bad_request(client, model):
    sid = new_session(client)
    with pytest.raises(openai.BadRequestError) as e:
        client.beta.agents.sessions.events.create(sid, events=[{"type": "agent.session.input.cancel"}])
    assert error_of(e.value)["code"] == "no_active_turn"


def test_max_steps_exceeded_fails_the_turn_and_leaves_the_session_idle(client, model):
    model.script({**call("now"), "repeat": 3})
    agent = client.beta.agents.create(model="gpt-test", tools=[NOW_TOOL], extra_body={"max_steps": 2})
    sid = client.beta.agents.sessions.create(environment=NONE, agent_id=agent.id).id
    with client.beta.agents.sessions.stream(sid, input="loop", tool_handlers={"now": lambda args: "noon"}) as stream:
        stream.until_done()
    # The reason (`max_steps_exceeded`, issue 3) leads the message; the code is the client's category of it.
    turn = conforms(only_turn(client, sid))
    assert turn["error"]["code"] == "invalid_request"
    assert turn == expected_turn(
        turn,
        sid,
        agent_id=agent.id,
        status="failed",
        error={"code": "invalid_request",
               "message": "max_steps_exceeded: the turn reached its limit of 2 model steps without a final answer"},
    )
    assert model.stats() == {"requests": 2, "pending": 1, "aborted": 0}
    conforms(wait_idle(client, sid))


def test_a_model_upstream_error_fails_the_turn_naming_the_provider_and_status(client, model):
    model.script({"type": "error", "status": 400, "body": '{"error":{"message":"bad things"}}'})
    sid = new_session(client, model="gpt-x")
    send(client, sid, "hi")
    turn = wait_turn(client, sid, only_turn(client, sid).id).to_dict()
    assert turn == expected_turn(
        turn,
        sid,
        status="failed",
        usage=None,
        error={"code": "invalid_request",
               "message": "model 'gpt-x' failed: model provider `openai` answered HTTP 400: "
                          '{"error":{"message":"bad things"}}'},
    )
    conforms(wait_idle(client, sid))


def test_a_retryable_upstream_error_is_retried_and_the_turn_completes(client, model):
    model.script({"type": "error", "status": 503}, reply("recovered"))
    sid = new_session(client)
    send(client, sid, "hi")
    turn = wait_turn(client, sid, only_turn(client, sid).id)
    assert turn.status == "completed"
    assert model.stats()["requests"] == 2


def test_a_model_stream_that_stops_midway_fails_the_turn(client, model):
    model.script(reply("half an answer", chunks=4, cut_after=2), reply("next"))
    sid = new_session(client)
    send(client, sid, "one")
    turn = wait_turn(client, sid, only_turn(client, sid).id).to_dict()
    assert turn["status"] == "failed"
    assert "openai" in turn["error"]["message"] and "stream" in turn["error"]["message"]
    [user, partial] = client.beta.agents.sessions.items.list(sid, order="asc").data
    assert (partial.role, partial.status) == ("assistant", "incomplete")
    send(client, sid, "two")
    assert wait_turn(client, sid, turns(client, sid)[-1].id).status == "completed"


def test_invalid_tool_arguments_go_back_to_the_model_as_the_tool_result(client, model):
    model.script(
        {"type": "reply", "tool_calls": [{"id": "call_bad", "name": "now", "arguments": "{not json"}]},
        reply("Sorry."),
    )
    sid = new_session(client, tools=[NOW_TOOL])
    send(client, sid, "go")
    turn = wait_turn(client, sid, only_turn(client, sid).id)
    assert turn.status == "completed"
    tool_message = model.bodies()[1]["messages"][-1]
    assert (tool_message["role"], tool_message["tool_call_id"]) == ("tool", "call_bad")
    assert "not valid JSON" in tool_message["content"]
    failed = [conforms(i) for i in client.beta.agents.sessions.items.list(sid, order="asc") if i.status == "failed"]
    assert [(i["type"], i["call_id"]) for i in failed] == [("function_call", "call_bad"), ("function_call_output", "call_bad")]
    assert failed[0]["arguments"] == "{not json", "the raw arguments are kept"


@pytest.mark.parametrize(
    "step, code",
    [
        ({"type": "error", "status": 400, "body": '{"error":{"message":"bad things"}}'}, "invalid_request"),
        ({"type": "error", "status": 401, "body": '{"error":{"message":"bad key"}}'}, "authentication_error"),
        ({"type": "error", "status": 404, "body": '{"error":{"message":"no such model"}}'}, "resource_not_found"),
        (reply("half an answer", chunks=4, cut_after=2), "server_error"),
    ],
    ids=["http-400", "http-401", "http-404", "stream-cut"],
)
def test_a_turn_failed_by_the_model_has_an_error_code_the_client_knows(client, model, step, code):
    """Turn.error: SessionTurnError, whose `code` is "A stable, machine-readable failure category" from a closed
    list; the server's message still names the provider and what happened."""
    model.script(step)
    sid = new_session(client)
    send(client, sid, "hi")
    turn = wait_turn(client, sid, only_turn(client, sid).id)
    assert (turn.status, turn.error.code) == ("failed", code)
    assert "openai" in turn.error.message
    conforms(turn)


def test_an_unknown_model_with_no_provider_fails_the_turn_naming_the_model(servers, model):
    """Issue 3 bad input: "an unknown model name with no provider configured (a clear turn error naming the
    model)"; DESIGN §10: "A model that cannot be reached fails the turn with a clear error item"."""
    client = servers(OPENAI_BASE_URL="", OPENAI_API_KEY="", ANTHROPIC_API_KEY="").client()
    sid = client.beta.agents.sessions.create(environment=NONE, agent={"model": "mystery-model-9"}).id
    send(client, sid, "hi")
    turn = wait_turn(client, sid, only_turn(client, sid).id)
    assert turn.status == "failed"
    assert "mystery-model-9" in turn.error.message
    assert model.stats()["requests"] == 0
    wait_idle(client, sid)
