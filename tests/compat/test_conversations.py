"""`client.conversations`: the Conversations view over the same rows as
Sessions, with `conv_<uuid>` ids."""

from __future__ import annotations

import openai
import pytest

from harness import CONV_ID_RE, assert_recent, conforms, error_of

NONE = {"type": "none"}


def uuid_of(conversation_id: str) -> str:
    assert CONV_ID_RE.match(conversation_id), conversation_id
    return conversation_id.removeprefix("conv_")


def test_create_returns_the_whole_conversation(client):
    conv = conforms(client.conversations.create())
    assert CONV_ID_RE.match(conv["id"])
    assert_recent(conv["created_at"])
    assert conv == {"id": conv["id"], "object": "conversation", "created_at": conv["created_at"], "metadata": {}}


def test_create_keeps_metadata_and_retrieve_returns_the_same_object(client):
    conv = conforms(client.conversations.create(metadata={"customer": "c-42", "channel": "email"}))
    assert conv["metadata"] == {"customer": "c-42", "channel": "email"}
    assert conforms(client.conversations.retrieve(conv["id"])) == conv


def test_a_conversation_is_the_session_with_the_same_uuid(client):
    """Spec: "The lower-level REST API calls the same resource a Session and exposes the UUID without conv_."
    DESIGN §2: "`conv_<uuid>` on `/v1/conversations` … the same row"."""
    conv = conforms(client.conversations.create(metadata={"from": "conversations"}))
    session = conforms(client.beta.agents.sessions.retrieve(uuid_of(conv["id"])))
    assert session["id"] == uuid_of(conv["id"])
    assert (session["object"], session["created_at"], session["metadata"]) == (
        "agent.session",
        conv["created_at"],
        {"from": "conversations"},
    )
    assert (session["status"], session["environment"]) == ("idle", {"type": "none"})
    assert session["id"] in [s.id for s in client.beta.agents.sessions.list(metadata={"from": "conversations"})]


def test_a_session_is_the_conversation_with_conv_prefixed_id(client):
    agent = client.beta.agents.create(model="gpt-test")
    session = conforms(
        client.beta.agents.sessions.create(environment=NONE, agent_id=agent.id, metadata={"from": "sessions"})
    )
    conv = conforms(client.conversations.retrieve(f"conv_{session['id']}"))
    assert conv == {
        "id": f"conv_{session['id']}",
        "object": "conversation",
        "created_at": session["created_at"],
        "metadata": {"from": "sessions"},
    }


def test_a_conversation_update_is_seen_by_the_session_view(client):
    conv = client.conversations.create(metadata={"v": "0"})
    updated = conforms(client.conversations.update(conv.id, metadata={"v": "1"}))
    assert updated == {"id": conv.id, "object": "conversation", "created_at": conv.created_at, "metadata": {"v": "1"}}
    assert client.beta.agents.sessions.retrieve(uuid_of(conv.id)).metadata == {"v": "1"}


def test_a_session_update_is_seen_by_the_conversation_view(client):
    session = client.beta.agents.sessions.create(environment=NONE, agent={"model": "gpt-test"}, metadata={"v": "0"})
    client.beta.agents.sessions.update(session.id, metadata={"v": "1"})
    assert client.conversations.retrieve(f"conv_{session.id}").metadata == {"v": "1"}


def test_the_session_view_can_update_a_conversation_created_through_conversations(client):
    """SessionUpdateParams.metadata: "Replaces all metadata." — the same row, whichever API created it."""
    conv = client.conversations.create(metadata={"v": "0"})
    updated = client.beta.agents.sessions.update(uuid_of(conv.id), metadata={"v": "2"})
    assert updated.metadata == {"v": "2"}
    assert client.conversations.retrieve(conv.id).metadata == {"v": "2"}


def test_update_replaces_metadata_and_null_clears_it(client):
    conv = client.conversations.create(metadata={"a": "1", "b": "2"})
    assert client.conversations.update(conv.id, metadata={"c": "3"}).metadata == {"c": "3"}
    assert conforms(client.conversations.update(conv.id, metadata=None))["metadata"] == {}
    assert client.conversations.retrieve(conv.id).metadata == {}


def test_delete_answers_conversation_deleted_and_removes_the_session(client):
    conv = client.conversations.create()
    deleted = conforms(client.conversations.delete(conv.id))
    assert deleted == {"id": conv.id, "object": "conversation.deleted", "deleted": True}
    with pytest.raises(openai.NotFoundError):
        client.beta.agents.sessions.retrieve(uuid_of(conv.id))
    for call in (
        lambda: client.conversations.retrieve(conv.id),
        lambda: client.conversations.update(conv.id, metadata={"x": "y"}),
        lambda: client.conversations.delete(conv.id),
    ):
        with pytest.raises(openai.NotFoundError) as e:
            call()
        assert error_of(e.value)["type"] == "not_found_error"


def test_deleting_the_session_removes_the_conversation(client):
    session = client.beta.agents.sessions.create(environment=NONE, agent={"model": "gpt-test"})
    client.beta.agents.sessions.delete(session.id)
    with pytest.raises(openai.NotFoundError):
        client.conversations.retrieve(f"conv_{session.id}")


def test_unicode_metadata_round_trips(client):
    metadata = {"名前": "テスト 🎌", "ü" * 64: "ß" * 512, "🧪": "\u0000 nul and \u2028 separator"}
    conv = client.conversations.create(metadata=metadata)
    assert conforms(client.conversations.retrieve(conv.id))["metadata"] == metadata
    assert client.beta.agents.sessions.retrieve(uuid_of(conv.id)).metadata == metadata


@pytest.mark.parametrize(
    "metadata, param",
    [
        ({f"k{i}": "v" for i in range(17)}, "metadata"),
        ({"k" * 65: "v"}, "metadata." + "k" * 65),
        ({"k": "v" * 513}, "metadata.k"),
    ],
    ids=["17-pairs", "65-char-key", "513-char-value"],
)
def test_metadata_over_its_limits_is_refused_on_create_and_update(org_client, metadata, param):
    """Conversation.metadata: "Set of 16 key-value pairs … Keys are strings with a maximum length of 64 characters.
    Values are strings with a maximum length of 512 characters." """
    with pytest.raises(openai.BadRequestError) as e:
        org_client.conversations.create(metadata=metadata)
    assert error_of(e.value)["param"] == param
    assert org_client.beta.agents.sessions.list().data == [], "nothing written on a rejected request"
    conv = org_client.conversations.create(metadata={"keep": "me"})
    with pytest.raises(openai.BadRequestError) as e:
        org_client.conversations.update(conv.id, metadata=metadata)
    assert error_of(e.value)["param"] == param
    assert org_client.conversations.retrieve(conv.id).metadata == {"keep": "me"}


def test_initial_items_become_the_conversations_first_items(org_client):
    """Issue 3 added conversation items (`GET/POST /v1/conversations/{id}/items`); initial items on create are
    stored the same way, without running the model."""
    items = [
        {"type": "message", "role": "user", "content": "Hello"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hi there."}]},
    ]
    conv = org_client.conversations.create(items=items)
    listed = [conforms(i) for i in org_client.conversations.items.list(conv.id, order="asc")]
    assert [(i["role"], i["content"][0]["text"]) for i in listed] == [("user", "Hello"), ("assistant", "Hi there.")]
    assert [(i["type"], i["status"]) for i in listed] == [("message", "completed")] * 2
    session_items = org_client.beta.agents.sessions.items.list(uuid_of(conv.id), order="asc")
    assert [i.id for i in session_items] == [i["id"] for i in listed], "the same rows through the session view"


@pytest.mark.parametrize("bad_id", ["conv_not-a-uuid", "6f1c1f57-6a8e-4c55-9b1a-7d0c4d9b7f10", "conv_"])
def test_malformed_conversation_ids_are_refused_naming_the_id(client, bad_id):
    with pytest.raises(openai.BadRequestError) as e:
        client.conversations.retrieve(bad_id)
    assert error_of(e.value)["param"] == "conversation_id"


def test_an_unknown_conversation_is_not_found(client):
    with pytest.raises(openai.NotFoundError):
        client.conversations.retrieve("conv_6f1c1f57-6a8e-4c55-9b1a-7d0c4d9b7f10")


def test_a_conversation_item_is_retrieved_and_deleted_by_id(org_client):
    """Issue 15: `conversations.items.retrieve` and `.delete`; the delete answers the conversation."""
    c = org_client
    conv = c.conversations.create(
        items=[
            {"type": "message", "role": "user", "content": "keep"},
            {"type": "message", "role": "user", "content": "drop"},
        ]
    )
    listed = list(c.conversations.items.list(conv.id, order="asc"))
    got = c.conversations.items.retrieve(listed[1].id, conversation_id=conv.id)
    assert conforms(got) == conforms(listed[1])
    after = c.conversations.items.delete(listed[1].id, conversation_id=conv.id)
    assert conforms(after)["id"] == conv.id
    assert [i.id for i in c.conversations.items.list(conv.id)] == [listed[0].id]
    with pytest.raises(openai.NotFoundError):
        c.conversations.items.retrieve(listed[1].id, conversation_id=conv.id)
    with pytest.raises(openai.NotFoundError):
        c.conversations.items.delete(listed[1].id, conversation_id=conv.id)
    other = c.conversations.create()
    with pytest.raises(openai.NotFoundError):
        c.conversations.items.retrieve(listed[0].id, conversation_id=other.id)
