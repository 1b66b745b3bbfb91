"""`client.beta.agents.vaults` and `vaults.credentials`, unmodified: create,
retrieve, update (rotation), list with its params, delete; scopes; another
organization's ids answer 404; secret values are write-only (no answer, and no
server log line, ever contains one; the database holds only ciphertext); a
wrong master key stops the start."""

from __future__ import annotations

import os
import stat
import uuid
from pathlib import Path
from typing import Any, Iterator

import httpx2
import openai
import pytest
from openai import OpenAI

from harness import Server, assert_recent, conforms, error_of, new_key

VAULT_SCOPES = ["tasks:read", "tasks:write", "vaults:read", "vaults:write"]
NONE = {"type": "none"}


@pytest.fixture
def vault_client(admin) -> OpenAI:
    """A client with the task and vault scopes on an organization of its own."""
    c, _org = admin.new_org_client(VAULT_SCOPES)
    return c


def planted(tag: str) -> str:
    return f"PLANTED{tag}{uuid.uuid4().hex}"


def oauth_auth(access: str, refresh: str, secret: str) -> dict[str, Any]:
    return {
        "type": "mcp_oauth",
        "access_token": access,
        "mcp_server_url": "https://mcp.example.com/mcp",
        "expires_at": "2030-01-01T00:00:00Z",
        "refresh": {
            "client_id": "client-1",
            "refresh_token": refresh,
            "token_endpoint": "https://auth.example.com/token",
            "token_endpoint_auth": {"type": "client_secret_basic", "client_secret": secret},
            "scope": "tools",
        },
    }


def test_vaults_are_created_retrieved_updated_listed_and_deleted(vault_client: OpenAI):
    vaults = vault_client.beta.agents.vaults
    v = vaults.create(name="  Team  ", metadata={"team": "a"})
    got = conforms(v)
    assert got == {"id": v.id, "created_at": v.created_at, "metadata": {"team": "a"}, "name": "Team", "object": "vault"}
    assert v.id.startswith("vault_")
    assert_recent(v.created_at)
    assert vaults.retrieve(v.id) == v

    renamed = vaults.update(v.id, name=None, metadata={"team": "b"})
    assert (renamed.name, renamed.metadata) == (None, {"team": "b"})
    other = vaults.create()

    page = vaults.list(order="asc", limit=1)
    assert [x.id for x in page.data] == [v.id] and page.has_more
    assert [x.id for x in vaults.list(order="asc")] == [v.id, other.id], "auto-pagination"
    assert [x.id for x in vaults.list(metadata={"team": "b"}).data] == [v.id]
    assert len(vaults.list(status=["active", "archived"]).data) == 2
    assert vaults.list(status="archived").data == []

    deleted = vaults.delete(v.id)
    assert conforms(deleted) == {"id": v.id, "deleted": True, "object": "vault.deleted"}
    with pytest.raises(openai.NotFoundError):
        vaults.retrieve(v.id)


def test_credentials_of_every_kind_show_no_secret(vault_client: OpenAI):
    creds = vault_client.beta.agents.vaults.credentials
    v = vault_client.beta.agents.vaults.create(name="creds")
    bearer = creds.create(
        v.id, name="bearer", auth={"type": "static_bearer", "token": "tok-1", "mcp_server_url": "https://m.example.com"}
    )
    assert conforms(bearer) == {
        "id": bearer.id,
        "auth": {"type": "static_bearer", "mcp_server_url": "https://m.example.com"},
        "created_at": bearer.created_at,
        "metadata": {},
        "name": "bearer",
        "object": "vault.credential",
        "updated_at": bearer.created_at,
        "vault_id": v.id,
    }
    oauth = creds.create(v.id, name="oauth", auth=oauth_auth("at-1", "rt-1", "cs-1"), metadata={"k": "v"})
    assert conforms(oauth)["auth"] == {
        "type": "mcp_oauth",
        "expires_at": "2030-01-01T00:00:00Z",
        "mcp_server_url": "https://mcp.example.com/mcp",
        "refresh": {
            "client_id": "client-1",
            "resource": None,
            "scope": "tools",
            "token_endpoint": "https://auth.example.com/token",
            "token_endpoint_auth": {"type": "client_secret_basic"},
        },
    }
    env = creds.create(
        v.id,
        name="env",
        auth={
            "type": "environment_variable",
            "secret_name": "SERVICE_API_KEY",
            "secret_value": "sv-1",
            "networking": {"type": "limited", "allowed_hosts": ["API.example.com"]},
        },
    )
    assert conforms(env)["auth"] == {
        "type": "environment_variable",
        "secret_name": "SERVICE_API_KEY",
        "networking": {"type": "limited", "allowed_hosts": ["api.example.com"]},
    }

    listed = creds.list(v.id, order="asc")
    assert [c.id for c in listed.data] == [bearer.id, oauth.id, env.id]
    assert [c.id for c in creds.list(v.id, metadata={"k": "v"}).data] == [oauth.id]
    assert creds.retrieve(oauth.id, vault_id=v.id) == oauth

    rotated = creds.update(bearer.id, vault_id=v.id, auth={"type": "static_bearer", "token": "tok-2"}, metadata={"r": "1"})
    assert rotated.auth == bearer.auth and rotated.metadata == {"r": "1"}
    renewed = creds.update(oauth.id, vault_id=v.id, auth={"type": "mcp_oauth", "access_token": "at-2"})
    assert renewed.auth.expires_at is None, "a new access token without an expiry clears it"
    with pytest.raises(openai.BadRequestError) as e:
        creds.update(env.id, vault_id=v.id, auth={"type": "static_bearer", "token": "x"})
    assert error_of(e.value)["param"] == "auth.type"

    deleted = creds.delete(bearer.id, vault_id=v.id)
    assert conforms(deleted) == {"id": bearer.id, "deleted": True, "object": "vault.credential.deleted"}
    with pytest.raises(openai.NotFoundError):
        creds.retrieve(bearer.id, vault_id=v.id)


def test_vaults_need_their_scopes(org_client: OpenAI, admin):
    """`org_client` has only the tasks scopes."""
    with pytest.raises(openai.PermissionDeniedError) as e:
        org_client.beta.agents.vaults.list()
    assert "vaults:read" in error_of(e.value)["message"]
    org = admin.create_org()
    reader = admin.client_for(admin.create_key(org["id"], ["vaults:read"])["secret"])
    assert reader.beta.agents.vaults.list().data == []
    with pytest.raises(openai.PermissionDeniedError) as e:
        reader.beta.agents.vaults.create(name="x")
    assert "vaults:write" in error_of(e.value)["message"]


def test_another_organizations_vault_is_not_found(vault_client: OpenAI, admin):
    v = vault_client.beta.agents.vaults.create(name="mine")
    c = vault_client.beta.agents.vaults.credentials.create(
        v.id, name="c", auth={"type": "static_bearer", "token": "t", "mcp_server_url": "https://m.example.com"}
    )
    stranger, _ = admin.new_org_client(VAULT_SCOPES)
    with pytest.raises(openai.NotFoundError):
        stranger.beta.agents.vaults.retrieve(v.id)
    with pytest.raises(openai.NotFoundError):
        stranger.beta.agents.vaults.credentials.retrieve(c.id, vault_id=v.id)
    with pytest.raises(openai.NotFoundError):
        stranger.beta.agents.vaults.delete(v.id)
    theirs = stranger.beta.agents.vaults.create(name="theirs")
    with pytest.raises(openai.NotFoundError) as e:
        vault_client.beta.agents.sessions.create(agent={"model": "gpt-test"}, environment=NONE, vault_ids=[v.id, theirs.id])
    assert error_of(e.value)["param"] == "vault_ids[1]"
    session = vault_client.beta.agents.sessions.create(agent={"model": "gpt-test"}, environment=NONE, vault_ids=[v.id])
    assert session.vault_ids == [v.id]
    assert vault_client.beta.agents.sessions.retrieve(session.id).vault_ids == [v.id]


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[Any]:
    started: list[Server] = []

    def start(**kwargs: Any) -> Server:
        srv = Server(**kwargs)
        started.append(srv)
        return srv.start()

    yield start
    for srv in started:
        srv.stop()


def test_secret_values_appear_in_no_answer_log_or_database_file(own_server, tmp_path: Path):
    key = new_key()
    srv = own_server(data_dir=tmp_path / "data", bootstrap_key=key, env={"REBYTE_LOG": "trace"})
    bodies: list[str] = []

    def record(response: httpx2.Response) -> None:
        response.read()
        bodies.append(response.text)

    http = httpx2.Client(event_hooks={"response": [record]})
    c = OpenAI(api_key=key, base_url=f"{srv.url}/v1", http_client=http, max_retries=0)
    secrets = {t: planted(t) for t in ("bearer", "access", "refresh", "client", "env", "rotated")}
    v = c.beta.agents.vaults.create(name="scan")
    creds = c.beta.agents.vaults.credentials
    b = creds.create(
        v.id, name="b", auth={"type": "static_bearer", "token": secrets["bearer"], "mcp_server_url": "https://b.example.com"}
    )
    o = creds.create(v.id, name="o", auth=oauth_auth(secrets["access"], secrets["refresh"], secrets["client"]))
    creds.create(
        v.id,
        name="e",
        auth={
            "type": "environment_variable",
            "secret_name": "K",
            "secret_value": secrets["env"],
            "networking": {"type": "unrestricted"},
        },
    )
    creds.update(b.id, vault_id=v.id, auth={"type": "static_bearer", "token": secrets["rotated"]})
    creds.list(v.id)
    creds.retrieve(o.id, vault_id=v.id)
    # Refused requests carrying secrets: the errors must not quote them.
    refused = [
        {"type": "environment_variable", "secret_name": "K", "secret_value": secrets["env"] + "\n", "networking": {"type": "unrestricted"}},
        {"type": "static_bearer", "token": secrets["bearer"], "mcp_server_url": "not a url"},
        {"type": "static_bearer", "token": 1234567890123, "mcp_server_url": "https://b.example.com"},
    ]
    for auth in refused:
        with pytest.raises(openai.BadRequestError):
            creds.create(v.id, name="x", auth=auth)  # type: ignore[arg-type]
    session = c.beta.agents.sessions.create(agent={"model": "gpt-test"}, environment=NONE, vault_ids=[v.id])
    assert session.vault_ids == [v.id]
    http.close()
    assert srv.stop() == 0

    emitted = "\n".join(bodies)
    log = srv._log_path.read_text()
    assert "created a credential" in log, "the log is at trace level and captured"
    for name, secret in secrets.items():
        assert secret not in emitted, f"{name} was returned"
        assert secret not in log, f"{name} was logged"
    assert "1234567890123" not in emitted, "a wrongly typed secret is not echoed"
    stored = srv.stored_bytes()
    assert any(name in ("rebyte.db", "pg_dump") for name, _ in stored)
    for file_name, data in stored:
        for name, secret in secrets.items():
            assert secret.encode() not in data, f"{name} in plaintext in {file_name}"
    key_file = tmp_path / "data" / "master.key"
    assert stat.S_IMODE(os.stat(key_file).st_mode) == 0o600


def test_a_wrong_master_key_stops_the_start(own_server, tmp_path: Path):
    data, key = tmp_path / "data", new_key()
    first = os.urandom(32).hex()
    srv = own_server(data_dir=data, bootstrap_key=key, env={"REBYTE_MASTER_KEY": first})
    c = srv.client()
    v = c.beta.agents.vaults.create(name="k")
    c.beta.agents.vaults.credentials.create(
        v.id, name="c", auth={"type": "static_bearer", "token": "t", "mcp_server_url": "https://m.example.com"}
    )
    c.close()
    assert srv.stop() == 0
    assert not (data / "master.key").exists(), "REBYTE_MASTER_KEY takes the place of the key file"

    for wrong, says in ((os.urandom(32).hex(), "does not match"), ("", "missing"), ("short", "REBYTE_MASTER_KEY")):
        # No backtrace: the error itself must be the last thing on stderr.
        env = {"RUST_BACKTRACE": "0", "RUST_LIB_BACKTRACE": "0"}
        if wrong:
            env["REBYTE_MASTER_KEY"] = wrong
        with pytest.raises(RuntimeError) as e:
            own_server(data_dir=data, bootstrap_key=key, env=env)
        assert says in str(e.value), str(e.value)

    again = own_server(data_dir=data, bootstrap_key=key, env={"REBYTE_MASTER_KEY": first})
    assert [x.id for x in again.client().beta.agents.vaults.list().data] == [v.id]


def test_a_credential_id_outside_the_sessions_vaults_is_not_found_at_creation(vault_client: OpenAI, admin):
    """Issue 17, item 7: an MCP tool's `credential_id` is checked when the
    session is made (not at its first turn): it must be a credential of one
    of the session's `vault_ids`. Another organization's credential, an
    unknown id and one of a vault not attached all answer the same 404."""
    url = "https://m.example.com/mcp"
    v = vault_client.beta.agents.vaults.create(name="mine")
    c = vault_client.beta.agents.vaults.credentials.create(
        v.id, name="c", auth={"type": "static_bearer", "token": "t", "mcp_server_url": url}
    )
    stranger, _ = admin.new_org_client(VAULT_SCOPES)
    theirs = stranger.beta.agents.vaults.create(name="theirs")
    tc = stranger.beta.agents.vaults.credentials.create(
        theirs.id, name="c", auth={"type": "static_bearer", "token": "t", "mcp_server_url": url}
    )

    def tool(credential_id: str) -> dict[str, Any]:
        return {"type": "mcp", "server_label": "m", "transport": {"type": "http", "server_url": url},
                "credential_id": credential_id}

    def refused(credential_id: str, vault_ids: list[str]) -> dict[str, Any]:
        with pytest.raises(openai.NotFoundError) as e:
            vault_client.beta.agents.sessions.create(
                agent={"model": "gpt-test", "tools": [tool(credential_id)]}, environment=NONE, vault_ids=vault_ids
            )
        err = error_of(e.value)
        assert (err["type"], err["code"], err["param"]) == ("not_found_error", "not_found", "agent.tools[0].credential_id")
        assert credential_id in err["message"]
        return err

    unknown = "cred_" + "0" * 32
    messages = {
        refused(tc.id, [v.id])["message"].replace(tc.id, "X"),
        refused(unknown, [v.id])["message"].replace(unknown, "X"),
        refused(c.id, [])["message"].replace(c.id, "X"),
    }
    assert len(messages) == 1, f"another organization's credential is answered like an unknown one: {messages}"

    ok = vault_client.beta.agents.sessions.create(
        agent={"model": "gpt-test", "tools": [tool(c.id)]}, environment=NONE, vault_ids=[v.id]
    )
    assert ok.vault_ids == [v.id]

    # A saved agent's credential must be one of its organization's when the
    # agent is made or its tools replaced (the same 404 for another
    # organization's and an unknown one) ...
    for bad in (tc.id, unknown):
        with pytest.raises(openai.NotFoundError) as e:
            vault_client.beta.agents.create(model="gpt-test", tools=[tool(bad)])
        err = error_of(e.value)
        assert (err["code"], err["param"]) == ("not_found", "tools[0].credential_id"), err
        assert bad in err["message"]
    agent = vault_client.beta.agents.create(model="gpt-test", tools=[tool(c.id)])
    with pytest.raises(openai.NotFoundError) as e:
        vault_client.beta.agents.update(agent.id, tools=[tool(tc.id)])
    assert error_of(e.value)["param"] == "tools[0].credential_id"
    assert vault_client.beta.agents.update(agent.id, name="renamed").version == 2
    # ... and in the vaults of each session made from it.
    with pytest.raises(openai.NotFoundError) as e:
        vault_client.beta.agents.sessions.create(agent_id=agent.id, environment=NONE, vault_ids=[])
    assert error_of(e.value)["param"] == "agent.tools[0].credential_id"
    made = vault_client.beta.agents.sessions.create(agent_id=agent.id, environment=NONE, vault_ids=[v.id])
    assert made.vault_ids == [v.id]

    # Replacing a session's tools checks them the same way.
    with pytest.raises(openai.NotFoundError) as e:
        vault_client.beta.agents.sessions.update(ok.id, extra_body={"agent": {"tools": [tool(tc.id)]}})
    assert error_of(e.value)["param"] == "agent.tools[0].credential_id"
