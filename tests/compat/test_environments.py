"""Issue 4, environments, through the official client: `client.beta.agents.environments` (create 201 pending,
retrieve, list, files create/list), the Rebyte extensions (`DELETE /agents/environments/{id}`, sessions with
`{"type": "reference", "environment_id"}`), one real sandbox shared by the sessions that reference it, the built-in
`shell` / `read_file` / `write_file` tools with `command_execution` items and live output deltas, per-session output
directories published as artifacts, setup that runs exactly once, a failed setup recorded on the environment, and
404 for another organization's environment everywhere.

Turns run against the scripted model, which calls the built-in tools like a real model would
(`{"name": "shell", "arguments": {"command": "…"}}`)."""

from __future__ import annotations

import base64
import concurrent.futures
import http.server
import socket
import threading
import time
from pathlib import Path
from typing import Any

import openai
import pytest
from openai.types.beta import AgentSessionEnvironmentConnectedEvent, AgentSessionEnvironmentSuspendedEvent

from harness import assert_recent, conforms, error_of
from scripted import NONE, STREAM_TIMEOUT, call, collect, reply, send, wait_turn, wait_until

MODEL = {"model": "gpt-test"}
DELETED = "agent.environment.deleted"


def b64(data: bytes | str) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


def hosted(**config: Any) -> dict[str, Any]:
    return {"type": "openai_hosted", **config}


def ref(env_id: str) -> dict[str, Any]:
    """The Rebyte extension: attach an existing environment (only type and id)."""
    return {"type": "reference", "environment_id": env_id}


def inline(path: str, data: bytes | str) -> dict[str, Any]:
    return {"type": "inline", "path": path, "data": b64(data)}


def shell(command: str, **args: Any) -> dict[str, Any]:
    """A model step that calls the built-in `shell` tool."""
    return call("shell", {"command": command, **args})


def session(client, environment: dict[str, Any], **kwargs: Any) -> Any:
    return client.beta.agents.sessions.create(agent=MODEL, environment=environment, **kwargs)


def once(client) -> Any:
    """The client without its automatic retries: it retries 409 Conflict, which these tests expect."""
    return client.with_options(max_retries=0)


def delete_env(client, env_id: str) -> Any:
    """`DELETE /v1/agents/environments/{id}`: a Rebyte extension the client has no method for."""
    return client.delete(f"/agents/environments/{env_id}", cast_to=object)


def run(client, sid: str, text: str) -> tuple[Any, list[Any]]:
    """Runs one turn through `client.beta.agents.sessions.stream`; answers the finished turn and its events."""
    with client.beta.agents.sessions.stream(sid, input=text, timeout=STREAM_TIMEOUT) as stream:
        events = list(stream)
    assert events and events[0].type == "agent.session.turn.created", [e.type for e in events]
    return wait_turn(client, sid, events[0].turn_id), events


def commands(client, sid: str, turn_id: str) -> list[Any]:
    items = client.beta.agents.sessions.turns.items.list(turn_id, session_id=sid, order="asc", limit=100)
    return [i for i in items if i.type == "command_execution"]


def output_of(client, sid: str, text: str) -> str:
    """Runs a turn whose one shell command's output is the answer (the model step is scripted by the caller)."""
    turn, _ = run(client, sid, text)
    assert turn.status == "completed", turn
    [cmd] = commands(client, sid, turn.id)
    return cmd.output


def wait_env(client, env_id: str, *statuses: str) -> Any:
    def check() -> Any:
        env = client.beta.agents.environments.retrieve(env_id)
        return env if env.status in statuses else None

    return wait_until(check, f"environment {env_id} to be {'/'.join(statuses)}")


def files_of(client, env_id: str, **params: Any) -> dict[str, int]:
    """Every live file of the environment (auto-paginated): path → size."""
    return {f.path: f.size_bytes for f in client.beta.agents.environments.files.list(env_id, **params)}


def sandbox_dir(server, env_id: str) -> Path:
    """Where the server keeps an environment's files (`<data-dir>/environments/<id>`)."""
    return server.data_dir / "environments" / env_id


# ---------------------------------------------------------------------------------------------------------------
# The environments API


def test_create_answers_201_pending_with_file_metadata_and_starts_nothing(client, server):
    raw = client.beta.agents.environments.with_raw_response.create(
        environment=hosted(
            files=[inline("/workspace/input.txt", "Shared input"), inline("data/rows.csv", b"a,b\n1,2\n")],
            setup_commands=[{"command": "echo x >> /workspace/setup-count"}],
            env={"GREETING": "hello"},
        )
    )
    assert raw.status_code == 201
    env = raw.parse()
    body = conforms(env)
    assert body["id"].startswith("env_")
    assert (body["object"], body["type"], body["status"]) == ("agent.environment", "openai_hosted", "pending")
    assert body["files"] == [
        {"id": body["files"][0]["id"], "path": "/workspace/input.txt", "size_bytes": 12, "type": "inline"},
        {"id": body["files"][1]["id"], "path": "/workspace/data/rows.csv", "size_bytes": 8, "type": "inline"},
    ], "metadata only, never the data; a relative path is under /workspace"
    assert all(f["id"].startswith("file_") for f in body["files"])
    assert (body["plugins"], body["skills"]) == ([], [])
    assert_recent(body["created_at"])
    assert not sandbox_dir(server, env.id).exists(), "creation reserves identity without starting compute"
    assert conforms(client.beta.agents.environments.retrieve(env.id)) == body


def test_list_pages_through_the_organizations_environments(org_client):
    ids = [org_client.beta.agents.environments.create(environment=hosted()).id for _ in range(3)]
    page = org_client.beta.agents.environments.list()
    assert [e.id for e in page.data] == ids[::-1], "newest first by default"
    assert (page.first_id, page.last_id, page.has_more) == (ids[2], ids[0], False)
    for e in page.data:
        conforms(e)
    first = org_client.beta.agents.environments.list(order="asc", limit=2)
    assert ([e.id for e in first.data], first.has_more) == (ids[:2], True)
    assert [e.id for e in org_client.beta.agents.environments.list(order="asc", limit=2)] == ids, "auto-pagination"
    assert [e.id for e in org_client.beta.agents.environments.list(after=ids[2])] == ids[1::-1]
    assert [e.id for e in org_client.beta.agents.environments.list(type="openai_hosted")] == ids[::-1]


@pytest.mark.parametrize(
    "environment, param",
    [
        (hosted(files=[inline("/etc/passwd", "x")]), "environment.files[0].path"),
        (hosted(files=[inline("/workspace/../etc/x", "x")]), "environment.files[0].path"),
        (hosted(files=[{"type": "inline", "path": "/workspace/a", "data": "%%%"}]), "environment.files[0].data"),
        (hosted(setup_commands=[{"command": ""}]), "environment.setup_commands[0].command"),
        (hosted(setup_commands=[{"command": "true", "cwd": "/etc"}]), "environment.setup_commands[0].cwd"),
        (hosted(network={"access": "teleport"}), "environment.network.access"),
        (hosted(colour="blue"), "environment.colour"),
        (hosted(setup_command=[{"command": "true"}]), "environment.setup_command"),
        ({"type": "self_hosted"}, "environment.type"),
        (hosted(network={"access": "restricted", "allowed_domains": ["*.pypi.org"]}),
         "environment.network.allowed_domains[0]"),
        (hosted(network={"access": "restricted", "blocked_domains": ["https://example.com/x"]}),
         "environment.network.blocked_domains[0]"),
        (hosted(network={"access": "restricted", "allowed_domains": ["a.com"], "blocked_domains": ["b.com"]}),
         "environment.network.blocked_domains"),
        (hosted(network={"access": "enabled", "allowed_domains": ["pypi.org"]}), "environment.network"),
        (hosted(container_size="huge"), "environment.container_size"),
    ],
    ids=["path-outside", "path-dotdot", "data-not-base64", "empty-command", "cwd-outside", "network", "unknown",
         "misspelled", "self-hosted", "wildcard-domain", "url-not-domain", "allow-and-block", "domains-not-restricted", "container-size"],
)
def test_a_bad_environment_is_400_naming_the_field_and_writes_nothing(org_client, environment, param):
    with pytest.raises(openai.BadRequestError) as e:
        org_client.beta.agents.environments.create(environment=environment)
    assert error_of(e.value)["param"] == param
    assert org_client.beta.agents.environments.list().data == []


def host_ip() -> str:
    """This machine's address on its default route: reachable from the host, not loopback."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("192.0.2.1", 9))
        return s.getsockname()[0]


def fetch_command(url: str) -> str:
    """A setup command printing the status and body `urllib` (which honours `http_proxy`) gets for `url`."""
    return (
        'python3 -c "import urllib.request as u, urllib.error as e\n'
        f"try: r = u.urlopen('{url}', timeout=10); print('fetched', r.status, r.read().decode())\n"
        "except e.HTTPError as x: print('fetched', x.code, x.read().decode())\""
    )


def test_a_restricted_network_reaches_its_allowed_domains_through_the_proxy_and_nothing_else(client):
    class Hello(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"hello through the proxy"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    host = http.server.ThreadingHTTPServer(("0.0.0.0", 0), Hello)
    threading.Thread(target=host.serve_forever, daemon=True).start()
    ip, port = host_ip(), host.server_address[1]
    try:
        env = client.beta.agents.environments.create(
            environment=hosted(
                network={"access": "restricted", "allowed_domains": [ip]},
                setup_commands=[
                    {"command": fetch_command(f"http://{ip}:{port}/")},
                    {"command": fetch_command("http://example.com/")},
                    {"command": f"python3 -c \"import socket; socket.create_connection(('{ip}', {port}), 3)\" "
                                "|| echo direct connection failed"},
                ],
            )
        )
        assert env.to_dict()["network"] == {"access": "restricted", "allowed_domains": [ip]}
        client.beta.agents.environments.files.create(env.id, type="inline", path="/workspace/go", data=b64("x"))
        ready = client.beta.agents.environments.retrieve(env.id)
        log = ready.to_dict()["setup_log"]
        assert ready.status == "ready", log
        assert "fetched 200 hello through the proxy" in log
        assert "fetched 403 rebyte egress: example.com is not in the environment's allowed_domains" in log
        assert "direct connection failed" in log, "nothing gets out around the proxy"
    finally:
        host.shutdown()


def test_a_direct_file_operation_initializes_the_sandbox(client, server):
    env = client.beta.agents.environments.create(
        environment=hosted(setup_commands=[{"command": "echo x >> /workspace/setup-count"}])
    )
    f = client.beta.agents.environments.files.create(
        env.id, type="inline", path="/workspace/notes/a.txt", data=b64("hello")
    )
    assert conforms(f) == {
        "environment_id": env.id, "object": "agent.environment.file", "path": "/workspace/notes/a.txt", "size_bytes": 5
    }
    ready = client.beta.agents.environments.retrieve(env.id)
    assert ready.status == "ready", "the first operation initialized it (setup ran before the write answered)"
    assert [x.path for x in ready.files] == ["/workspace/notes/a.txt"], "environment.files metadata follows"
    assert "echo x >> /workspace/setup-count" in ready.to_dict()["setup_log"]
    assert (sandbox_dir(server, env.id) / "workspace" / "notes" / "a.txt").read_bytes() == b"hello"
    assert files_of(client, env.id) == {"/workspace/notes/a.txt": 5, "/workspace/setup-count": 2}

    # Writing the same path again replaces the file and its metadata.
    client.beta.agents.environments.files.create(env.id, type="inline", path="/workspace/notes/a.txt", data=b64("hi"))
    assert [(x.path, x.size_bytes) for x in client.beta.agents.environments.retrieve(env.id).files] == [
        ("/workspace/notes/a.txt", 2)
    ]


def test_files_list_orders_filters_and_pages(client):
    env = client.beta.agents.environments.create(environment=hosted())
    paths = ["/workspace/b.txt", "/workspace/a/1.txt", "/workspace/a/2.txt", "/workspace/c/d/e.txt", "/workspace/z"]
    for p in paths:
        client.beta.agents.environments.files.create(env.id, type="inline", path=p, data=b64(p))
    page = client.beta.agents.environments.files.list(env.id, order="asc")
    for f in page.data:
        conforms(f)
    assert [f.path for f in page.data] == sorted(paths)
    assert [f.path for f in client.beta.agents.environments.files.list(env.id)] == sorted(paths, reverse=True)
    first = client.beta.agents.environments.files.list(env.id, order="asc", limit=2)
    assert ([f.path for f in first.data], first.has_more) == (sorted(paths)[:2], True)
    assert [f.path for f in client.beta.agents.environments.files.list(env.id, order="asc", limit=2)] == sorted(paths)
    assert files_of(client, env.id, path="/workspace/a") == {"/workspace/a/1.txt": 18, "/workspace/a/2.txt": 18}
    with pytest.raises(openai.BadRequestError) as e:
        client.beta.agents.environments.files.list(env.id, path="/etc")
    assert error_of(e.value)["param"] == "path"


def test_a_listing_walks_only_what_its_page_needs_and_a_tree_of_empty_directories_is_bounded(client):
    """Issue 17, item 3: a page of files is found without walking the whole
    tree, and a path below which more than 10,000 directories hold no file
    is a 400 naming `path` (the campaign's deep tree took over 30 s)."""
    tree = "import os\nfor i in range(110):\n  for j in range(100): os.makedirs(f'/workspace/t/{i}/{j}')"
    env = client.beta.agents.environments.create(
        environment=hosted(setup_commands=[{"command": f"python3 -c \"{tree}\""}])
    )
    for p in ["/workspace/a.txt", "/workspace/b.txt", "/workspace/t/0/0/deep.txt"]:
        client.beta.agents.environments.files.create(env.id, type="inline", path=p, data=b64(p))
    first = client.beta.agents.environments.files.list(env.id, order="asc", limit=2)
    assert ([f.path for f in first.data], first.has_more) == (["/workspace/a.txt", "/workspace/b.txt"], True)
    nxt = client.beta.agents.environments.files.list(env.id, order="asc", limit=2, page=first.next)
    assert [f.path for f in nxt.data] == ["/workspace/t/0/0/deep.txt"]
    # Newest-first, the 11,000 empty directories come before the one file.
    with pytest.raises(openai.BadRequestError) as e:
        client.beta.agents.environments.files.list(env.id, path="/workspace/t", order="desc")
    err = error_of(e.value)
    assert err["param"] == "path" and "narrow" in err["message"], err


@pytest.mark.parametrize("path", ["/etc/passwd", "/workspace/../etc/x", "../x", "/workspacex/y", "/"])
def test_file_paths_that_escape_the_workspace_are_400(client, path):
    env = client.beta.agents.environments.create(environment=hosted())
    with pytest.raises(openai.BadRequestError) as e:
        client.beta.agents.environments.files.create(env.id, type="inline", path=path, data=b64("x"))
    assert error_of(e.value)["param"] == "path"


@pytest.mark.parametrize(
    "path, says",
    [
        ("/workspace/" + "n" * 300, "limited to 255 bytes"),
        ("/workspace/" + "é" * 128, "limited to 255 bytes"),
        ("/workspace/" + ("d" * 250 + "/") * 17 + "f", "limited to 4095 bytes"),
        ("/workspace/" + "d/" * 64 + "f", "limited to 64 levels"),
    ],
    ids=["long-name", "long-utf8-name", "long-path", "deep-path"],
)
def test_file_paths_past_the_kernels_limits_or_too_deep_are_400_naming_path(client, path, says):
    """Issue 17: a name over 255 bytes, a path over 4095 bytes or over 64 levels is the caller's error, not a 500."""
    env = client.beta.agents.environments.create(environment=hosted())
    with pytest.raises(openai.BadRequestError) as e:
        client.beta.agents.environments.files.create(env.id, type="inline", path=path, data=b64("x"))
    err = error_of(e.value)
    assert err["param"] == "path" and says in err["message"], err
    with pytest.raises(openai.BadRequestError) as e:
        client.beta.agents.environments.files.list(env.id, path=path)
    assert error_of(e.value)["param"] == "path"
    assert client.beta.agents.environments.retrieve(env.id).files == []


def test_file_paths_at_the_limits_are_written(client):
    env = client.beta.agents.environments.create(environment=hosted())
    for path in ("/workspace/" + "n" * 255, "/workspace/" + "d/" * 62 + "f"):
        f = client.beta.agents.environments.files.create(env.id, type="inline", path=path, data=b64("x"))
        assert (f.path, f.size_bytes) == (path, 1)


def test_symlinks_that_point_out_of_the_workspace_are_400(client, model):
    s = session(client, hosted())
    model.script(shell("ln -s /etc /workspace/etc-link; ln -s /etc/hostname /workspace/host-link"), reply("ok"))
    run(client, s.id, "link")
    env_id = s.environment.id
    for path in ("/workspace/etc-link/x", "/workspace/host-link"):
        with pytest.raises(openai.BadRequestError) as e:
            client.beta.agents.environments.files.create(env_id, type="inline", path=path, data=b64("x"))
        assert error_of(e.value)["param"] == "path", path
    with pytest.raises(openai.BadRequestError):
        client.beta.agents.environments.files.list(env_id, path="/workspace/etc-link")


def test_a_file_over_the_size_limit_is_413(client):
    env = client.beta.agents.environments.create(environment=hosted())
    with pytest.raises(openai.APIStatusError) as e:
        client.beta.agents.environments.files.create(
            env.id, type="inline", path="/workspace/big.bin", data=b64(b"\0" * (9 << 20))
        )
    assert e.value.status_code == 413
    assert client.beta.agents.environments.retrieve(env.id).files == []


def test_delete_refuses_while_sessions_are_attached_then_answers_the_deleted_shape(client, server, model):
    model.script(shell("echo kept > /workspace/f"), reply("ok"))
    env = client.beta.agents.environments.create(environment=hosted())
    a, b = session(client, ref(env.id)), session(client, ref(env.id))
    run(client, a.id, "write")
    assert sandbox_dir(server, env.id).exists()
    with pytest.raises(openai.ConflictError) as e:
        delete_env(once(client), env.id)
    err = error_of(e.value)
    assert env.id in err["message"] and "2" in err["message"], err
    client.beta.agents.sessions.delete(a.id)
    with pytest.raises(openai.ConflictError):
        delete_env(once(client), env.id)
    client.beta.agents.sessions.delete(b.id)
    assert delete_env(client, env.id) == {"id": env.id, "object": DELETED, "deleted": True}
    assert not sandbox_dir(server, env.id).exists(), "deleting an environment stops everything and removes its files"
    for call_ in (
        lambda: client.beta.agents.environments.retrieve(env.id),
        lambda: client.beta.agents.environments.files.list(env.id),
        lambda: delete_env(client, env.id),
        lambda: session(client, ref(env.id)),
    ):
        with pytest.raises(openai.NotFoundError):
            call_()


# ---------------------------------------------------------------------------------------------------------------
# Sessions: inline and by reference


def test_an_inline_environment_is_private_to_its_session_and_goes_with_it(client, model):
    model.script(shell("cat /workspace/input.txt; cat /workspace/setup-count"), reply("ok"))
    s = session(
        client,
        hosted(files=[inline("/workspace/input.txt", "inline input")],
               setup_commands=[{"command": "echo x >> /workspace/setup-count"}]),
    )
    body = conforms(s)
    env_id = body["environment"]["id"]
    assert [(f["path"], f["size_bytes"]) for f in body["environment"]["files"]] == [("/workspace/input.txt", 12)]
    env = client.beta.agents.environments.retrieve(env_id)
    assert (env.status, env.to_dict()["lifetime"]) == ("pending", "private")
    assert output_of(client, s.id, "look") == "inline inputx\n"
    assert client.beta.agents.environments.retrieve(env_id).status == "ready"
    with pytest.raises(openai.ConflictError):
        delete_env(once(client), env_id)
    client.beta.agents.sessions.delete(s.id)
    with pytest.raises(openai.NotFoundError):
        client.beta.agents.environments.retrieve(env_id)


def test_the_first_reference_makes_an_environment_shared_for_good(client):
    owner = session(client, hosted())
    env_id = owner.environment.id
    member = session(client, ref(env_id))
    assert (member.environment.type, member.environment.id) == ("openai_hosted", env_id)
    assert conforms(member)["environment"] == conforms(client.beta.agents.sessions.retrieve(owner.id))["environment"]
    assert client.beta.agents.environments.retrieve(env_id).to_dict()["lifetime"] == "shared"
    client.beta.agents.sessions.delete(owner.id)
    client.beta.agents.sessions.delete(member.id)
    env = client.beta.agents.environments.retrieve(env_id)
    assert env.to_dict()["lifetime"] == "shared", "it does not become private again"
    assert delete_env(client, env_id)["deleted"] is True


def test_deleting_the_agent_deletes_neither_sessions_nor_environments(client):
    agent = client.beta.agents.create(model="gpt-test")
    env = client.beta.agents.environments.create(environment=hosted())
    s = client.beta.agents.sessions.create(agent_id=agent.id, environment=ref(env.id))
    client.beta.agents.delete(agent.id)
    assert client.beta.agents.sessions.retrieve(s.id).environment.id == env.id
    assert client.beta.agents.environments.retrieve(env.id).id == env.id


@pytest.mark.parametrize(
    "extra, param",
    [
        ({"files": []}, "environment.files"),
        ({"setup_commands": [{"command": "true"}]}, "environment.setup_commands"),
        ({"network": {"access": "enabled"}}, "environment.network"),
        ({"env": {"A": "1"}}, "environment.env"),
        ({"packages": {"python": ["pandas"]}}, "environment.packages"),
    ],
    ids=["files", "setup_commands", "network", "env", "packages"],
)
def test_a_reference_carries_only_type_and_environment_id(org_client, extra, param):
    env = org_client.beta.agents.environments.create(environment=hosted())
    with pytest.raises(openai.BadRequestError) as e:
        session(org_client, {**ref(env.id), **extra})
    assert error_of(e.value)["param"] == param
    assert org_client.beta.agents.sessions.list().data == []
    assert org_client.beta.agents.environments.retrieve(env.id).to_dict()["lifetime"] == "shared"


def test_the_clients_typed_sharing_is_exactly_the_reference(org_client):
    """Issue 15: the client's `{"type": "openai_hosted", "environment_id": …}` attaches an existing
    environment as `reference` does, and refuses configuration beside the id by name."""
    c = org_client
    owner = session(c, hosted())
    env_id = owner.environment.id
    member = session(c, hosted(environment_id=env_id))
    assert (member.environment.type, member.environment.id) == ("openai_hosted", env_id)
    assert conforms(member)["environment"] == conforms(c.beta.agents.sessions.retrieve(owner.id))["environment"]
    assert c.beta.agents.environments.retrieve(env_id).to_dict()["lifetime"] == "shared"
    with pytest.raises(openai.BadRequestError) as e:
        session(c, hosted(environment_id=env_id, setup_commands=[{"command": "true"}]))
    assert error_of(e.value)["param"] == "environment.setup_commands"
    assert "no configuration beside it" in error_of(e.value)["message"]
    with pytest.raises(openai.NotFoundError):
        session(c, hosted(environment_id="env_" + "0" * 32))
    assert {s.id for s in c.beta.agents.sessions.list().data} == {owner.id, member.id}, "nothing else was created"
    # The owner's deletion leaves the shared environment to the member.
    c.beta.agents.sessions.delete(owner.id)
    assert c.beta.agents.environments.retrieve(env_id).id == env_id
    c.beta.agents.sessions.delete(member.id)


def test_a_reference_needs_an_environment_id(org_client):
    with pytest.raises(openai.BadRequestError) as e:
        session(org_client, {"type": "reference"})
    assert error_of(e.value)["param"] == "environment.environment_id"


def test_an_unknown_environment_id_is_404(org_client):
    with pytest.raises(openai.NotFoundError) as e:
        session(org_client, ref("env_00000000000000000000000000000000"))
    assert "env_00000000000000000000000000000000" in error_of(e.value)["message"]
    assert org_client.beta.agents.sessions.list().data == []


def test_the_attachment_is_fixed_for_the_sessions_life(client):
    first = client.beta.agents.environments.create(environment=hosted())
    other = client.beta.agents.environments.create(environment=hosted())
    s = session(client, ref(first.id))
    with pytest.raises(openai.BadRequestError) as e:
        client.beta.agents.sessions.update(s.id, extra_body={"environment": ref(other.id)})
    assert error_of(e.value)["param"] == "environment"
    assert client.beta.agents.sessions.retrieve(s.id).environment.id == first.id


# ---------------------------------------------------------------------------------------------------------------
# One sandbox, shared


def test_two_sessions_share_one_sandbox_files_and_processes_and_setup_runs_once(client, model):
    env = client.beta.agents.environments.create(
        environment=hosted(
            files=[inline("/workspace/input.txt", "Shared input")],
            setup_commands=[{"command": "echo x >> /workspace/setup-count"}],
        )
    )
    a, b = session(client, ref(env.id)), session(client, ref(env.id))
    assert a.environment.id == b.environment.id == env.id, "the same id in both sessions"
    model.script(
        shell("sleep 60 > /dev/null 2>&1 & echo $! > /workspace/pid; cat /workspace/input.txt; echo; "
              "echo $REBYTE_OUTPUT_DIR $REBYTE_SESSION_ID; echo from-a > /workspace/shared.txt"),
        reply("started"),
        shell("kill -0 $(cat /workspace/pid) && echo alive; cat /workspace/shared.txt /workspace/setup-count; "
              "echo $REBYTE_OUTPUT_DIR $REBYTE_SESSION_ID"),
        reply("seen"),
        shell("kill $(cat /workspace/pid)"),
        reply("stopped"),
    )
    assert client.beta.agents.environments.retrieve(env.id).status == "pending"
    assert output_of(client, a.id, "start") == (
        f"Shared input\n/workspace/outputs/sessions/{a.id} {a.id}\n"
    ), "every session on a standalone environment writes to its own outputs/sessions/<id>"
    assert client.beta.agents.environments.retrieve(env.id).status == "ready"
    assert output_of(client, b.id, "look") == (
        f"alive\nfrom-a\nx\n/workspace/outputs/sessions/{b.id} {b.id}\n"
    ), "B sees A's background process and files; setup ran exactly once"
    assert output_of(client, b.id, "stop") == "", "one session can stop another's process (spec)"
    conforms(client.beta.agents.environments.retrieve(env.id))


def test_command_execution_items_and_live_output_deltas(client, model):
    s = session(client, hosted())
    model.script(
        shell("echo one; sleep 0.3; echo two >&2; exit 3"),
        shell("pwd; echo $GREETING", cwd="/tmp"),
        shell("sleep 5", timeout_ms=300),
        reply("done"),
    )
    turn, events = run(client, s.id, "go")
    assert turn.status == "completed"
    failing, in_tmp, slow = cmds = commands(client, s.id, turn.id)
    for c in cmds:
        body = conforms(c)
        assert (body["type"], body["turn_id"]) == ("command_execution", turn.id)
        assert isinstance(body["duration_ms"], int)
    assert (failing.command, failing.exit_code, failing.status) == ("echo one; sleep 0.3; echo two >&2; exit 3", 3,
                                                                    "failed")
    assert failing.output == "one\ntwo\n" and failing.duration_ms >= 300
    assert (in_tmp.cwd, in_tmp.exit_code, in_tmp.status, in_tmp.output) == ("/tmp", 0, "completed", "/tmp\n\n")
    assert (slow.status, slow.exit_code) == ("failed", None) and 300 <= slow.duration_ms < 5000, slow

    deltas = [e for e in events if e.type == "agent.output.command_execution_output.delta"]
    for d in deltas:
        conforms(d)
        assert (d.session_id, d.turn_id) == (s.id, turn.id)
    by_item = {c.id: "".join(d.delta for d in deltas if d.item_id == c.id) for c in cmds}
    assert by_item == {failing.id: "one\ntwo\n", in_tmp.id: "/tmp\n\n", slow.id: ""}
    assert len([d for d in deltas if d.item_id == failing.id]) == 2, "output streams live, as it is printed"
    added = [e.item for e in events if e.type == "agent.session.turn.item.added" and e.item.type == "command_execution"]
    assert [(i.id, i.status, i.output, i.exit_code) for i in added] == [(c.id, "in_progress", None, None) for c in cmds]
    first_delta = next(i for i, e in enumerate(events) if e.type == "agent.output.command_execution_output.delta")
    done = next(i for i, e in enumerate(events) if e.type == "agent.session.turn.item.done" and e.item.id == failing.id)
    assert first_delta < done

    tool_messages = [m for m in model.bodies()[-1]["messages"] if m["role"] == "tool"]
    assert tool_messages[0]["content"] == "exit code: 3\none\ntwo\n", "the model gets the exit code and the output"
    assert "timed out after 300 ms" in tool_messages[2]["content"]

    # The turn waited for the environment's first initialization, then attached to it once.
    env_id = client.beta.agents.sessions.retrieve(s.id).to_dict()["environment"]["id"]
    env_events = [e for e in events if e.type.startswith("agent.session.environment.")]
    assert [(e.type, e.environment.status) for e in env_events] == [
        ("agent.session.environment.pending", "pending"),
        ("agent.session.environment.ready", "ready"),
        ("agent.session.environment.connected", "connected"),
    ]
    for e in env_events:
        conforms(e)
        assert (e.session_id, e.turn_id, e.environment.id, e.environment.type) == (s.id, turn.id, env_id,
                                                                                   "openai_hosted")
    connected = next(i for i, e in enumerate(events) if e.type == "agent.session.environment.connected")
    assert connected < next(i for i, e in enumerate(events) if e.type == "agent.session.turn.item.added"
                            and e.item.type == "command_execution")
    model.script(shell("true"), reply("again"))
    _, events = run(client, s.id, "again")
    assert [e.type for e in events if e.type.startswith("agent.session.environment.")] == [
        "agent.session.environment.connected"
    ], "a ready environment is only attached to"


def test_megabytes_of_output_are_truncated_in_history_and_kept_whole_in_a_file(client, model):
    s = session(client, hosted())
    model.script(shell("head -c 1000000 /dev/zero | tr '\\0' a; echo; echo the-end"), reply("ok"))
    turn, events = run(client, s.id, "flood")
    [cmd] = commands(client, s.id, turn.id)
    assert (cmd.status, cmd.exit_code) == ("completed", 0)
    assert len(cmd.output) < 64 * 1024 and cmd.output.startswith("aaaa") and cmd.output.endswith("the-end\n")
    assert "bytes omitted" in cmd.output
    [log] = [p for p in files_of(client, s.environment.id) if p.startswith("/workspace/.rebyte/logs/")]
    assert log in cmd.output, "the item names where the full output is"
    assert files_of(client, s.environment.id)[log] == 1_000_009
    sent = [m["content"] for m in model.bodies()[-1]["messages"] if m["role"] == "tool"]
    assert len(sent[0]) < 64 * 1024, "the model gets the truncated output too"


@pytest.mark.parametrize("access", ["disabled", "enabled"])
def test_network_access_disabled_or_enabled(client, model, access):
    """`network.access: disabled` (the default) gives the sandbox a network namespace with loopback only; `enabled`
    one routed out (a default route) that still never reaches the host's own loopback (here the scripted model
    server)."""
    port = model.url.rsplit(":", 1)[1]
    s = session(client, hosted(network={"access": access}))
    assert s.environment.network.access == access
    model.script(shell(f"bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected' 2>/dev/null || echo refused; "
                       "awk '$2 == \"00000000\" {r = 1} END {print r ? \"route\" : \"no-route\"}' /proc/net/route"),
                 reply("ok"))
    assert output_of(client, s.id, "connect") == ("refused\nroute\n" if access == "enabled" else "refused\nno-route\n")


def test_the_built_in_tools_are_offered_only_with_an_environment(client, model):
    model.script(reply("a"), reply("b"))
    run(client, session(client, hosted()).id, "hi")
    run(client, session(client, NONE).id, "hi")
    with_env, without = model.bodies()
    assert [t["function"]["name"] for t in with_env["tools"]] == ["shell", "read_file", "write_file"]
    assert shell_args(with_env) == {"command", "cwd", "timeout_ms"}
    assert "tools" not in without or not without["tools"]


def shell_args(body: dict[str, Any]) -> set[str]:
    [spec] = [t["function"] for t in body["tools"] if t["function"]["name"] == "shell"]
    return set(spec["parameters"]["properties"])


def test_read_file_and_write_file_work_in_the_workspace_only(client, model):
    s = session(client, hosted())
    model.script(
        call("write_file", {"path": "/workspace/notes/todo.md", "content": "buy milk"}),
        call("read_file", {"path": "/workspace/notes/todo.md"}),
        call("read_file", {"path": "/etc/hostname"}),
        call("write_file", {"path": "/workspace/../escape", "content": "x"}),
        reply("ok"),
    )
    turn, _ = run(client, s.id, "go")
    assert turn.status == "completed"
    results = [m["content"] for m in model.bodies()[-1]["messages"] if m["role"] == "tool"]
    assert results[:2] == ["wrote 8 bytes to /workspace/notes/todo.md", "buy milk"]
    assert all(r.startswith("error") for r in results[2:]), results
    cmds = commands(client, s.id, turn.id)
    assert [(c.command, c.status, c.exit_code) for c in cmds] == [
        ("write_file /workspace/notes/todo.md", "completed", 0),
        ("read_file /workspace/notes/todo.md", "completed", 0),
        ("read_file /etc/hostname", "failed", 1),
        ("write_file /workspace/../escape", "failed", 1),
    ]
    assert files_of(client, s.environment.id) == {"/workspace/notes/todo.md": 8}


def test_cancelling_a_turn_kills_its_command_and_nothing_else(client, model):
    """Issue 4 §5: cancellation kills the turn's in-flight command (its process group) and nothing else: not the
    sandbox, not background processes started earlier."""
    s = session(client, hosted())
    model.script(
        shell("sleep 300 > /dev/null 2>&1 & echo $! > /workspace/bg"),
        reply("started"),
        shell("sleep 30; echo finished > /workspace/late"),
        shell("kill -0 $(cat /workspace/bg) && echo alive; ls /workspace; kill $(cat /workspace/bg)"),
        reply("checked"),
    )
    run(client, s.id, "start a background job")
    with client.beta.agents.sessions.events.stream(s.id, timeout=STREAM_TIMEOUT) as stream:
        send(client, s.id, "run something slow")
        for event in stream:
            if event.type == "agent.session.turn.item.added" and event.item.type == "command_execution":
                turn_id = event.turn_id
                break
        time.sleep(0.2)
        started = time.monotonic()
        client.beta.agents.sessions.events.create(s.id, events=[{"type": "agent.session.input.cancel"}])
        for event in stream:
            if event.type == "agent.session.idle":
                break
    assert time.monotonic() - started < 3, "the sleep was killed, not waited for"
    assert wait_turn(client, s.id, turn_id).status == "cancelled"
    [cmd] = commands(client, s.id, turn_id)
    assert (cmd.status, cmd.exit_code) == ("incomplete", None)
    assert output_of(client, s.id, "check") == "alive\nbg\noutputs\n", "the background job lives on; `late` never ran"


# ---------------------------------------------------------------------------------------------------------------
# Outputs and artifacts


def test_outputs_become_artifacts_of_their_own_session_only(client, model):
    owner = session(client, hosted())
    env_id = owner.environment.id
    member = session(client, ref(env_id))
    model.script(
        shell("echo $REBYTE_OUTPUT_DIR; echo report-a > $REBYTE_OUTPUT_DIR/report.md"),
        reply("written"),
        shell("echo $REBYTE_OUTPUT_DIR; echo report-b > $REBYTE_OUTPUT_DIR/report.md; "
              "mkdir -p $REBYTE_OUTPUT_DIR/data; printf 'a,b\\n' > $REBYTE_OUTPUT_DIR/data/rows.csv"),
        reply("written"),
    )
    assert output_of(client, owner.id, "write") == "/workspace/outputs\n", "the inline owner uses /workspace/outputs"
    owner_turn = client.beta.agents.sessions.turns.list(owner.id).data[0]
    assert output_of(client, member.id, "write") == f"/workspace/outputs/sessions/{member.id}\n"
    member_turn = client.beta.agents.sessions.turns.list(member.id).data[0]

    [mine] = client.beta.agents.sessions.artifacts.list(owner.id).data
    body = conforms(mine)
    assert body == {
        "id": mine.id, "object": "agent.session.artifact", "created_at": body["created_at"], "environment_id": env_id,
        "path": "/workspace/outputs/report.md", "session_id": owner.id, "size_bytes": 9, "turn_id": owner_turn.id,
    }, "the owner's collector skips sessions/"
    assert_recent(body["created_at"])
    assert conforms(client.beta.agents.sessions.artifacts.retrieve(mine.id, session_id=owner.id)) == body
    assert client.beta.agents.sessions.artifacts.content(mine.id, session_id=owner.id).read() == b"report-a\n"

    theirs = client.beta.agents.sessions.artifacts.list(member.id, order="asc").data
    assert sorted((a.path.rsplit("/outputs/sessions/" + member.id + "/", 1)[-1], a.size_bytes) for a in theirs) == [
        ("data/rows.csv", 4), ("report.md", 9)
    ]
    assert {(a.session_id, a.turn_id, a.environment_id) for a in theirs} == {(member.id, member_turn.id, env_id)}
    report_b = next(a for a in theirs if a.path.endswith("report.md"))
    assert client.beta.agents.sessions.artifacts.content(report_b.id, session_id=member.id).read() == b"report-b\n"

    # No session's artifacts are reachable through another session's endpoint.
    for sid, art in ((member.id, mine.id), (owner.id, report_b.id)):
        with pytest.raises(openai.NotFoundError):
            client.beta.agents.sessions.artifacts.retrieve(art, session_id=sid)
        with pytest.raises(openai.NotFoundError):
            client.beta.agents.sessions.artifacts.content(art, session_id=sid)
        with pytest.raises(openai.NotFoundError):
            client.beta.agents.sessions.artifacts.delete(art, session_id=sid)

    assert [a.id for a in client.beta.agents.sessions.artifacts.list(owner.id, environment_id=env_id)] == [mine.id]
    assert client.beta.agents.sessions.artifacts.list(owner.id, environment_id="env_other").data == []

    deleted = client.beta.agents.sessions.artifacts.delete(mine.id, session_id=owner.id)
    assert conforms(deleted) == {"id": mine.id, "object": "agent.session.artifact.deleted", "deleted": True}
    with pytest.raises(openai.NotFoundError):
        client.beta.agents.sessions.artifacts.retrieve(mine.id, session_id=owner.id)
    assert client.beta.agents.sessions.artifacts.list(owner.id).data == []
    assert len(client.beta.agents.sessions.artifacts.list(member.id).data) == 2


def published(client, sid: str) -> list[tuple[str, str, bytes]]:
    """Every artifact of the session as (file name, turn id, content), sorted."""
    artifacts = client.beta.agents.sessions.artifacts
    return sorted(
        (a.path.rsplit("/", 1)[-1], a.turn_id, artifacts.content(a.id, session_id=sid).read())
        for a in artifacts.list(sid)
    )


def test_each_turn_publishes_only_new_or_changed_outputs(client, model):
    """Artifacts are immutable: a changed output is a new artifact of the turn that changed it, beside the old one;
    an unchanged output is not published again."""
    s = session(client, hosted())
    model.script(
        shell("echo v1 > $REBYTE_OUTPUT_DIR/a.txt; echo same > $REBYTE_OUTPUT_DIR/b.txt"), reply("1"),
        shell("echo v2 > $REBYTE_OUTPUT_DIR/a.txt"), reply("2"),
        shell("true"), reply("3"),
    )
    first, _ = run(client, s.id, "one")
    before = client.beta.agents.sessions.artifacts.list(s.id).data
    assert published(client, s.id) == [("a.txt", first.id, b"v1\n"), ("b.txt", first.id, b"same\n")]
    second, _ = run(client, s.id, "two")
    run(client, s.id, "three")
    assert published(client, s.id) == sorted(
        [("a.txt", first.id, b"v1\n"), ("a.txt", second.id, b"v2\n"), ("b.txt", first.id, b"same\n")]
    ), "the third turn changed nothing and published nothing"
    after = {a.id: a for a in client.beta.agents.sessions.artifacts.list(s.id)}
    for a in before:
        assert after[a.id].to_dict() == a.to_dict(), "the first turn's artifacts are kept as they were"
    [v2] = [a for a in after.values() if a.turn_id == second.id]
    assert v2.id not in {a.id for a in before} and v2.path == "/workspace/outputs/a.txt"


def test_an_artifact_stays_when_a_later_turn_changes_the_file(client, model):
    s = session(client, hosted())
    model.script(
        shell("echo v1 > $REBYTE_OUTPUT_DIR/a.txt"), reply("1"),
        shell("echo v2 > $REBYTE_OUTPUT_DIR/a.txt"), reply("2"),
    )
    first, _ = run(client, s.id, "one")
    [v1] = client.beta.agents.sessions.artifacts.list(s.id).data
    second, _ = run(client, s.id, "two")
    assert client.beta.agents.sessions.artifacts.retrieve(v1.id, session_id=s.id).to_dict() == v1.to_dict()
    assert client.beta.agents.sessions.artifacts.content(v1.id, session_id=s.id).read() == b"v1\n"
    assert sorted(a.turn_id for a in client.beta.agents.sessions.artifacts.list(s.id)) == sorted([first.id, second.id])


def test_an_output_changed_back_to_earlier_content_is_a_new_artifact(client, model):
    s = session(client, hosted())
    model.script(
        shell("echo v1 > $REBYTE_OUTPUT_DIR/a.txt"), reply("1"),
        shell("echo v2 > $REBYTE_OUTPUT_DIR/a.txt"), reply("2"),
        shell("echo v1 > $REBYTE_OUTPUT_DIR/a.txt"), reply("3"),
    )
    first, _ = run(client, s.id, "one")
    second, _ = run(client, s.id, "two")
    third, _ = run(client, s.id, "three")
    assert published(client, s.id) == sorted(
        [("a.txt", first.id, b"v1\n"), ("a.txt", second.id, b"v2\n"), ("a.txt", third.id, b"v1\n")]
    ), "the third turn changed the file: its content is published by that turn"


def test_an_artifact_path_is_the_absolute_path_in_the_environment(client, model):
    owner = session(client, hosted())
    member = session(client, ref(owner.environment.id))
    model.script(
        shell("echo a > $REBYTE_OUTPUT_DIR/report.md"), reply("ok"),
        shell("echo b > $REBYTE_OUTPUT_DIR/report.md"), reply("ok"),
    )
    run(client, owner.id, "write")
    run(client, member.id, "write")
    assert [a.path for a in client.beta.agents.sessions.artifacts.list(owner.id)] == ["/workspace/outputs/report.md"]
    assert [a.path for a in client.beta.agents.sessions.artifacts.list(member.id)] == [
        f"/workspace/outputs/sessions/{member.id}/report.md"
    ]


# ---------------------------------------------------------------------------------------------------------------
# Initialization: exactly once, failures final


def test_setup_runs_exactly_once_under_concurrent_first_use(client):
    env = client.beta.agents.environments.create(
        environment=hosted(setup_commands=[{"command": "sleep 0.3; echo x >> /workspace/setup-count"}])
    )

    def put(i: int) -> Any:
        return client.beta.agents.environments.files.create(
            env.id, type="inline", path=f"/workspace/in/{i:02}.txt", data=b64(str(i))
        )

    with concurrent.futures.ThreadPoolExecutor(20) as pool:
        written = list(pool.map(put, range(20)))
    assert sorted(f.path for f in written) == [f"/workspace/in/{i:02}.txt" for i in range(20)]
    live = files_of(client, env.id)
    assert live["/workspace/setup-count"] == 2, "one 'x\\n': setup ran once for 20 concurrent first uses"
    assert len(live) == 21
    ready = client.beta.agents.environments.retrieve(env.id)
    assert ready.status == "ready" and len(ready.files) == 20
    assert ready.to_dict()["setup_log"].count("echo x >> /workspace/setup-count") == 1


# The first thing a setup command does in the tests below: the status cannot tell that setup runs (it is `pending`
# before and during setup), this file in the environment's directory on the host can.
SETUP_STARTED = "touch /workspace/setup-started; "


def wait_setup_started(server, env_id: str) -> None:
    marker = sandbox_dir(server, env_id) / "workspace" / "setup-started"
    wait_until(marker.exists, f"the setup of {env_id} to start")


def setup_count(server, env_id: str) -> Path:
    return sandbox_dir(server, env_id) / "workspace" / "setup-count"


def test_cancelling_the_turn_that_started_setup_does_not_stop_setup(client, server, model):
    """Spec: "Cancelling the Turn that first requested setup stops that Turn's wait; setup continues … The cancelled
    Session can submit another Turn against that Environment"; "If setup is already running, wait for it to finish
    before creating another Session" (a clear 409 meanwhile)."""
    env = client.beta.agents.environments.create(
        environment=hosted(setup_commands=[{"command": SETUP_STARTED + "sleep 1; echo x >> /workspace/setup-count"}])
    )
    s = session(client, ref(env.id))
    model.script(shell("echo waited"), shell("cat /workspace/setup-count"), reply("ok"))
    send(client, s.id, "go")
    wait_setup_started(server, env.id)  # started by the turn's first shell call: nothing else uses the environment
    with pytest.raises(openai.ConflictError) as e:
        session(once(client), ref(env.id))
    assert "setup" in error_of(e.value)["message"]
    client.beta.agents.sessions.events.create(s.id, events=[{"type": "agent.session.input.cancel"}])
    [turn] = client.beta.agents.sessions.turns.list(s.id).data
    assert wait_turn(client, s.id, turn.id).status == "cancelled"
    assert wait_env(client, env.id, "ready").to_dict()["setup_log"].count("sleep 1") == 1, "setup went on"
    assert output_of(client, s.id, "again") == "x\n", "the cancelled session goes on; setup ran once"
    assert session(client, ref(env.id)).environment.id == env.id


def test_cancelling_a_turn_that_waits_for_setup_ends_it_at_once(client, server, model):
    env = client.beta.agents.environments.create(
        environment=hosted(setup_commands=[{"command": SETUP_STARTED + "sleep 2; echo x >> /workspace/setup-count"}])
    )
    s = session(client, ref(env.id))
    model.script(shell("echo waited"))
    send(client, s.id, "go")
    wait_setup_started(server, env.id)
    [turn] = client.beta.agents.sessions.turns.list(s.id).data
    started = time.monotonic()
    client.beta.agents.sessions.events.create(s.id, events=[{"type": "agent.session.input.cancel"}])
    assert wait_turn(client, s.id, turn.id).status == "cancelled"
    elapsed = time.monotonic() - started
    assert elapsed < 1, f"the turn ended {elapsed:.1f}s after the cancel, when setup finished"
    assert not setup_count(server, env.id).exists(), "setup still runs"
    assert client.beta.agents.environments.retrieve(env.id).status == "pending"
    assert commands(client, s.id, turn.id) == [], "the cancelled call never ran"
    assert wait_env(client, env.id, "ready")
    assert setup_count(server, env.id).read_text() == "x\n", "setup went on, once"
    assert commands(client, s.id, turn.id) == [], "nor did it run once setup was done"


def test_an_environment_in_setup_has_a_status_the_client_knows(client, server):
    """EnvironmentInfo.status has no `initializing`: an environment whose setup runs is `pending`."""
    env = client.beta.agents.environments.create(
        environment=hosted(setup_commands=[{"command": SETUP_STARTED + "sleep 1"}])
    )
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        write = pool.submit(
            client.beta.agents.environments.files.create, env.id, type="inline", path="/workspace/a", data=""
        )
        wait_setup_started(server, env.id)
        in_setup = conforms(client.beta.agents.environments.retrieve(env.id))
        listed = client.beta.agents.environments.list().data[0]
        assert not write.done(), "the write waits for setup"
        write.result()
    assert (in_setup["status"], listed.id, conforms(listed)["status"]) == ("pending", env.id, "pending")
    assert client.beta.agents.environments.retrieve(env.id).status == "ready"


def test_an_idle_sandbox_is_suspended_on_every_session_attached_and_connected_again_when_used(servers, model):
    """A sandbox unused for `REBYTE_IDLE_PAUSE` seconds is paused: every session on its environment gets the
    client's `AgentSessionEnvironmentSuspendedEvent` and the environment is `suspended`; the next use resumes it,
    processes and files intact: `agent.session.environment.connected` again, and `ready`."""
    client = servers(REBYTE_IDLE_PAUSE="1").client()
    env = client.beta.agents.environments.create(environment=hosted())
    a, b = session(client, ref(env.id)), session(client, ref(env.id))

    def told(event: Any, sid: str, cls: type, status: str) -> None:
        assert isinstance(event, cls), type(event)
        body = conforms(event)
        assert (body["session_id"], body["turn_id"]) == (sid, None), body
        assert body["environment"] == {"id": env.id, "status": status, "type": "openai_hosted", "error": None}

    model.script(shell("sleep 300 & echo $! > /workspace/bg.pid; echo kept > /workspace/kept.txt"), reply("one"))
    with client.beta.agents.sessions.events.stream(b.id, timeout=STREAM_TIMEOUT) as stream:
        turn, _ = run(client, a.id, "start")
        assert turn.status == "completed"
        assert client.beta.agents.environments.retrieve(env.id).status == "ready"
        suspended = collect(stream, lambda e: e.type.startswith("agent.session.environment."))[-1]
    told(suspended, b.id, AgentSessionEnvironmentSuspendedEvent, "suspended")
    listed = client.beta.agents.environments.retrieve(env.id)
    assert (listed.status, conforms(listed)["status"]) == ("suspended", "suspended")
    # The session whose turn used it is told too (its stored events, replayed).
    with client.beta.agents.sessions.events.stream(
        a.id, extra_headers={"Last-Event-ID": "evt_0"}, timeout=STREAM_TIMEOUT
    ) as stream:
        replayed = collect(stream, lambda e: e.type == "agent.session.environment.suspended")
    told(replayed[-1], a.id, AgentSessionEnvironmentSuspendedEvent, "suspended")

    model.script(shell("kill -0 $(cat /workspace/bg.pid) && echo still-running; cat /workspace/kept.txt"),
                 reply("two"))
    with client.beta.agents.sessions.events.stream(a.id, timeout=STREAM_TIMEOUT) as stream:
        turn, _ = run(client, b.id, "again")
        assert turn.status == "completed"
        [cmd] = commands(client, b.id, turn.id)
        assert cmd.output == "still-running\nkept\n", "resumed with its processes and files"
        assert client.beta.agents.environments.retrieve(env.id).status == "ready"
        connected = collect(stream, lambda e: e.type.startswith("agent.session.environment."))[-1]
    told(connected, a.id, AgentSessionEnvironmentConnectedEvent, "connected")


def test_setup_does_not_repeat_when_sessions_attach_later_or_the_server_restarts(servers, model):
    first = servers()
    c1 = first.client()
    env = c1.beta.agents.environments.create(
        environment=hosted(setup_commands=[{"command": "echo x >> /workspace/setup-count"}])
    )
    c1.beta.agents.environments.files.create(env.id, type="inline", path="/workspace/a", data=b64("a"))
    assert first.stop() == 0
    client = servers().client()
    assert client.beta.agents.environments.retrieve(env.id).status == "ready"
    s = session(client, ref(env.id))
    model.script(shell("cat /workspace/setup-count /workspace/a"), reply("ok"))
    assert output_of(client, s.id, "look") == "x\na", "setup never repeats: not on attach, not after a restart"
    assert client.beta.agents.environments.retrieve(env.id).status == "ready"


def test_a_failing_setup_fails_the_environment_with_its_output_and_is_final(client, server, model):
    env = client.beta.agents.environments.create(
        environment=hosted(setup_commands=[
            {"command": "echo first-step-ran"},
            {"command": "echo attempt >> /workspace/attempts; echo preparing; echo broken >&2; exit 3"},
        ])
    )
    s = session(client, ref(env.id))
    # The setup failure ends each turn at its first shell call.
    model.script(shell("echo never"), shell("echo never"), reply("unreachable"))
    turn, events = run(client, s.id, "go")
    assert turn.status == "failed"
    body = conforms(turn)
    assert body["error"]["code"] == "sandbox_error", body
    assert "exit" in body["error"]["message"] and "echo attempt" in body["error"]["message"], "names the step"
    assert body["error"]["message"].count("echo attempt") == 1, "once: " + body["error"]["message"]
    assert [e.type for e in events][-2:] == ["agent.session.turn.failed", "agent.session.idle"]
    env_events = [e for e in events if e.type.startswith("agent.session.environment.")]
    # Pending when the turn starts waiting, again with each piece of setup output (issue 10), then failed.
    assert {e.type for e in env_events[:-1]} == {"agent.session.environment.pending"}
    assert env_events[-1].type == "agent.session.environment.failed"
    assert "broken\n" in "".join(conforms(e).get("setup_output", "") for e in env_events[:-1])
    state = conforms(env_events[-1])["environment"]
    assert (state["id"], state["status"], state["error"]["code"]) == (env.id, "failed", "sandbox_error"), state
    assert "echo attempt" in state["error"]["message"]

    failed = client.beta.agents.environments.retrieve(env.id)
    assert failed.status == "failed"
    err = conforms(failed)["error"]
    assert err["code"] == "setup_failed"
    assert err["step"] == "echo attempt >> /workspace/attempts; echo preparing; echo broken >&2; exit 3"
    assert "preparing" in err["output"] and "broken" in err["output"], err
    assert "exit" in err["message"]
    assert "never" not in "".join(c.output or "" for c in commands(client, s.id, turn.id))

    # Final: never retried by itself, not by a direct file operation, not by the next turn.
    with pytest.raises(openai.ConflictError):
        once(client).beta.agents.environments.files.create(env.id, type="inline", path="/workspace/a", data=b64("a"))
    with pytest.raises(openai.ConflictError):
        once(client).beta.agents.environments.files.list(env.id)
    again, _ = run(client, s.id, "again")
    assert (again.status, again.error.code) == ("failed", "sandbox_error")
    assert client.beta.agents.environments.retrieve(env.id).to_dict()["error"] == err
    attempts = sandbox_dir(server, env.id) / "workspace" / "attempts"
    assert attempts.read_text() == "attempt\n", "the failing command ran once"
    with pytest.raises(openai.ConflictError):
        session(once(client), ref(env.id))

    # The application can clean up: sessions first, then the environment.
    client.beta.agents.sessions.delete(s.id)
    assert delete_env(client, env.id)["deleted"] is True


# ---------------------------------------------------------------------------------------------------------------
# Organizations


def test_another_organizations_environment_is_404_everywhere(client, org_client, model):
    env = client.beta.agents.environments.create(environment=hosted())
    mine = session(client, ref(env.id))
    model.script(shell("echo r > $REBYTE_OUTPUT_DIR/r.md"), reply("ok"))
    run(client, mine.id, "write")
    [art] = client.beta.agents.sessions.artifacts.list(mine.id).data
    other = org_client
    attempts = {
        "retrieve": lambda: other.beta.agents.environments.retrieve(env.id),
        "delete": lambda: delete_env(other, env.id),
        "files.list": lambda: other.beta.agents.environments.files.list(env.id),
        "files.create": lambda: other.beta.agents.environments.files.create(
            env.id, type="inline", path="/workspace/x", data=b64("x")
        ),
        "sessions.create": lambda: session(other, ref(env.id)),
        "artifacts.list": lambda: other.beta.agents.sessions.artifacts.list(mine.id),
        "artifacts.retrieve": lambda: other.beta.agents.sessions.artifacts.retrieve(art.id, session_id=mine.id),
        "artifacts.content": lambda: other.beta.agents.sessions.artifacts.content(art.id, session_id=mine.id),
        "artifacts.delete": lambda: other.beta.agents.sessions.artifacts.delete(art.id, session_id=mine.id),
    }
    for name, attempt in attempts.items():
        with pytest.raises(openai.NotFoundError) as e:
            attempt()
        assert error_of(e.value)["type"] == "not_found_error", name
    assert other.beta.agents.environments.list().data == []
    assert other.beta.agents.sessions.list().data == []
    assert files_of(client, env.id) == {"/workspace/outputs/sessions/" + mine.id + "/r.md": 2}
    assert client.beta.agents.environments.retrieve(env.id).id == env.id
