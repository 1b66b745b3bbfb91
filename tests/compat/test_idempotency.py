"""Issue 15, item 7: `Idempotency-Key` on the creates (agents, sessions,
environments, vaults, responses). A retry with the same key and body
answers the first result (same id); the same key with another body is a
409; a failed request leaves its key free."""

from __future__ import annotations

import uuid

import openai
import pytest

from harness import error_of
from scripted import NONE, reply
from test_vaults import vault_client  # noqa: F401 (a fixture)


def key() -> dict[str, str]:
    return {"Idempotency-Key": f"key-{uuid.uuid4()}"}


def test_a_retried_create_answers_the_first_result_for_every_resource(client, vault_client, model):  # noqa: F811
    model.script(reply("only once"))
    creates = {
        "agent": lambda h: client.beta.agents.create(model="gpt-test", name="idem", extra_headers=h),
        "session": lambda h: client.beta.agents.sessions.create(environment=NONE, agent={"model": "gpt-test"},
                                                               extra_headers=h),
        "environment": lambda h: client.beta.agents.environments.create(environment={"type": "openai_hosted"},
                                                                       extra_headers=h),
        "vault": lambda h: vault_client.beta.agents.vaults.create(name="idem", extra_headers=h),
        "response": lambda h: client.responses.create(model="gpt-test", input="hi", extra_headers=h),
    }
    for name, create in creates.items():
        headers = key()
        first = create(headers)
        again = create(headers)
        assert again.id == first.id, name
        assert again.to_dict() == first.to_dict(), name
        assert create(key()).id != first.id if name != "response" else True, name
    assert len(model.bodies()) == 1, "the retried response did not run again"
    raw = client.beta.agents.with_raw_response.create(model="gpt-test", extra_headers=(h := key()))
    replay = client.beta.agents.with_raw_response.create(model="gpt-test", extra_headers=h)
    assert (raw.headers.get("idempotent-replayed"), replay.headers.get("idempotent-replayed")) == (None, "true")


def test_the_same_key_with_another_body_is_a_409_and_creates_nothing(client):
    headers = key()
    first = client.beta.agents.create(model="gpt-test", name="first", extra_headers=headers)
    with pytest.raises(openai.ConflictError) as e:
        client.beta.agents.create(model="gpt-test", name="second", extra_headers=headers)
    assert "different request body" in error_of(e.value)["message"]
    names = [a.name for a in client.beta.agents.list(limit=100)]
    assert "second" not in names and first.name in names


def test_a_failed_create_leaves_its_key_free_and_keys_are_per_organization(client, org_client):
    headers = key()
    with pytest.raises(openai.BadRequestError):
        client.beta.agents.create(model="", extra_headers=headers)
    created = client.beta.agents.create(model="gpt-test", extra_headers=headers)
    assert created.model == "gpt-test"
    theirs = org_client.beta.agents.create(model="gpt-test", extra_headers=headers)
    assert theirs.id != created.id, "another organization's key is its own"


def test_a_malformed_key_is_a_400_naming_the_header(client):
    with pytest.raises(openai.BadRequestError) as e:
        client.beta.agents.create(model="gpt-test", extra_headers={"Idempotency-Key": "x" * 300})
    assert error_of(e.value)["param"] == "Idempotency-Key"
