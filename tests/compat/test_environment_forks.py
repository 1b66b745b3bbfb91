"""Issue 16 (item 3), forks through the official client's raw HTTP (`client.post`: the client has no method
for this Rebyte extension): `POST /v1/agents/environments/{id}/fork` answers a new ready environment whose files
are a copy-on-write copy of the source's; the source keeps its own; another organization's id is a 404."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from harness import error_of
from scripted import STREAM_TIMEOUT, call, reply, wait_turn

MODEL = {"model": "gpt-test"}


def shell_output(client, model, env_id: str, command: str) -> str:
    """Runs one turn in a new session on the environment; its one shell command's output."""
    s = client.beta.agents.sessions.create(agent=MODEL, environment={"type": "reference", "environment_id": env_id})
    model.script(call("shell", {"command": command}), reply("ok"))
    with client.beta.agents.sessions.stream(s.id, input="go", timeout=STREAM_TIMEOUT) as stream:
        events = list(stream)
    turn = wait_turn(client, s.id, events[0].turn_id)
    assert turn.status == "completed", turn
    items = client.beta.agents.sessions.turns.items.list(turn.id, session_id=s.id, order="asc", limit=100)
    [cmd] = [i for i in items if i.type == "command_execution"]
    return cmd.output


def fork(client, env_id: str, **body: Any) -> dict[str, Any]:
    return client.post(f"/agents/environments/{env_id}/fork", body=body, cast_to=object)


def test_a_fork_copies_the_files_and_each_side_keeps_its_own_writes(client, model):
    env = client.beta.agents.environments.create(environment={"type": "openai_hosted"})
    assert shell_output(client, model, env.id, "echo one > /workspace/a.txt; cat /workspace/a.txt") == "one\n"
    forked = fork(client, env.id, name="copy")
    assert (forked["status"], forked["forked_from"], forked["name"]) == ("ready", env.id, "copy"), forked
    assert client.beta.agents.environments.retrieve(forked["id"]).status == "ready"
    out = shell_output(client, model, forked["id"], "cat /workspace/a.txt; echo fork > /workspace/a.txt")
    assert out == "one\n"
    assert shell_output(client, model, env.id, "cat /workspace/a.txt") == "one\n", "the fork's write is its own"


def test_forking_another_organizations_environment_is_404_and_a_pending_one_409(client, org_client):
    theirs = client.beta.agents.environments.create(environment={"type": "openai_hosted"})
    with pytest.raises(openai.NotFoundError):
        fork(org_client.with_options(max_retries=0), theirs.id)
    mine = org_client.beta.agents.environments.create(environment={"type": "openai_hosted"})
    with pytest.raises(openai.ConflictError) as e:
        fork(org_client.with_options(max_retries=0), mine.id)
    assert "only a ready environment can be forked" in error_of(e.value)["message"]
