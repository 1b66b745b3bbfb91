"""Issue 15, item 6: the rest of Responses. `previous_response_id` continues
a conversation from its latest response; `responses.retrieve(id,
stream=True)` replays a response's events; `input_tokens.count` and the
client's `include` values are refused by name."""

from __future__ import annotations

import openai
import pytest

from harness import error_of
from scripted import STREAM_TIMEOUT, reply
from test_responses import STREAM_TYPES, new_conversation


def test_previous_response_id_continues_the_conversation_of_its_latest_response(client, model):
    model.script(reply("Hello Ada."), reply("You are Ada."))
    first = client.responses.create(model="gpt-test", input="My name is Ada.")
    second = client.responses.create(model="gpt-test", previous_response_id=first.id, input="Who am I?")
    assert second.conversation.id == first.conversation.id
    assert second.output_text == "You are Ada."
    sent = model.bodies()[-1]["messages"]
    assert [m["content"] for m in sent if m["role"] in ("user", "assistant")] == [
        "My name is Ada.", "Hello Ada.", "Who am I?"
    ]


def test_previous_response_id_that_is_not_the_latest_is_a_400_naming_the_latest(client, model):
    model.script(reply("one"), reply("two"))
    first = client.responses.create(model="gpt-test", input="first")
    second = client.responses.create(model="gpt-test", previous_response_id=first.id, input="second")
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model="gpt-test", previous_response_id=first.id, input="fork")
    err = error_of(e.value)
    assert err["param"] == "previous_response_id"
    assert second.id in err["message"] and first.conversation.id in err["message"]
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model="gpt-test", previous_response_id=second.id,
                                conversation=second.conversation.id, input="both")
    assert error_of(e.value)["param"] == "previous_response_id"
    assert len(model.bodies()) == 2, "no refused request reached the model"


def test_previous_response_id_of_another_organization_is_a_404(client, org_client, model):
    model.script(reply("mine"))
    mine = client.responses.create(model="gpt-test", input="private")
    with pytest.raises(openai.NotFoundError) as e:
        org_client.responses.create(model="gpt-test", previous_response_id=mine.id, input="peek")
    err = error_of(e.value)
    assert (err["param"], mine.id in err["message"]) == ("previous_response_id", True)
    with pytest.raises(openai.NotFoundError):
        org_client.responses.create(model="gpt-test", previous_response_id="resp_00000000-0000-4000-8000-000000000000",
                                    input="nothing")


def test_retrieve_with_stream_replays_the_responses_events(client, model):
    model.script(reply("abc def", chunks=2))
    _, conv = new_conversation(client)
    live = list(client.responses.create(model="gpt-test", conversation=conv, input="go", stream=True,
                                        timeout=STREAM_TIMEOUT))
    replayed = list(client.responses.retrieve(live[-1].response.id, stream=True, timeout=STREAM_TIMEOUT))
    assert [e.type for e in replayed] == STREAM_TYPES == [e.type for e in live]
    assert [e.sequence_number for e in replayed] == list(range(len(STREAM_TYPES)))
    assert "".join(e.delta for e in replayed if e.type == "response.output_text.delta") == "abc def"
    assert replayed[-1].response.output_text == "abc def"
    tail = list(client.responses.retrieve(live[-1].response.id, stream=True, starting_after=5, timeout=STREAM_TIMEOUT))
    assert [e.sequence_number for e in tail] == list(range(6, len(STREAM_TYPES)))
    assert [e.type for e in tail] == STREAM_TYPES[6:]


def test_retrieve_with_stream_follows_a_response_that_still_runs(client, model):
    model.script(reply("slow answer", chunks=2, latency_ms=700))
    _, conv = new_conversation(client)
    started = client.responses.create(model="gpt-test", conversation=conv, input="go", background=True)
    events = list(client.responses.retrieve(started.id, stream=True, timeout=STREAM_TIMEOUT))
    assert events[-1].type == "response.completed"
    assert events[-1].response.output_text == "slow answer"
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == "slow answer"


def test_counting_input_tokens_is_refused_by_name(client):
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.input_tokens.count(model="gpt-test", input="How many tokens is this?")
    err = error_of(e.value)
    assert "counting input tokens" in err["message"] and "not supported by this server" in err["message"]


def test_include_values_are_refused_by_name_and_unknown_ones_as_unknown(client, model):
    _, conv = new_conversation(client)
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model="gpt-test", conversation=conv, input="x",
                                include=["message.output_text.logprobs"])
    err = error_of(e.value)
    assert err["param"] == "include"
    assert "message.output_text.logprobs" in err["message"] and "not supported by this server" in err["message"]
    with pytest.raises(openai.BadRequestError) as e:
        client.conversations.items.list(conv, include=["web_search_call.results"])
    assert "web search" in error_of(e.value)["message"]
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model="gpt-test", conversation=conv, input="x", include=["everything"])
    assert "unknown include value 'everything'" in error_of(e.value)["message"]
    assert model.bodies() == [], "nothing refused reached the model"
