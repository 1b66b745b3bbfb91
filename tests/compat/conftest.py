"""Fixtures for the compatibility suite: one `rebyte serve` for the whole run
(fresh data directory, `REBYTE_BOOTSTRAP_KEY` set to a generated key), the
official `openai` client pointed at it, and admin helpers that create
organizations and keys.

Tests that need a list to themselves (pagination, filters, "nothing was
written") use `org_client`: a client whose key belongs to a new organization.

Turns run against one scripted model server for the whole run (`scripted-model`
from the test-support crate; see scripted.py): the server gets
`OPENAI_BASE_URL=<scripted>/v1` and `OPENAI_API_KEY=test`. Tests that run turns
take the `model` fixture, which resets the script and the request log first.
`servers` starts extra `rebyte serve` processes (restarts, crashes) and always
stops them.

With `REBYTE_COMPAT_NODES=2` (on PostgreSQL) the session server is two nodes
on one database, and the suite's clients send their writes to the first and
their reads (GET, event streams included) to the second.
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Callable, Iterator

import pytest
from openai import OpenAI

import harness
from harness import Admin, Server, api_client, new_key
from scripted import ScriptedModel


@pytest.fixture(scope="session")
def scripted_model() -> Iterator[ScriptedModel]:
    """The one scripted model server of the run."""
    m = ScriptedModel().start()
    try:
        yield m
    finally:
        m.stop()


@pytest.fixture
def model(scripted_model: ScriptedModel) -> ScriptedModel:
    """The scripted model, with an empty script and request log."""
    scripted_model.reset()
    return scripted_model


@pytest.fixture(scope="session")
def server(scripted_model: ScriptedModel) -> Iterator[Server]:
    srv = Server(bootstrap_key=new_key(), env=scripted_model.env()).start()
    reader = None
    if harness.TWO_NODES:
        assert srv.database_url, "the two-node run needs PostgreSQL (REBYTE_TEST_DATABASE_URL)"
        # The same database, bootstrap key and master key; a data directory of its own.
        env = {
            **scripted_model.env(),
            "REBYTE_DATABASE_URL": srv.database_url,
            "REBYTE_MASTER_KEY_FILE": str(srv.data_dir / "master.key"),
        }
        reader = Server(bootstrap_key=srv.bootstrap_key, env=env).start()
        harness.SPLIT = (srv.url, reader.url)
    try:
        yield srv
    finally:
        harness.SPLIT = None
        if reader is not None:
            assert reader.stop() == 0, "the second node did not exit cleanly on SIGTERM"
            reader.cleanup()
        code = srv.stop()
        srv.cleanup()
        assert code == 0, f"rebyte did not exit cleanly on SIGTERM (exit {code})"


@pytest.fixture(scope="session")
def url(server: Server) -> str:
    """The server's base URL, without `/v1`."""
    return server.url


@pytest.fixture(scope="session")
def bootstrap_key(server: Server) -> str:
    assert server.bootstrap_key is not None
    return server.bootstrap_key


@pytest.fixture(scope="session")
def client(url: str, bootstrap_key: str) -> Iterator[OpenAI]:
    """The official client, unmodified, with the bootstrap key (every scope, organization `default`)."""
    c = api_client(bootstrap_key, url)
    yield c
    c.close()


@pytest.fixture(scope="session")
def admin(client: OpenAI, url: str) -> Iterator[Admin]:
    a = Admin(client, url)
    yield a
    a.close()


@pytest.fixture
def org_client(admin: Admin) -> OpenAI:
    """A client (tasks:read, tasks:write) on an organization of its own: its lists start empty."""
    c, _org = admin.new_org_client()
    return c


@pytest.fixture
def servers(scripted_model: ScriptedModel, tmp_path: Path) -> Iterator[Callable[..., Server]]:
    """Starts `rebyte serve` processes pointed at the scripted model, on one
    data directory per test (so a restart finds the previous process's data),
    with one bootstrap key; every process still running at teardown is killed."""
    started: list[Server] = []
    key = new_key()

    def start(**env: str) -> Server:
        """`env` overrides the environment, e.g. `OPENAI_BASE_URL=""` for a server with no model provider."""
        srv = Server(data_dir=tmp_path / "data", bootstrap_key=key, env={**scripted_model.env(), **env})
        started.append(srv)
        return srv.start()

    yield start
    for srv in started:
        srv.stop(signal.SIGKILL)
