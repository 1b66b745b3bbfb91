"""`client.beta.agents.sessions`: create (with `agent_id`, an inline `agent`,
or both), retrieve, update, list with filters, delete. A session pins the
agent version current at its creation."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from harness import UUID_RE, assert_recent, conforms, error_of

NONE = {"type": "none"}
TOOL = {"type": "function", "name": "get_weather", "description": "Weather by city.", "parameters": {"type": "object"}}


def session_agent(**fields: Any) -> dict[str, Any]:
    """The whole `agent` of an AgentSession: the documented defaults, then `fields`."""
    base = {
        "id": "agent_inline",
        "version": None,
        "name": None,
        "instructions": None,
        "model": "gpt-test",
        "multi_agent": {"enabled": False, "max_concurrent_subagents": None},
        "reasoning": {"effort": None, "summary": None},
        "service_tier": "auto",
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tools": [],
        "compaction": None,
        "experimental": None,
        # Rebyte extension (issue 3): the agent's model-step limit per turn, shown with its default.
        "max_steps": 50,
    }
    base.update(fields)
    return base


def expected_session(session: dict[str, Any], agent: dict[str, Any], **fields: Any) -> dict[str, Any]:
    base = {
        "id": session["id"],
        "object": "agent.session",
        "agent": agent,
        "created_at": session["created_at"],
        "last_active_at": session["last_active_at"],
        "environment": {"type": "none"},
        "error": None,
        "metadata": {},
        "required_actions": [],
        "status": "idle",
        "usage": None,
        "vault_ids": [],
        "prompt_cache_options": None,
        "review": "none",
    }
    base.update(fields)
    return base


def test_create_with_an_inline_agent_returns_the_whole_session(client):
    """DESIGN §3: "a session with `environment: {"type":"none"}` may be created without `input`"."""
    session = conforms(client.beta.agents.sessions.create(environment=NONE, agent={"model": "gpt-test"}))
    assert UUID_RE.match(session["id"])
    assert_recent(session["created_at"])
    assert session == expected_session(session, session_agent())


def test_create_with_an_inline_agent_keeps_every_setting(client):
    session = client.beta.agents.sessions.create(
        environment=NONE,
        agent={
            "model": "gpt-inline",
            "instructions": "Be terse.",
            "reasoning": {"effort": "minimal"},
            "service_tier": "fast",
            "text": {"verbosity": "high"},
            "tools": [TOOL],
            "compaction": {"async_": False},
            "experimental": {"time_awareness": True},
        },
        metadata={"user": "u-1"},
        review="auto_review",
        prompt_cache_options={"ttl": "12h"},
        vault_ids=[],
    )
    body = conforms(session)
    assert body == expected_session(
        body,
        session_agent(
            model="gpt-inline",
            instructions="Be terse.",
            reasoning={"effort": "minimal", "summary": None},
            service_tier="fast",
            text={"format": {"type": "text"}, "verbosity": "high"},
            tools=[{**TOOL, "defer_loading": False}],
            compaction={"async": False},
            experimental={"time_awareness": True},
        ),
        metadata={"user": "u-1"},
        review="auto_review",
        prompt_cache_options={"ttl": "12h"},
    )


def test_create_with_agent_id_snapshots_the_saved_agent(client):
    agent = client.beta.agents.create(
        model="gpt-saved", name="Saved", instructions="Saved instructions.", tools=[TOOL], reasoning={"effort": "low"}
    )
    session = conforms(client.beta.agents.sessions.create(environment=NONE, agent_id=agent.id))
    assert session["agent"] == session_agent(
        id=agent.id,
        version=1,
        name="Saved",
        model="gpt-saved",
        instructions="Saved instructions.",
        tools=[{**TOOL, "defer_loading": False}],
        reasoning={"effort": "low", "summary": None},
    )


def test_create_with_agent_id_and_agent_overrides_the_saved_fields_for_this_session_only(client):
    """SessionCreateParams.agent: "With `agent_id`, supplied fields override the saved agent for this session." """
    agent = client.beta.agents.create(model="gpt-saved", name="Base", instructions="Base.", tools=[TOOL])
    session = client.beta.agents.sessions.create(
        environment=NONE,
        agent_id=agent.id,
        agent={"model": "gpt-override", "instructions": "Override.", "service_tier": "priority"},
    )
    assert conforms(session)["agent"] == session_agent(
        id=agent.id,
        version=1,
        name="Base",
        model="gpt-override",
        instructions="Override.",
        service_tier="priority",
        tools=[{**TOOL, "defer_loading": False}],
    )
    cleared = client.beta.agents.sessions.create(
        environment=NONE, agent_id=agent.id, agent={"instructions": None, "tools": None}
    )
    assert (cleared.agent.instructions, cleared.agent.tools) == (None, [])
    assert conforms(client.beta.agents.retrieve(agent.id))["instructions"] == "Base.", "the saved agent is unchanged"


def test_create_with_agent_id_merges_experimental_overrides_by_key(client):
    """SessionCreateParams.agent.experimental: "Experimental settings to merge by key. Omitted settings keep their
    current values." """
    agent = client.beta.agents.create(model="gpt-test", experimental={"time_awareness": True})
    session = client.beta.agents.sessions.create(environment=NONE, agent_id=agent.id, agent={"experimental": {}})
    assert conforms(session)["agent"]["experimental"] == {"time_awareness": True}


def test_session_pins_the_agent_version_current_at_its_creation(client):
    """Spec: "Updating the Agent affects new Conversations. Existing Conversations keep their creation-time
    snapshot." """
    agent = client.beta.agents.create(model="gpt-v1", name="Pinned", instructions="Version one.")
    old = conforms(client.beta.agents.sessions.create(environment=NONE, agent_id=agent.id))
    client.beta.agents.update(agent.id, model="gpt-v2", name="Renamed", instructions="Version two.", tools=[TOOL])
    new = conforms(client.beta.agents.sessions.create(environment=NONE, agent_id=agent.id))

    assert conforms(client.beta.agents.sessions.retrieve(old["id"])) == old
    assert old["agent"] == session_agent(
        id=agent.id, version=1, name="Pinned", model="gpt-v1", instructions="Version one."
    ), "AgentSession.agent.name: 'Later changes to the agent's name do not affect this value.'"
    assert new["agent"] == session_agent(
        id=agent.id,
        version=2,
        name="Renamed",
        model="gpt-v2",
        instructions="Version two.",
        tools=[{**TOOL, "defer_loading": False}],
    )


def test_deleting_the_agent_deletes_no_session(client):
    """Issue 2: "Deleting an agent deletes no session." """
    agent = client.beta.agents.create(model="gpt-test", name="short-lived")
    sessions = [conforms(client.beta.agents.sessions.create(environment=NONE, agent_id=agent.id)) for _ in range(2)]
    client.beta.agents.delete(agent.id)
    for s in sessions:
        assert conforms(client.beta.agents.sessions.retrieve(s["id"])) == s
    listed = [s.id for s in client.beta.agents.sessions.list(agent_id=agent.id)]
    assert listed == [s["id"] for s in sessions][::-1]
    with pytest.raises(openai.APIStatusError) as e:
        client.beta.agents.sessions.create(environment=NONE, agent_id=agent.id)
    assert e.value.status_code in (400, 404)
    err = error_of(e.value)
    assert err["param"] == "agent_id" or agent.id in err["message"]


def test_retrieve_returns_the_same_object_as_create(client):
    created = conforms(client.beta.agents.sessions.create(environment=NONE, agent={"model": "gpt-test"}, metadata={"a": "b"}))
    assert conforms(client.beta.agents.sessions.retrieve(created["id"])) == created


def test_update_replaces_metadata_and_null_or_empty_clears_it(client):
    """SessionUpdateParams.metadata: "Replaces all metadata. Omit to leave unchanged, or pass null or {} to clear it." """
    s = client.beta.agents.sessions.create(environment=NONE, agent={"model": "gpt-test"}, metadata={"a": "1", "b": "2"})
    before = conforms(s)
    replaced = conforms(client.beta.agents.sessions.update(s.id, metadata={"c": "3"}))
    assert replaced == {**before, "metadata": {"c": "3"}, "last_active_at": replaced["last_active_at"]}
    assert client.beta.agents.sessions.update(s.id, review="none").metadata == {"c": "3"}, "omitted: unchanged"
    assert client.beta.agents.sessions.update(s.id, metadata=None).metadata == {}
    client.beta.agents.sessions.update(s.id, metadata={"d": "4"})
    assert client.beta.agents.sessions.update(s.id, metadata={}).metadata == {}
    assert conforms(client.beta.agents.sessions.retrieve(s.id))["metadata"] == {}


def test_update_changes_the_sessions_agent_settings_but_not_the_saved_agent(client):
    """SessionUpdateParams.agent: "Agent settings to update on this session. Omitted fields stay unchanged." """
    agent = client.beta.agents.create(model="gpt-saved", tools=[TOOL], service_tier="flex")
    s = client.beta.agents.sessions.create(environment=NONE, agent_id=agent.id)
    updated = conforms(
        client.beta.agents.sessions.update(
            s.id,
            agent={"model": "gpt-later", "reasoning": {"effort": "high"}, "tools": []},
            review="auto_review",
            prompt_cache_options={"ttl": "30m"},
        )
    )
    assert updated["agent"] == session_agent(
        id=agent.id, version=1, model="gpt-later", reasoning={"effort": "high", "summary": None}, service_tier="flex"
    )
    assert (updated["review"], updated["prompt_cache_options"]) == ("auto_review", {"ttl": "30m"})
    reset = client.beta.agents.sessions.update(s.id, agent={"service_tier": None}, prompt_cache_options=None)
    assert (reset.agent.service_tier, reset.prompt_cache_options) == ("auto", None), "null resets the tier to auto"
    saved = conforms(client.beta.agents.retrieve(agent.id))
    assert (saved["model"], saved["service_tier"], saved["version"], len(saved["tools"])) == ("gpt-saved", "flex", 1, 1)


def test_delete_answers_session_deleted_and_the_session_is_gone(client):
    s = client.beta.agents.sessions.create(environment=NONE, agent={"model": "gpt-test"})
    assert conforms(client.beta.agents.sessions.delete(s.id)) == {
        "id": s.id,
        "object": "agent.session.deleted",
        "deleted": True,
    }
    for call in (
        lambda: client.beta.agents.sessions.retrieve(s.id),
        lambda: client.beta.agents.sessions.update(s.id, metadata={"x": "y"}),
        lambda: client.beta.agents.sessions.delete(s.id),
    ):
        with pytest.raises(openai.NotFoundError):
            call()


def _sessions(client, n: int, **kwargs: Any) -> list[str]:
    return [client.beta.agents.sessions.create(environment=NONE, **kwargs).id for _ in range(n)]


def test_auto_pagination_walks_every_page_in_both_orders(org_client):
    ids = _sessions(org_client, 7, agent={"model": "gpt-test"})
    assert [s.id for s in org_client.beta.agents.sessions.list(limit=3)] == ids[::-1]
    assert [s.id for s in org_client.beta.agents.sessions.list(limit=3, order="asc")] == ids
    page = org_client.beta.agents.sessions.list(limit=3, order="asc")
    assert (page.first_id, page.last_id, page.has_more) == (ids[0], ids[2], True)
    for item in page.data:
        conforms(item)


def test_list_filters_by_agent_id(org_client):
    """SessionListParams.agent_id: "Only return sessions whose root agent has this ID." """
    a = org_client.beta.agents.create(model="gpt-test").id
    b = org_client.beta.agents.create(model="gpt-test").id
    of_a = _sessions(org_client, 4, agent_id=a)
    of_b = _sessions(org_client, 2, agent_id=b)
    _sessions(org_client, 1, agent={"model": "gpt-test"})
    assert [s.id for s in org_client.beta.agents.sessions.list(agent_id=a, limit=3, order="asc")] == of_a
    assert [s.id for s in org_client.beta.agents.sessions.list(agent_id=b)] == of_b[::-1]
    assert org_client.beta.agents.sessions.list(agent_id="agent_" + "0" * 32).data == []


def test_list_filters_by_metadata_and_every_pair_must_match(org_client):
    """SessionListParams.metadata: "Exact string matches supplied as `metadata[key]=value`. All supplied pairs must
    match." """
    inline = {"model": "gpt-test"}
    both = _sessions(org_client, 3, agent=inline, metadata={"team": "red", "env": "prod", "ключ": "значение 🔥"})
    red_only = _sessions(org_client, 1, agent=inline, metadata={"team": "red", "env": "dev"})
    _sessions(org_client, 1, agent=inline, metadata={"team": "blue"})
    sessions = org_client.beta.agents.sessions
    assert [s.id for s in sessions.list(metadata={"team": "red"}, order="asc")] == both + red_only
    assert [s.id for s in sessions.list(metadata={"team": "red", "env": "prod"}, limit=2, order="asc")] == both
    assert [s.id for s in sessions.list(metadata={"ключ": "значение 🔥"})] == both[::-1]
    assert sessions.list(metadata={"team": "Red"}).data == [], "exact, case-sensitive match"
    agent = org_client.beta.agents.create(model="gpt-test").id
    tagged = _sessions(org_client, 1, agent_id=agent, metadata={"team": "red"})
    assert [s.id for s in sessions.list(agent_id=agent, metadata={"team": "red"})] == tagged


def test_a_metadata_update_is_visible_to_the_filter(org_client):
    s = org_client.beta.agents.sessions.create(environment=NONE, agent={"model": "gpt-test"}, metadata={"stage": "new"})
    org_client.beta.agents.sessions.update(s.id, metadata={"stage": "done"})
    assert org_client.beta.agents.sessions.list(metadata={"stage": "new"}).data == []
    assert [x.id for x in org_client.beta.agents.sessions.list(metadata={"stage": "done"})] == [s.id]


def test_unicode_round_trips_in_instructions_and_metadata(client):
    metadata = {"ユーザー": "山田 太郎", "emoji 🧭": "🚀" * 512, "x" * 64: "ZWJ 👨‍💻"}
    instructions = "Говори по-русски. 用中文回答。 🎯\n\u202eRTL override\u202c"
    s = client.beta.agents.sessions.create(
        environment=NONE, agent={"model": "modèle-ü", "instructions": instructions}, metadata=metadata
    )
    body = conforms(client.beta.agents.sessions.retrieve(s.id))
    assert (body["agent"]["model"], body["agent"]["instructions"], body["metadata"]) == ("modèle-ü", instructions, metadata)


def test_a_self_hosted_environment_answers_a_clear_unsupported_400(org_client):
    """A self-hosted sandbox attachment is not offered (spec: "It does not add … a self-hosted Sandbox
    attachment API")."""
    with pytest.raises(openai.BadRequestError) as e:
        org_client.beta.agents.sessions.create(environment={"type": "self_hosted"}, agent={"model": "gpt-test"})
    err = error_of(e.value)
    assert (err["code"], err["param"]) == ("unsupported", "environment.type")
    assert "self_hosted" in err["message"]
    assert org_client.beta.agents.sessions.list().data == []


def test_an_inline_openai_hosted_environment_is_created_with_the_session(org_client):
    """Issue 4: an inline `openai_hosted` environment is private, owned by the session, its id in the session
    resource; the session's `environment` parses as the client's EnvironmentResourceOpenAIHosted."""
    s = org_client.beta.agents.sessions.create(environment={"type": "openai_hosted"}, agent={"model": "gpt-test"})
    body = conforms(s)
    env = body["environment"]
    assert env["type"] == "openai_hosted" and env["id"].startswith("env_")
    assert (env["files"], env["network"]["access"]) == ([], "disabled")
    assert conforms(org_client.beta.agents.sessions.retrieve(s.id))["environment"] == env
    info = org_client.beta.agents.environments.retrieve(env["id"])
    assert (info.id, info.status, info.to_dict()["lifetime"]) == (env["id"], "pending", "private")
    org_client.beta.agents.sessions.delete(s.id)
    with pytest.raises(openai.NotFoundError):
        org_client.beta.agents.environments.retrieve(env["id"])


def test_a_reference_environment_attaches_an_existing_environment(org_client):
    """Rebyte extension `{"type": "reference", "environment_id"}`: the session shows the resolved
    `openai_hosted` environment with the same id; an unknown id is 404 and writes nothing."""
    env = org_client.beta.agents.environments.create(environment={"type": "openai_hosted"})
    s = org_client.beta.agents.sessions.create(
        environment={"type": "reference", "environment_id": env.id}, agent={"model": "gpt-test"}
    )
    assert (s.environment.type, s.environment.id) == ("openai_hosted", env.id)
    conforms(s)
    with pytest.raises(openai.NotFoundError) as e:
        org_client.beta.agents.sessions.create(
            environment={"type": "reference", "environment_id": "env_123"}, agent={"model": "gpt-test"}
        )
    assert "env_123" in error_of(e.value)["message"]
    assert [x.id for x in org_client.beta.agents.sessions.list()] == [s.id]


def test_an_inline_agent_without_agent_id_needs_a_model(client):
    """SessionCreateParams.agent: "Without `agent_id`, `model` is required." """
    for kwargs in ({}, {"agent": {"instructions": "no model"}}):
        with pytest.raises(openai.BadRequestError) as e:
            client.beta.agents.sessions.create(environment=NONE, **kwargs)
        assert error_of(e.value)["param"] == "agent.model"


def _first_event(client, session_id: str):
    """The session's first event, replayed from the start of its stream (`Last-Event-ID` before any event)."""
    from scripted import STREAM_TIMEOUT

    with client.beta.agents.sessions.events.stream(
        session_id, extra_headers={"Last-Event-ID": "evt_0000000000000000000"}, timeout=STREAM_TIMEOUT
    ) as stream:
        return next(iter(stream))


def test_every_way_of_creating_a_session_announces_it(org_client, model):
    """Issue 11: sessions, conversations and responses create a session through one function, and each emits
    `agent.session.created` carrying the new session."""
    from scripted import reply

    made = org_client.beta.agents.sessions.create(agent={"model": "gpt-test"}, environment={"type": "none"})
    conversation = org_client.conversations.create(metadata={"via": "conversations"})
    model.script(reply("hello"))
    response = org_client.responses.create(model="gpt-test", input="hi")
    assert response.status == "completed"
    by_conversation = conversation.id.removeprefix("conv_")
    [by_responses] = [s.id for s in org_client.beta.agents.sessions.list().data if s.id not in (made.id, by_conversation)]
    for sid in (made.id, by_conversation, by_responses):
        first = _first_event(org_client, sid)
        assert (first.type, first.session.id) == ("agent.session.created", sid)
