"""Issue 15, item 3: a model's reasoning. Whatever the provider (Chat
Completions `reasoning_content`, Anthropic signed `thinking` blocks, the
Responses API's `reasoning` items) the model's reasoning becomes a `reasoning`
item streamed as `reasoning_summary_*` events, shown in a response's output,
and sent back to a provider that needs it on the next step; the rest of a
request's settings (`text.format` json_object, sampling, verbosity, reasoning
summary, service tier) reach the provider in its own words."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from openai.types.beta import (
    AgentReasoningItem,
    AgentSessionTurnReasoningSummaryPartAddedEvent,
    AgentSessionTurnReasoningSummaryTextDeltaEvent,
    AgentSessionTurnReasoningSummaryTextDoneEvent,
)

from harness import api_client, conforms
from scripted import NONE, NOW_TOOL, STREAM_TIMEOUT, call, collect, reply, types

THOUGHT = "The user wants the capital. It is Paris."

REASONING_EVENTS = [
    "agent.session.turn.item.added",  # the reasoning, in progress
    "agent.session.turn.reasoning_summary_part.added",
    "agent.session.turn.reasoning_summary_text.delta",
    "agent.session.turn.reasoning_summary_text.delta",
    "agent.session.turn.reasoning_summary_text.delta",
    "agent.session.turn.reasoning_summary_text.done",
    "agent.session.turn.reasoning_summary_part.done",
    "agent.session.turn.item.done",
]


def stream_turn(client: Any, model_name: str = "gpt-test", **agent: Any) -> list[Any]:
    """One turn of a new session, its `now` calls answered, streamed to the end."""
    with client.beta.agents.sessions.create(environment=NONE, agent={"model": model_name, **agent},
                                            input="Capital of France?", stream=True,
                                            tool_handlers={"now": lambda _args: "noon"}, timeout=STREAM_TIMEOUT) as s:
        return collect(s, lambda e: e.type == "agent.session.idle")


def check_reasoning(events: list[Any]) -> AgentReasoningItem:
    """The reasoning streams as one item, before the answer, and is whole when done."""
    kinds = types(events)
    start = kinds.index("agent.session.turn.reasoning_summary_part.added") - 1
    assert kinds[start:start + len(REASONING_EVENTS)] == REASONING_EVENTS
    assert kinds.index("agent.session.turn.output_text.delta") > start + len(REASONING_EVENTS)
    for e in events:
        conforms(e)
    added = next(e for e in events if isinstance(e, AgentSessionTurnReasoningSummaryPartAddedEvent))
    deltas = [e for e in events if isinstance(e, AgentSessionTurnReasoningSummaryTextDeltaEvent)]
    done = next(e for e in events if isinstance(e, AgentSessionTurnReasoningSummaryTextDoneEvent))
    assert "".join(d.delta for d in deltas) == done.text == THOUGHT
    assert {d.item_id for d in deltas} == {added.item_id, done.item_id}
    item = next(e.item for e in events if e.type == "agent.session.turn.item.done" and e.item.type == "reasoning")
    assert isinstance(item, AgentReasoningItem)
    assert (item.id, item.status, [s.text for s in item.summary]) == (added.item_id, "completed", [THOUGHT])
    return item


def test_chat_completions_reasoning_streams_as_a_reasoning_item_and_is_listed(client, model):
    model.script(reply("Paris", reasoning=THOUGHT, chunks=3))
    events = stream_turn(client)
    item = check_reasoning(events)
    sid = events[-1].session.id
    listed = [i for i in client.beta.agents.sessions.items.list(sid) if i.type == "reasoning"]
    assert [i.to_dict() for i in listed] == [item.to_dict()]


def test_a_responses_stream_carries_the_reasoning_summary_and_the_output_shows_it(client, model):
    model.script(reply("Paris", reasoning=THOUGHT, chunks=3))
    with client.responses.create(model="gpt-test", input="Capital of France?", stream=True,
                                 timeout=STREAM_TIMEOUT) as stream:
        events = list(stream)
    kinds = [e.type for e in events]
    assert kinds[2:11] == [
        "response.output_item.added",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
        "response.reasoning_summary_part.done",
        "response.output_item.done",
        "response.output_item.added",
    ]
    assert "".join(e.delta for e in events if e.type == "response.reasoning_summary_text.delta") == THOUGHT
    final = events[-1].response
    assert final.output[0].type == "reasoning"
    assert [s.text for s in final.output[0].summary] == [THOUGHT]
    assert final.output_text == "Paris"
    assert client.responses.retrieve(final.id).output[0].to_dict() == final.output[0].to_dict()


def provider_config(tmp_path: Path, model: Any) -> dict[str, str]:
    """A rebyte.toml routing `claude-think` to Anthropic and `deep` to the
    Responses API, both at the scripted model server."""
    config = tmp_path / "rebyte.toml"
    config.write_text(f"""
[providers.anthropic]
base_url = "{model.url}"
api_key_env = "OPENAI_API_KEY"

[providers.responses]
kind = "openai_responses"
base_url = "{model.base_url}"
api_key_env = "OPENAI_API_KEY"

[models."deep"]
provider = "responses"
""")
    return {"REBYTE_CONFIG": str(config)}


def test_anthropic_thinking_is_sent_back_signed_on_the_next_step(servers, model, tmp_path):
    srv = servers(**provider_config(tmp_path, model))
    client = api_client(srv.bootstrap_key, srv.url)
    model.script(call("now", text="", reasoning=THOUGHT, chunks=3), reply("Paris"))
    check_reasoning(stream_turn(client, "claude-think", tools=[NOW_TOOL], reasoning={"effort": "medium"}))
    first, second = model.requests()
    assert first["path"] == second["path"] == "/v1/messages"
    assert first["body"]["thinking"] == {"type": "enabled", "budget_tokens": 4096}
    assistant = next(m for m in second["body"]["messages"] if m["role"] == "assistant")
    thinking = assistant["content"][0]
    assert (thinking["type"], thinking["thinking"]) == ("thinking", THOUGHT)
    assert thinking["signature"].startswith("sig_scripted_")
    assert [b["type"] for b in assistant["content"]][1:] == ["tool_use"]


def test_the_responses_api_provider_gets_its_encrypted_reasoning_back(servers, model, tmp_path):
    srv = servers(**provider_config(tmp_path, model))
    client = api_client(srv.bootstrap_key, srv.url)
    model.script(call("now", reasoning=THOUGHT, chunks=3), reply("Paris"))
    events = stream_turn(client, "deep", tools=[NOW_TOOL], reasoning={"effort": "high", "summary": "detailed"},
                         text={"verbosity": "low"})
    item = check_reasoning(events)
    first, second = model.requests()
    assert first["path"] == "/v1/responses"
    body = first["body"]
    assert (body["store"], body["reasoning"], body["text"]["verbosity"]) == (
        False, {"effort": "high", "summary": "detailed"}, "low")
    assert body["include"] == ["reasoning.encrypted_content"]
    sent = next(i for i in second["body"]["input"] if i["type"] == "reasoning")
    assert sent["encrypted_content"].startswith("enc_scripted_")
    assert sent["id"].startswith("rs_scripted_")
    assert item.to_dict()["encrypted_content"] == sent["encrypted_content"]


def test_json_object_and_sampling_settings_reach_chat_completions(client, model):
    model.script(reply('{"city": "Paris"}'))
    r = client.responses.create(model="gpt-test", input="Capital?", text={"format": {"type": "json_object"},
                                "verbosity": "high"}, temperature=0.2, top_p=0.5, service_tier="flex",
                                reasoning={"effort": "low", "summary": "concise"})
    assert r.output_text == '{"city": "Paris"}'
    body = model.bodies()[-1]
    assert body["response_format"] == {"type": "json_object"}
    assert (body["temperature"], body["top_p"], body["verbosity"], body["service_tier"]) == (0.2, 0.5, "high", "flex")
    assert body["reasoning_effort"] == "low"
