"""Issue 3, events: the standing SSE stream `client.beta.agents.sessions.events.stream`
of typed `agent.session.*` events, session create with `stream=True`, the
high-level `client.beta.agents.sessions.stream(…, tool_handlers=…)` helper, and
resumption from `Last-Event-ID`."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import openai
import pytest
from openai.types.beta import (
    AgentSessionIdleEvent,
    AgentSessionTurnCompletedEvent,
    AgentSessionTurnCreatedEvent,
    AgentSessionTurnItemAddedEvent,
    AgentSessionTurnItemDoneEvent,
    AgentSessionTurnOutputTextDeltaEvent,
)

from harness import conforms, error_of, raw
from scripted import (
    NONE,
    NOW,
    NOW_TOOL,
    STREAM_TIMEOUT,
    call,
    collect,
    only_turn,
    reply,
    send,
    turns,
    types,
    wait_turn,
)

ONE_TURN = [
    "agent.session.turn.created",
    "agent.session.turn.item.added",  # the user's message
    "agent.session.turn.in_progress",
    "agent.session.in_progress",
    "agent.session.turn.item.added",  # the assistant's message, in progress
    "agent.session.turn.content_part.added",
    "agent.session.turn.output_text.delta",
    "agent.session.turn.output_text.delta",
    "agent.session.turn.output_text.delta",
    "agent.session.turn.output_text.done",
    "agent.session.turn.content_part.done",
    "agent.session.turn.item.done",
    "agent.session.turn.completed",
    "agent.session.idle",
]


def is_idle(event: Any) -> bool:
    return event.type == "agent.session.idle"


def new_session(client, **agent: Any) -> str:
    return client.beta.agents.sessions.create(environment=NONE, agent={"model": "gpt-test", **agent}).id


def check_ids(events: list[Any]) -> None:
    ids = [e.event_id for e in events]
    assert len(set(ids)) == len(ids), "every event has a unique event_id"
    assert ids == sorted(ids), "event ids follow the stream order"


def test_the_event_stream_yields_typed_events_while_events_create_submits(client, model):
    model.script(reply("Hello there, friend", chunks=3))
    sid = new_session(client)
    with client.beta.agents.sessions.events.stream(sid, timeout=STREAM_TIMEOUT) as stream:
        send(client, sid, "Say hello")
        events = collect(stream, is_idle)
    assert types(events) == ONE_TURN
    for event in events:
        conforms(event)
        assert (getattr(event, "session_id", None) or event.session.id) == sid
    check_ids(events)

    turn = client.beta.agents.sessions.turns.retrieve(only_turn(client, sid).id, session_id=sid)
    created, user_added, *_ = events
    assert isinstance(created, AgentSessionTurnCreatedEvent)
    assert (created.turn_id, created.turn.status, created.turn.started_at) == (turn.id, "queued", None)
    assert isinstance(user_added, AgentSessionTurnItemAddedEvent)
    assert user_added.item.to_dict() == {
        "id": user_added.item.id, "type": "message", "turn_id": turn.id, "role": "user", "status": "completed",
        "content": [{"type": "input_text", "text": "Say hello"}], "phase": None,
    }
    deltas = [e for e in events if isinstance(e, AgentSessionTurnOutputTextDeltaEvent)]
    assert "".join(d.delta for d in deltas) == "Hello there, friend"
    done = next(e for e in events if isinstance(e, AgentSessionTurnItemDoneEvent))
    assert {d.item_id for d in deltas} == {done.item.id}
    assert done.item.to_dict() == {
        "id": done.item.id, "type": "message", "turn_id": turn.id, "role": "assistant", "status": "completed",
        "content": [{"type": "output_text", "text": "Hello there, friend"}], "phase": "final_answer",
    }
    completed = events[-2]
    assert isinstance(completed, AgentSessionTurnCompletedEvent)
    assert completed.turn.to_dict() == turn.to_dict()
    idle = events[-1]
    assert isinstance(idle, AgentSessionIdleEvent)
    assert idle.session.to_dict() == client.beta.agents.sessions.retrieve(sid).to_dict()


def test_session_create_with_stream_answers_the_turns_event_stream(client, model):
    model.script(reply("Hello there, friend", chunks=3))
    stream = client.beta.agents.sessions.create(
        environment=NONE, agent={"model": "gpt-test"}, input="Say hello", stream=True, timeout=STREAM_TIMEOUT
    )
    events = list(stream)  # the create's stream ends by itself once the turn is over and the session idle
    assert types(events) == ["agent.session.created", *ONE_TURN]
    for event in events:
        conforms(event)
    check_ids(events)
    session = events[0].session
    assert (session.status, session.agent.model) == ("idle", "gpt-test")
    assert events[-1].session.to_dict() == client.beta.agents.sessions.retrieve(session.id).to_dict()


def test_session_create_with_stream_collects_the_final_result_and_runs_tool_handlers(client, model):
    model.script(call("now", text="Checking."), reply("It is noon."))
    stream = client.beta.agents.sessions.create(
        environment=NONE,
        agent={"model": "gpt-test", "tools": [NOW_TOOL]},
        input="What time is it?",
        stream=True,
        tool_handlers={"now": lambda args: NOW},
        timeout=STREAM_TIMEOUT,
    )
    result = stream.get_final_result()
    assert result.output_text == "It is noon."
    assert result.turn.status == "completed"
    assert model.bodies()[-1]["messages"][-1]["content"] == NOW


def test_the_sessions_stream_helper_runs_a_client_function_end_to_end(client, model):
    """Issue 3: "its high-level `client.beta.agents.sessions.stream(session_id, input=…, tool_handlers={…})` helper
    runs a turn with a client function end to end, unmodified"."""
    model.script(call("now", id="call_now", text="Let me check."), reply("It is noon.", chunks=2))
    sid = new_session(client, tools=[NOW_TOOL])
    seen: list[dict[str, Any]] = []

    def now(args: dict[str, Any]) -> str:
        seen.append(args)
        return NOW

    with client.beta.agents.sessions.stream(
        sid, input="What time is it?", tool_handlers={"now": now}, timeout=STREAM_TIMEOUT
    ) as stream:
        result = stream.get_final_result()
    assert seen == [{}]
    assert result.output_text == "It is noon."
    turn = wait_turn(client, sid, result.turn_id)
    assert result.turn.to_dict() == turn.to_dict()
    assert (result.session_id, turn.status) == (sid, "completed")
    assert [m.to_dict() for m in result.messages] == [
        {"id": result.messages[0].id, "type": "message", "turn_id": turn.id, "role": "assistant",
         "status": "completed", "content": [{"type": "output_text", "text": "It is noon."}], "phase": "final_answer"}
    ]
    last = model.bodies()[-1]["messages"]
    assert last[-2]["tool_calls"] == [
        {"id": "call_now", "type": "function", "function": {"name": "now", "arguments": "{}"}}
    ]
    assert last[-1] == {"role": "tool", "tool_call_id": "call_now", "content": NOW}


def test_the_sessions_stream_helper_yields_every_event_of_the_turn(client, model):
    model.script(call("now", text="Checking."), reply("It is noon.", chunks=3))
    sid = new_session(client, tools=[NOW_TOOL])
    with client.beta.agents.sessions.stream(
        sid, input="time?", tool_handlers={"now": lambda args: NOW}, timeout=STREAM_TIMEOUT
    ) as stream:
        events = list(stream)
    check_ids(events)
    kinds = types(events)
    assert kinds[0] == "agent.session.turn.created" and kinds[-2:] == ["agent.session.turn.completed", "agent.session.idle"]
    assert kinds.count("agent.session.requires_action") == 1
    action = next(e for e in events if e.type == "agent.session.requires_action")
    assert [a.to_dict() for a in action.session.required_actions] == [
        {"type": "function_call", "call_id": action.session.required_actions[0].call_id, "name": "now",
         "arguments": {}, "turn_id": events[0].turn_id}
    ]
    text = "".join(e.delta for e in events if e.type == "agent.session.turn.output_text.delta")
    assert text == "Checking.It is noon."


def test_a_failing_tool_handler_submits_a_failed_result_and_the_turn_goes_on(client, model):
    model.script(call("now", id="call_boom"), reply("The clock is broken."))
    sid = new_session(client, tools=[NOW_TOOL])
    failures: list[Any] = []

    def broken(args: dict[str, Any]) -> str:
        raise RuntimeError("secret detail")

    with client.beta.agents.sessions.stream(
        sid, input="time?", tool_handlers={"now": broken}, on_tool_error=failures.append, timeout=STREAM_TIMEOUT
    ) as stream:
        result = stream.get_final_result()
    assert result.output_text == "The clock is broken."
    assert [(f.tool_name, f.call_id, f.stage) for f in failures] == [("now", "call_boom", "execution")]
    output = next(i for i in client.beta.agents.sessions.items.list(sid) if i.type == "function_call_output")
    assert conforms(output) == {
        "id": output.id, "type": "function_call_output", "turn_id": result.turn_id, "call_id": "call_boom",
        "output": None, "error": "Tool handler failed.", "status": "failed",
    }
    assert model.bodies()[-1]["messages"][-1]["content"] == "error: Tool handler failed.", "the model learns it failed"


def _two_turns(client, model) -> tuple[str, list[Any]]:
    """A session with two finished turns, and every event it emitted (watched live)."""
    model.script(reply("one two three", chunks=3), reply("four five six", chunks=3))
    sid = new_session(client)
    with client.beta.agents.sessions.events.stream(sid, timeout=STREAM_TIMEOUT) as stream:
        send(client, sid, "first")
        events = collect(stream, is_idle)
        send(client, sid, "second")
        events += collect(stream, is_idle)
    assert types(events) == ONE_TURN * 2
    return sid, events


@pytest.mark.parametrize("cut", [0, 5, 11, 17])
def test_last_event_id_resumes_with_exactly_the_missed_events(client, model, cut):
    """Issue 3: events are "persisted, and **replayed from `Last-Event-ID` after a reconnect**"."""
    sid, events = _two_turns(client, model)
    missed = events[cut + 1 :]
    with client.beta.agents.sessions.events.stream(
        sid, extra_headers={"Last-Event-ID": events[cut].event_id}, timeout=STREAM_TIMEOUT
    ) as stream:
        resumed = [e for _, e in zip(missed, stream)]
    assert [e.to_dict() for e in resumed] == [e.to_dict() for e in missed]


def test_a_resumed_stream_goes_on_with_live_events(client, model):
    sid, events = _two_turns(client, model)
    model.script(reply("seven", chunks=3))
    with client.beta.agents.sessions.events.stream(
        sid, extra_headers={"Last-Event-ID": events[-3].event_id}, timeout=STREAM_TIMEOUT
    ) as stream:
        replayed = [next(stream), next(stream)]
        send(client, sid, "third")
        live = collect(stream, is_idle)
    assert [e.to_dict() for e in replayed] == [e.to_dict() for e in events[-2:]]
    assert types(live) == ONE_TURN
    check_ids(events + live)


def test_the_sse_frames_carry_the_event_id_and_type_for_resumption(client, model, url, bootstrap_key):
    """Raw SSE: each frame has `id:` (what an EventSource sends back as Last-Event-ID) and `event:`."""
    sid, events = _two_turns(client, model)
    frames: list[dict[str, str]] = []
    headers = {"Authorization": f"Bearer {bootstrap_key}", "OpenAI-Beta": "agents=v1", "Accept": "text/event-stream",
               "Last-Event-ID": events[8].event_id}
    with httpx2.stream("GET", f"{url}/v1/agents/sessions/{sid}/events", headers=headers, timeout=STREAM_TIMEOUT) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        frame: dict[str, str] = {}
        for line in r.iter_lines():
            if line == "":
                if frame:
                    frames.append(frame)
                    frame = {}
                if len(frames) == len(events) - 9:
                    break
                continue
            if line.startswith(":"):
                continue  # a keep-alive comment
            field, _, value = line.partition(":")
            frame[field] = value.removeprefix(" ")
    expected = events[9:]
    assert [f["id"] for f in frames] == [e.event_id for e in expected]
    assert [f["event"] for f in frames] == [e.type for e in expected]
    assert [json.loads(f["data"]) for f in frames] == [e.to_dict() for e in expected]


def test_an_unknown_last_event_id_is_a_bad_request(client, url, bootstrap_key):
    sid = new_session(client)
    with pytest.raises(openai.BadRequestError) as e:
        client.beta.agents.sessions.events.stream(sid, extra_headers={"Last-Event-ID": "not-an-event"})
    assert error_of(e.value)["param"] == "Last-Event-ID"
    r = raw("GET", f"{url}/v1/agents/sessions/{sid}/events", bootstrap_key, headers={"Last-Event-ID": "evt_x"})
    assert r.status_code == 400


def test_events_of_other_sessions_never_reach_a_stream(client, model):
    model.script(reply("for a", chunks=3), reply("for b", chunks=3))
    a, b = new_session(client), new_session(client)
    with client.beta.agents.sessions.events.stream(a, timeout=STREAM_TIMEOUT) as stream:
        send(client, b, "to b")
        wait_turn(client, b, only_turn(client, b).id)
        send(client, a, "to a")
        events = collect(stream, is_idle)
    assert types(events) == ONE_TURN
    assert {e.session_id for e in events if hasattr(e, "session_id")} == {a}
    assert len(turns(client, a)) == 1
