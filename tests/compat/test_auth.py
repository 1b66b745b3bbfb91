"""Keys, scopes and organizations: 401 for a missing, unknown or revoked key;
403 naming the missing scope; 404 for any id of another organization."""

from __future__ import annotations

from typing import Callable

import openai
import pytest
from openai import OpenAI

from harness import ALL_SCOPES, TASK_SCOPES, error_of, new_key, raw

NONE = {"type": "none"}


@pytest.fixture(scope="module")
def resources(client):
    """One agent, one session and one conversation of organization `default`."""
    agent = client.beta.agents.create(model="gpt-test", name="owned by default")
    session = client.beta.agents.sessions.create(environment=NONE, agent_id=agent.id, metadata={"owner": "default"})
    conv = client.conversations.create(metadata={"owner": "default"})
    return {"agent": agent, "session": session, "conv": conv}


def calls(c: OpenAI, r) -> dict[str, Callable[[], object]]:
    """A read and a write of every resource, against the ids in `r`."""
    agent, session, conv = r["agent"].id, r["session"].id, r["conv"].id
    return {
        "agents.list": lambda: c.beta.agents.list(),
        "agents.create": lambda: c.beta.agents.create(model="gpt-test"),
        "agents.retrieve": lambda: c.beta.agents.retrieve(agent),
        "agents.update": lambda: c.beta.agents.update(agent, name="hijacked"),
        "agents.delete": lambda: c.beta.agents.delete(agent),
        "sessions.list": lambda: c.beta.agents.sessions.list(),
        "sessions.create": lambda: c.beta.agents.sessions.create(environment=NONE, agent={"model": "gpt-test"}),
        "sessions.retrieve": lambda: c.beta.agents.sessions.retrieve(session),
        "sessions.update": lambda: c.beta.agents.sessions.update(session, metadata={"owner": "hijacked"}),
        "sessions.delete": lambda: c.beta.agents.sessions.delete(session),
        "conversations.create": lambda: c.conversations.create(),
        "conversations.retrieve": lambda: c.conversations.retrieve(conv),
        "conversations.update": lambda: c.conversations.update(conv, metadata={"owner": "hijacked"}),
        "conversations.delete": lambda: c.conversations.delete(conv),
    }


READS = ["agents.list", "agents.retrieve", "sessions.list", "sessions.retrieve", "conversations.retrieve"]
WRITES = [
    "agents.create",
    "agents.update",
    "agents.delete",
    "sessions.create",
    "sessions.update",
    "sessions.delete",
    "conversations.create",
    "conversations.update",
    "conversations.delete",
]


@pytest.mark.parametrize("call", READS + WRITES)
def test_an_unknown_key_is_401_on_every_endpoint(url, resources, call):
    """Issue 2: "401 for a missing, unknown or revoked key"."""
    with OpenAI(api_key=new_key(), base_url=f"{url}/v1") as wrong:
        with pytest.raises(openai.AuthenticationError) as e:
            calls(wrong, resources)[call]()
    err = error_of(e.value)
    assert (err["type"], err["code"]) == ("authentication_error", "invalid_api_key")


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": ""}, {"Authorization": "Basic dXNlcjpwYXNz"}, {"Authorization": "Bearer not-an-rbk-key"}],
    ids=["no-header", "empty", "basic", "not-rbk"],
)
def test_a_missing_or_malformed_authorization_header_is_401(url, headers):
    r = raw("GET", f"{url}/v1/agents", None, headers=headers)
    assert r.status_code == 401
    assert r.json()["error"]["type"] == "authentication_error"


def test_a_revoked_key_is_401_at_once(admin):
    org = admin.create_org()
    key = admin.create_key(org["id"])
    c = admin.client_for(key["secret"])
    assert c.beta.agents.list().data == []
    revoked = admin.revoke_key(key["id"])
    assert revoked["id"] == key["id"] and revoked["revoked_at"] is not None
    with pytest.raises(openai.AuthenticationError) as e:
        c.beta.agents.list()
    assert error_of(e.value)["code"] == "invalid_api_key"


def test_a_created_key_shows_its_secret_once_and_lists_never_do(admin):
    """Issue 2: "keys stored hashed, never retrievable"."""
    org = admin.create_org()
    key = admin.create_key(org["id"], name="ci")
    assert key["secret"].startswith("rbk_") and len(key["secret"]) >= 36
    assert (key["object"], key["organization_id"], key["name"], key["revoked_at"]) == ("api_key", org["id"], "ci", None)
    assert sorted(key["scopes"]) == TASK_SCOPES, "default scopes are tasks:read and tasks:write"
    listed = next(k for k in admin.list_keys() if k["id"] == key["id"])
    assert listed == {k: v for k, v in key.items() if k != "secret"}
    assert all("secret" not in k and key["secret"] not in str(k) for k in admin.list_keys())


def test_a_read_only_key_reads_but_every_write_is_403_naming_tasks_write(admin, resources):
    """Issue 2: "403 naming the missing scope"."""
    c, _ = admin.new_org_client(["tasks:read"])
    table = calls(c, resources)
    assert c.beta.agents.list().data == [] and c.beta.agents.sessions.list().data == []
    for name in WRITES:
        with pytest.raises(openai.PermissionDeniedError) as e:
            table[name]()
        err = error_of(e.value)
        assert (err["type"], err["code"]) == ("permission_error", "missing_scope"), name
        assert "tasks:write" in err["message"], name


def test_a_write_only_key_is_403_naming_tasks_read_on_every_read(admin, resources):
    c, _ = admin.new_org_client(["tasks:write"])
    table = calls(c, resources)
    for name in READS:
        with pytest.raises(openai.PermissionDeniedError) as e:
            table[name]()
        assert "tasks:read" in error_of(e.value)["message"], name
    assert c.beta.agents.create(model="gpt-test").object == "agent"


def test_the_admin_endpoints_need_the_admin_scope(admin):
    org = admin.create_org()
    tasks_key = admin.create_key(org["id"], ["tasks:read", "tasks:write", "vaults:read", "vaults:write"])
    c = admin.client_for(tasks_key["secret"])
    for call in (
        lambda: c.post("/admin/organizations", body={"name": "nope"}, cast_to=object),
        lambda: c.post("/admin/keys", body={"organization_id": org["id"]}, cast_to=object),
        lambda: c.get("/admin/keys", cast_to=object),
        lambda: c.delete(f"/admin/keys/{tasks_key['id']}", cast_to=object),
    ):
        with pytest.raises(openai.PermissionDeniedError) as e:
            call()
        assert "admin" in error_of(e.value)["message"]


def test_an_admin_key_of_a_new_organization_manages_keys(admin):
    org = admin.create_org()
    boss = admin.client_for(admin.create_key(org["id"], ALL_SCOPES)["secret"])
    created = boss.post("/admin/keys", body={"organization_id": org["id"], "scopes": ["tasks:read"]}, cast_to=object)
    assert created["scopes"] == ["tasks:read"]


def test_admin_create_key_refuses_an_unknown_scope_or_organization(admin):
    org = admin.create_org()
    with pytest.raises(openai.BadRequestError) as e:
        admin.create_key(org["id"], ["tasks:everything"])
    assert error_of(e.value)["param"] == "scopes[0]"
    with pytest.raises(openai.BadRequestError) as e:
        admin.create_key("org_" + "0" * 32)
    assert error_of(e.value)["param"] == "organization_id"


BY_ID = [
    "agents.retrieve",
    "agents.update",
    "agents.delete",
    "sessions.retrieve",
    "sessions.update",
    "sessions.delete",
    "conversations.retrieve",
    "conversations.update",
    "conversations.delete",
]


@pytest.mark.parametrize("call", BY_ID)
def test_another_organizations_ids_are_404_never_403(admin, client, resources, call):
    """Issue 2: "404 for any id of another organization (never 403, never a hint that it exists)".
    Spec: "knowing the ID does not grant access"."""
    other, _ = admin.new_org_client(TASK_SCOPES)
    with pytest.raises(openai.NotFoundError) as e:
        calls(other, resources)[call]()
    assert error_of(e.value)["type"] == "not_found_error"
    # Nothing changed for the owner.
    r = resources
    assert client.beta.agents.retrieve(r["agent"].id).name == "owned by default"
    assert client.beta.agents.sessions.retrieve(r["session"].id).metadata == {"owner": "default"}
    assert client.conversations.retrieve(r["conv"].id).metadata == {"owner": "default"}


def test_a_404_for_another_organizations_id_reads_like_one_for_an_unknown_id(org_client, resources):
    """"never a hint that it exists": the answer is the same as for an id that never existed."""
    fake_agent = "agent_" + "0" * 32
    fake_session = "00000000-0000-4000-8000-000000000000"
    pairs = [
        (lambda i: org_client.beta.agents.retrieve(i), resources["agent"].id, fake_agent),
        (lambda i: org_client.beta.agents.sessions.retrieve(i), resources["session"].id, fake_session),
        (lambda i: org_client.conversations.retrieve(i), resources["conv"].id, f"conv_{fake_session}"),
    ]
    for call, real, fake in pairs:
        answers = []
        for i in (real, fake):
            with pytest.raises(openai.NotFoundError) as e:
                call(i)
            err = error_of(e.value)
            answers.append({**err, "message": err["message"].replace(i, "<id>")})
        assert answers[0] == answers[1]


def test_lists_and_filters_never_show_another_organizations_rows(org_client, resources):
    assert org_client.beta.agents.list().data == []
    assert org_client.beta.agents.sessions.list().data == []
    assert org_client.beta.agents.sessions.list(agent_id=resources["agent"].id).data == []
    assert org_client.beta.agents.sessions.list(metadata={"owner": "default"}).data == []


def test_a_cursor_from_another_organization_is_refused(org_client, resources):
    with pytest.raises(openai.BadRequestError) as e:
        org_client.beta.agents.list(after=resources["agent"].id)
    assert error_of(e.value)["param"] == "after"


def test_a_session_on_another_organizations_agent_is_404(org_client, resources):
    """Issue 2: "404 for any id of another organization". Spec (the same rule for Environments): "Supplying an
    Environment ID from another organization returns 404"."""
    with pytest.raises(openai.NotFoundError):
        org_client.beta.agents.sessions.create(environment=NONE, agent_id=resources["agent"].id)
