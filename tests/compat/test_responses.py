"""Issue 3, the Responses view: `client.responses` over the same rows as
sessions and turns (`conv_<uuid>` = session `<uuid>`, `resp_<uuid>` = turn
`<uuid>`), and `client.conversations.items`."""

from __future__ import annotations

import time
from typing import Any

import openai
import pytest

from harness import CONV_ID_RE, assert_recent, conforms
from scripted import NONE, STREAM_TIMEOUT, call, reply, wait_until

USAGE = {
    "input_tokens": 0,
    "input_tokens_details": {"cache_write_tokens": 0, "cached_tokens": 0},
    "output_tokens": 0,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 0,
}
# A two-delta answer's stream.
STREAM_TYPES = [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.content_part.added",
    "response.output_text.delta",
    "response.output_text.delta",
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
    "response.completed",
]
TOOL = {
    "type": "function",
    "name": "now",
    "description": "The current time",
    "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}},
    "strict": False,
}


def expected_response(resp: dict[str, Any], conversation: str, **fields: Any) -> dict[str, Any]:
    assert_recent(int(resp["created_at"]))
    base = {
        "id": resp["id"],
        "object": "response",
        "created_at": resp["created_at"],
        "completed_at": resp["completed_at"],
        "status": "completed",
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "model": "gpt-test",
        "output": [],
        "parallel_tool_calls": True,
        "temperature": None,
        "tool_choice": "auto",
        "tools": [],
        "top_p": None,
        "max_output_tokens": None,
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "reasoning": {"effort": None, "summary": None},
        "service_tier": "auto",
        "background": False,
        "conversation": {"id": conversation},
        "usage": USAGE,
    }
    base.update(fields)
    return base


def answer(item: dict[str, Any], text: str) -> dict[str, Any]:
    """An output message item of a response."""
    return {
        "id": item["id"],
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
        "phase": "final_answer",
    }


def user_item(item: dict[str, Any], text: str) -> dict[str, Any]:
    return {"id": item["id"], "type": "message", "role": "user", "status": "completed",
            "content": [{"type": "input_text", "text": text}]}


def new_conversation(client, **agent: Any) -> tuple[str, str]:
    """A session with its own agent; answers (session id, conversation id)."""
    sid = client.beta.agents.sessions.create(environment=NONE, agent={"model": "gpt-test", **agent}).id
    return sid, f"conv_{sid}"


def test_responses_create_in_a_conversation_runs_the_sessions_agent(client, model):
    model.script(reply("Oslo, then Paris.", chunks=2))
    sid, conv = new_conversation(client, instructions="Be terse.")
    resp = client.responses.create(model="ignored-model", conversation=conv, input="List the cities")
    assert resp.output_text == "Oslo, then Paris."
    body = conforms(resp)
    assert body == expected_response(
        body, conv, instructions="Be terse.", output=[answer(body["output"][0], "Oslo, then Paris.")]
    )
    assert body["completed_at"] >= body["created_at"]
    [sent] = model.bodies()
    assert sent["model"] == "gpt-test", "DESIGN §3: the conversation's agent snapshot runs; the request model is ignored"
    assert sent["messages"] == [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "List the cities"}]

    turn = client.beta.agents.sessions.turns.retrieve(resp.id.removeprefix("resp_"), session_id=sid)
    assert (turn.status, turn.created_at) == ("completed", int(resp.created_at)), "resp_<uuid> is turn <uuid>"
    items = client.beta.agents.sessions.turns.items.list(turn.id, session_id=sid, order="asc")
    assert [i.id for i in items][-1] == resp.output[0].id, "the response's output items are the turn's items"


def test_responses_create_with_stream_yields_the_responses_event_sequence(client, model):
    model.script(reply("abc def", chunks=2, latency_ms=300))
    _, conv = new_conversation(client)
    events = list(client.responses.create(model="gpt-test", conversation=conv, input="go", stream=True,
                                          timeout=STREAM_TIMEOUT))
    assert [e.type for e in events] == STREAM_TYPES
    for event in events:
        conforms(event)
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == "abc def"
    created, completed = events[0].response, events[-1].response
    assert created.id == completed.id
    assert (created.status in ("queued", "in_progress"), created.output) == (True, [])
    assert (events[1].response.status, events[1].response.output, completed.status) == ("in_progress", [], "completed")
    assert completed.output_text == "abc def"
    assert conforms(client.responses.retrieve(completed.id)) == conforms(completed)


def test_a_streamed_responses_in_progress_event_says_in_progress(client, model):
    """`response.in_progress`: "Emitted when the response is in progress." Ten instant turns, so that the race
    shows (it does in most of them)."""
    statuses = []
    for _ in range(10):
        model.script(reply("abc def", chunks=2))
        _, conv = new_conversation(client)
        events = list(client.responses.create(model="gpt-test", conversation=conv, input="go", stream=True,
                                              timeout=STREAM_TIMEOUT))
        assert events[1].type == "response.in_progress"
        statuses.append(events[1].response.status)
    assert statuses == ["in_progress"] * 10


def test_the_responses_stream_helper_gives_the_final_response(client, model):
    model.script(reply("Helper answer", chunks=3))
    _, conv = new_conversation(client)
    deltas = []
    with client.responses.stream(model="gpt-test", conversation=conv, input="third", timeout=STREAM_TIMEOUT) as stream:
        for event in stream:
            if event.type == "response.output_text.delta":
                deltas.append(event.delta)
        final = stream.get_final_response()
    assert "".join(deltas) == "Helper answer"
    assert (final.output_text, final.status) == ("Helper answer", "completed")
    # get_final_response() is the client's ParsedResponse (it adds `parsed` to text parts): compare the stored one.
    body = conforms(client.responses.retrieve(final.id))
    assert body == expected_response(body, conv, output=[answer(body["output"][0], "Helper answer")])
    assert final.output[0].id == body["output"][0]["id"]


def test_responses_retrieve_returns_the_same_response_as_create(client, model):
    model.script(reply("stored"))
    _, conv = new_conversation(client)
    created = conforms(client.responses.create(model="gpt-test", conversation=conv, input="store this"))
    assert conforms(client.responses.retrieve(created["id"])) == created


def test_responses_cancel_cancels_a_background_response(client, model):
    model.script({"type": "stall"})
    sid, conv = new_conversation(client)
    resp = client.responses.create(model="gpt-test", conversation=conv, input="wait", background=True)
    body = conforms(resp)
    assert body == expected_response(body, conv, status=body["status"], background=True, usage=None)
    assert body["status"] in ("queued", "in_progress") and body["completed_at"] is None
    wait_until(lambda: model.stats()["requests"] == 1, "the model request")
    started = time.monotonic()
    cancelled = conforms(client.responses.cancel(resp.id))
    assert time.monotonic() - started < 2
    assert cancelled["status"] == "cancelled"
    assert (cancelled["id"], cancelled["output"]) == (resp.id, [])
    assert conforms(client.responses.retrieve(resp.id))["status"] == "cancelled"
    assert client.beta.agents.sessions.retrieve(sid).status == "idle"
    wait_until(lambda: model.stats()["aborted"] == 1, "the model request to be dropped")


def test_a_background_response_stays_background_when_retrieved_and_cancelled(client, model):
    model.script({"type": "stall"})
    _, conv = new_conversation(client)
    resp = client.responses.create(model="gpt-test", conversation=conv, input="wait", background=True)
    assert resp.background is True
    try:
        assert client.responses.retrieve(resp.id).background is True
    finally:
        cancelled = client.responses.cancel(resp.id)
    assert cancelled.background is True


def test_responses_input_items_list_shows_what_the_response_was_given(client, model):
    model.script(reply("one"), reply("two"))
    _, conv = new_conversation(client)
    first = client.responses.create(model="gpt-test", conversation=conv, input="first question")
    second = client.responses.create(
        model="gpt-test", conversation=conv,
        input=[{"type": "message", "role": "user", "content": "second question"},
               {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "and more"}]}],
    )
    [only] = [conforms(i) for i in client.responses.input_items.list(first.id)]
    assert only == user_item(only, "first question")
    items = client.responses.input_items.list(second.id, order="asc")
    assert [conforms(i) for i in items] == [
        user_item(items.data[0].to_dict(), "second question"), user_item(items.data[1].to_dict(), "and more")
    ]
    assert [i.id for i in client.responses.input_items.list(second.id)] == [i.id for i in items][::-1]


def test_conversation_items_create_and_list_and_the_model_sees_them(client, model):
    model.script(reply("You are Ada."))
    conv = client.conversations.create()
    added = client.conversations.items.create(
        conv.id,
        items=[
            {"type": "message", "role": "user", "content": "My name is Ada."},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hello Ada."}]},
        ],
    )
    data = [conforms(i) for i in added.data]
    assert data[0] == user_item(data[0], "My name is Ada.")
    assert {k: v for k, v in data[1].items() if k != "phase"} == {
        k: v for k, v in answer(data[1], "Hello Ada.").items() if k != "phase"
    }
    listed = client.conversations.items.list(conv.id, order="asc")
    assert [conforms(i) for i in listed] == data
    assert (listed.first_id, listed.last_id, listed.has_more) == (data[0]["id"], data[1]["id"], False)

    resp = client.responses.create(model="gpt-test", conversation=conv.id, input="Who am I?")
    assert resp.output_text == "You are Ada."
    assert [(m["role"], m["content"]) for m in model.bodies()[-1]["messages"]] == [
        ("user", "My name is Ada."), ("assistant", "Hello Ada."), ("user", "Who am I?")
    ]
    [question] = client.responses.input_items.list(resp.id).data
    newest_first = [i.id for i in client.conversations.items.list(conv.id)]
    assert newest_first == [resp.output[0].id, question.id, data[1]["id"], data[0]["id"]]


def test_function_tools_through_responses_with_a_function_call_output_item(client, model):
    model.script(call("now", {"tz": "UTC"}, id="call_abc"), reply("It is noon."))
    first = client.responses.create(model="gpt-test", input="What time is it?", tools=[TOOL])
    assert CONV_ID_RE.match(first.conversation.id)
    body = conforms(first)
    assert body["status"] == "completed"
    [fc] = body["output"]
    assert {k: v for k, v in fc.items() if k != "status"} == {
        "id": fc["id"], "type": "function_call", "call_id": "call_abc", "name": "now", "arguments": '{"tz":"UTC"}'
    }
    assert body["tools"] == [TOOL]
    tools_sent = model.bodies()[0]["tools"]
    assert tools_sent == [{"type": "function", "function": {"name": "now", "description": "The current time",
                                                           "parameters": TOOL["parameters"]}}]

    second = client.responses.create(
        model="gpt-test",
        conversation=first.conversation.id,
        input=[{"type": "function_call_output", "call_id": "call_abc", "output": "12:00"}],
    )
    assert second.output_text == "It is noon."
    body = conforms(second)
    assert body["status"] == "completed"
    assert [o["type"] for o in body["output"]] == ["function_call", "message"]
    assert body["output"][1] == answer(body["output"][1], "It is noon.")
    assert model.bodies()[-1]["messages"][-1] == {"role": "tool", "tool_call_id": "call_abc", "content": "12:00"}
    inputs = [conforms(i) for i in client.responses.input_items.list(second.id, order="asc")]
    assert inputs[-1] == {"id": inputs[-1]["id"], "type": "function_call_output", "call_id": "call_abc",
                          "output": "12:00", "status": "completed"}


def test_a_response_that_stops_for_a_function_call_is_consistently_completed(client, model):
    """Response.completed_at: "Only present when the status is `completed`" — and then it is present; the
    function_call items of a completed response are completed."""
    model.script(call("now", id="call_x"))
    resp = client.responses.create(model="gpt-test", input="time?", tools=[TOOL])
    try:
        assert resp.status == "completed"
        assert resp.completed_at is not None
        assert resp.output[0].status == "completed"
    finally:
        client.beta.agents.sessions.events.create(
            resp.conversation.id.removeprefix("conv_"), events=[{"type": "agent.session.input.cancel"}]
        )


def test_a_response_whose_model_fails_is_failed_with_the_providers_error(client, model):
    model.script({"type": "error", "status": 400, "body": '{"error":{"message":"bad things"}}'})
    _, conv = new_conversation(client)
    resp = client.responses.create(model="gpt-test", conversation=conv, input="hi")
    assert resp.status == "failed"
    assert "openai" in resp.error.message and "400" in resp.error.message
    assert resp.output_text == ""


def test_a_failed_response_has_an_error_code_the_client_knows(client, model):
    model.script({"type": "error", "status": 400, "body": '{"error":{"message":"bad things"}}'})
    _, conv = new_conversation(client)
    resp = client.responses.create(model="gpt-test", conversation=conv, input="hi")
    assert resp.status == "failed"
    body = conforms(resp)
    # The client-known code, with the turn's own code kept in `type`.
    assert (body["error"]["code"], body["error"]["type"]) == ("invalid_prompt", "invalid_request")
    assert conforms(client.responses.retrieve(resp.id))["error"] == body["error"]


def test_responses_delete_removes_an_ended_response_and_its_items(client, model):
    """Issue 15: `responses.delete` deletes the response and its items from the conversation; a running one is 409."""
    model.script(reply("first"), reply("second"))
    sid, conv = new_conversation(client)
    first = client.responses.create(model="gpt-test", conversation=conv, input="one")
    second = client.responses.create(model="gpt-test", conversation=conv, input="two")
    assert client.responses.delete(first.id) is None
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(first.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.delete(first.id)
    texts = [i.content[0].text for i in client.conversations.items.list(conv, order="asc")]
    assert texts == ["two", "second"], "the deleted response's input and output are gone"
    assert client.responses.retrieve(second.id).output_text == "second"
    # The next turn's history no longer holds what was deleted.
    model.script(reply("third"))
    client.responses.create(model="gpt-test", conversation=conv, input="three")
    sent = [m.get("content") for m in model.requests()[-1]["body"]["messages"]]
    assert "one" not in sent and "first" not in sent and "two" in sent, sent
    # A running response cannot be deleted.
    model.script({"type": "stall"})
    running = client.responses.create(model="gpt-test", conversation=conv, input="wait", background=True)
    with pytest.raises(openai.ConflictError) as e:
        client.with_options(max_retries=0).responses.delete(running.id)
    assert "has not ended" in e.value.body["message"]
    client.responses.cancel(running.id)
    assert client.beta.agents.sessions.retrieve(sid).id == sid
