"""Fixtures for the compatibility suite: one `rebyte serve` for the whole run
(fresh data directory, `REBYTE_BOOTSTRAP_KEY` set to a generated key), the
official `openai` client pointed at it, and admin helpers that create
organizations and keys.

Tests that need a list to themselves (pagination, filters, "nothing was
written") use `org_client`: a client whose key belongs to a new organization.
"""

from __future__ import annotations

from typing import Iterator

import pytest
from openai import OpenAI

from harness import Admin, Server, new_key


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    srv = Server(bootstrap_key=new_key()).start()
    try:
        yield srv
    finally:
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
    c = OpenAI(api_key=bootstrap_key, base_url=f"{url}/v1")
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
