"""Issue 16 (item 2), environment templates through the official client:
`client.beta.agents.environments.templates` (create, retrieve, update, list, delete), and
`environment_template_id` on `environments.create` and on a session's inline environment — "Omitted fields
inherit the template; network overrides cannot broaden its policy" (the client's docs). An environment keeps
what it was created with: updating the template changes nothing in it, and the template cannot be deleted
while environments made from it exist. Beyond the hosted API, a template is prepared once: its setup runs a
single time into a snapshot (`status`: `preparing`, then `ready` with `preparation_log`), and environments
made from it start from that snapshot without running setup."""

from __future__ import annotations

import base64
import time
from typing import Any

import openai
import pytest
from openai.types.beta.agents.environments import EnvironmentTemplate

from harness import conforms, error_of
from scripted import STREAM_TIMEOUT, call, reply, wait_turn

MODEL = {"model": "gpt-test"}


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def inline(path: str, text: str) -> dict[str, Any]:
    return {"type": "inline", "path": path, "data": b64(text)}


def hosted(**config: Any) -> dict[str, Any]:
    return {"type": "openai_hosted", **config}


def once(client) -> Any:
    """The client without its automatic retries (it retries 409, which these tests expect)."""
    return client.with_options(max_retries=0)


def delete_env(client, env_id: str) -> Any:
    return client.delete(f"/agents/environments/{env_id}", cast_to=object)


def shell_output(client, model, sid: str, command: str) -> str:
    """Runs one turn whose one shell command's output is the answer."""
    model.script(call("shell", {"command": command}), reply("ok"))
    with client.beta.agents.sessions.stream(sid, input="go", timeout=STREAM_TIMEOUT) as stream:
        events = list(stream)
    turn = wait_turn(client, sid, events[0].turn_id)
    assert turn.status == "completed", turn
    items = client.beta.agents.sessions.turns.items.list(turn.id, session_id=sid, order="asc", limit=100)
    [cmd] = [i for i in items if i.type == "command_execution"]
    return cmd.output


def python_template(client, **overrides: Any) -> EnvironmentTemplate:
    config: dict[str, Any] = dict(
        name="python tools",
        env={"GREETING": "from-template", "SECRET_TOKEN": "s3cret"},
        files=[inline("/workspace/t.txt", "template file\n")],
        setup_commands=[{"command": "echo ran >> /workspace/setup-count"}],
        network={"access": "restricted", "allowed_domains": ["pypi.org", "github.com"]},
        capability_directories=["/workspace/caps"],
    )
    config.update(overrides)
    return client.beta.agents.environments.templates.create(**config)


def test_a_template_is_created_retrieved_updated_and_deleted_without_showing_confidential_inputs(org_client):
    templates = org_client.beta.agents.environments.templates
    t = python_template(org_client, packages={"python": ["six"]})
    body = conforms(t)
    assert body["id"].startswith("envtpl_") and body["object"] == "agent.environment.template"
    assert body["name"] == "python tools" and body["created_at"] == body["updated_at"]
    assert body["files"] == [{"type": "inline", "path": "/workspace/t.txt", "size_bytes": 14}]
    assert body["network"] == {"access": "restricted", "allowed_domains": ["pypi.org", "github.com"],
                               "blocked_domains": []}
    assert body["packages"] == {"npm": [], "python": ["six"], "system": []}
    assert (body["capability_directories"], body["skills"], body["plugins"]) == (["/workspace/caps"], [], [])
    assert (body["status"], body["preparation_log"], body["version"]) == ("preparing", None, 1), \
        "its setup runs once into a snapshot"
    sent = str(body)
    assert "s3cret" not in sent and "setup-count" not in sent and b64("template file\n") not in sent
    assert conforms(templates.retrieve(t.id)) == body

    updated = templates.update(t.id, name=None, packages={"npm": ["left-pad"]})
    after = conforms(updated)
    assert (after["name"], after["version"], after["packages"]["npm"]) == (None, 2, ["left-pad"])
    assert after["network"] == body["network"] and after["files"] == body["files"], "omitted fields are kept"
    reset = conforms(templates.update(t.id, network=None))
    assert reset["network"] == {"access": "disabled", "allowed_domains": [], "blocked_domains": []}, \
        "null resets to the default policy"

    deleted = templates.delete(t.id)
    assert conforms(deleted) == {"id": t.id, "object": "agent.environment.template.deleted", "deleted": True}
    for op in (templates.retrieve, templates.delete, lambda i: templates.update(i, name="x")):
        with pytest.raises(openai.NotFoundError):
            op(t.id)


def test_templates_list_pages_in_both_orders(org_client):
    templates = org_client.beta.agents.environments.templates
    assert templates.list().data == []
    ids = [templates.create(name=f"t{i}").id for i in range(5)]
    first = templates.list(limit=2, order="asc")
    assert ([t.id for t in first.data], first.has_more) == (ids[:2], True)
    assert [t.id for t in templates.list(limit=2, order="asc", after=ids[1]).data] == ids[2:4]
    assert [t.id for t in templates.list(order="asc")] == ids, "the client's auto-pagination walks every page"
    assert [t.id for t in templates.list(limit=2)] == ids[::-1], "newest first by default"
    page = templates.list(limit=2, order="desc", after=ids[1])
    assert ([t.id for t in page.data], page.has_more) == ([ids[0]], False)
    for t in templates.list(limit=1).data:
        conforms(t)


@pytest.mark.parametrize(
    "config, param",
    [
        ({"files": [inline("/etc/passwd", "x")]}, "files[0].path"),
        ({"network": {"access": "enabled", "allowed_domains": ["pypi.org"]}}, "network"),
        ({"network": {"access": "restricted", "allowed_domains": ["*.pypi.org"]}}, "network.allowed_domains[0]"),
        ({"setup_commands": [{"command": ""}]}, "setup_commands[0].command"),
        ({"name": ""}, "name"),
    ],
    ids=["files", "network", "domain", "setup", "name"],
)
def test_a_bad_template_is_400_naming_the_field_and_creates_nothing(org_client, config, param):
    with pytest.raises(openai.BadRequestError) as e:
        org_client.beta.agents.environments.templates.create(**config)
    assert error_of(e.value)["param"] == param
    assert org_client.beta.agents.environments.templates.list().data == []


def test_a_template_naming_an_unknown_skill_is_404_naming_it(org_client):
    with pytest.raises(openai.NotFoundError) as e:
        org_client.beta.agents.environments.templates.create(skills=[{"type": "skill_reference", "skill_id": "skill_" + "0" * 32}])
    assert error_of(e.value)["param"].startswith("skills[0]")


def test_an_environment_from_a_template_inherits_its_fields_and_overrides_replace_them(client, model):
    t = python_template(client)
    env = client.beta.agents.environments.create(
        environment=hosted(environment_template_id=t.id, env={"GREETING": "overridden"},
                           network={"access": "restricted", "allowed_domains": ["pypi.org"]}),
    )
    body = conforms(env)
    assert [(f["path"], f["size_bytes"]) for f in body["files"]] == [("/workspace/t.txt", 14)]
    assert body["network"] == {"access": "restricted", "allowed_domains": ["pypi.org"]}, "the override narrows"
    assert body["capability_directories"] == ["/workspace/caps"]
    assert body["environment_template"] == {"id": t.id, "version": 1}
    s = client.beta.agents.sessions.create(agent=MODEL, environment={"type": "reference", "environment_id": env.id})
    out = shell_output(client, model, s.id, "cat /workspace/t.txt /workspace/setup-count; echo $GREETING")
    assert out == "template file\nran\noverridden\n", "the template's files and setup, the request's env"

    # Updating the template changes nothing in the environment made before.
    client.beta.agents.environments.templates.update(t.id, files=[inline("/workspace/new.txt", "new")],
                                                     env={"GREETING": "v2"})
    now = conforms(client.beta.agents.environments.retrieve(env.id))
    kept = ("files", "network", "packages", "capability_directories", "environment_template")
    assert {k: now[k] for k in kept} == {k: body[k] for k in kept}
    assert shell_output(client, model, s.id, "ls /workspace; echo $GREETING").endswith("overridden\n")
    later = client.beta.agents.environments.create(environment=hosted(environment_template_id=t.id))
    assert [f.path for f in later.files] == ["/workspace/new.txt"]
    assert later.to_dict()["environment_template"] == {"id": t.id, "version": 2}


def test_a_sessions_inline_environment_from_a_template_inherits_its_fields(client, model):
    t = python_template(client)
    s = client.beta.agents.sessions.create(
        agent=MODEL, environment=hosted(environment_template_id=t.id, setup_commands=[{"command": "echo own > /workspace/own"}]),
    )
    view = conforms(s)["environment"]
    assert [f["path"] for f in view["files"]] == ["/workspace/t.txt"]
    assert view["network"] == {"access": "restricted", "allowed_domains": ["pypi.org", "github.com"]}
    env = client.beta.agents.environments.retrieve(view["id"])
    assert env.to_dict()["environment_template"] == {"id": t.id, "version": 1}
    out = shell_output(client, model, s.id,
                       "cat /workspace/own; test -e /workspace/setup-count && echo template-setup; echo $GREETING")
    assert out == "own\nfrom-template\n", "the request's setup replaced the template's; its env is inherited"


@pytest.mark.parametrize(
    "network, param",
    [
        ({"access": "enabled"}, "environment.network.access"),
        ({"access": "restricted", "allowed_domains": ["pypi.org", "evil.example"]}, "environment.network.allowed_domains[1]"),
        ({"access": "restricted", "blocked_domains": ["evil.example"]}, "environment.network.blocked_domains"),
        ({"access": "restricted", "allowed_domains": ["org"]}, "environment.network.allowed_domains[0]"),
    ],
    ids=["enabled", "outside-allowlist", "blocklist", "parent-domain"],
)
def test_a_network_override_that_broadens_the_template_is_400_naming_the_field(org_client, network, param):
    t = python_template(org_client)
    with pytest.raises(openai.BadRequestError) as e:
        org_client.beta.agents.environments.create(environment=hosted(environment_template_id=t.id, network=network))
    err = error_of(e.value)
    assert err["param"] == param and "template" in err["message"], err
    with pytest.raises(openai.BadRequestError) as e:
        org_client.beta.agents.sessions.create(agent=MODEL, environment=hosted(environment_template_id=t.id,
                                                                               network=network))
    assert error_of(e.value)["param"] == param
    assert org_client.beta.agents.environments.list().data == [], "nothing was created"
    assert org_client.beta.agents.sessions.list().data == []


def test_a_blocklist_template_takes_only_overrides_that_keep_blocking(org_client):
    t = org_client.beta.agents.environments.templates.create(
        network={"access": "restricted", "blocked_domains": ["evil.example"]})
    ok = org_client.beta.agents.environments.create(environment=hosted(
        environment_template_id=t.id, network={"access": "restricted", "blocked_domains": ["evil.example", "ads.example"]}))
    assert ok.to_dict()["network"]["access"] == "restricted"
    for network, param in [
        ({"access": "restricted", "allowed_domains": ["cdn.evil.example"]}, "environment.network.allowed_domains[0]"),
        ({"access": "restricted", "blocked_domains": ["ads.example"]}, "environment.network.blocked_domains"),
        ({"access": "enabled"}, "environment.network.access"),
    ]:
        with pytest.raises(openai.BadRequestError) as e:
            org_client.beta.agents.environments.create(environment=hosted(environment_template_id=t.id, network=network))
        assert error_of(e.value)["param"] == param


def test_another_organizations_template_is_404_like_an_unknown_one(client, org_client):
    theirs = python_template(client)
    unknown = "envtpl_" + "0" * 32
    for raw in (theirs.id, unknown, "not-a-template"):
        with pytest.raises(openai.NotFoundError) as e:
            org_client.beta.agents.environments.create(environment=hosted(environment_template_id=raw))
        err = error_of(e.value)
        assert (err["param"], err["message"]) == (
            "environment.environment_template_id", f"No environment template found with id '{raw}'."), err
        with pytest.raises(openai.NotFoundError) as e:
            org_client.beta.agents.sessions.create(agent=MODEL, environment=hosted(environment_template_id=raw))
        assert error_of(e.value)["param"] == "environment.environment_template_id"
    templates = org_client.beta.agents.environments.templates
    for op in (templates.retrieve, templates.delete, lambda i: templates.update(i, name="mine now")):
        with pytest.raises(openai.NotFoundError):
            op(theirs.id)
    assert client.beta.agents.environments.templates.retrieve(theirs.id).name == "python tools"
    assert org_client.beta.agents.environments.list().data == []


def test_a_template_in_use_cannot_be_deleted_and_says_by_how_many(org_client):
    t = org_client.beta.agents.environments.templates.create(name="used")
    envs = [org_client.beta.agents.environments.create(environment=hosted(environment_template_id=t.id))
            for _ in range(2)]
    with pytest.raises(openai.ConflictError) as e:
        once(org_client).beta.agents.environments.templates.delete(t.id)
    assert "used by 2 environment(s)" in error_of(e.value)["message"]
    for env in envs:
        delete_env(org_client, env.id)
    assert org_client.beta.agents.environments.templates.delete(t.id).deleted is True


def test_a_template_and_an_environment_id_together_are_400(org_client):
    t = org_client.beta.agents.environments.templates.create()
    env = org_client.beta.agents.environments.create(environment=hosted())
    with pytest.raises(openai.BadRequestError) as e:
        org_client.beta.agents.sessions.create(
            agent=MODEL, environment=hosted(environment_id=env.id, environment_template_id=t.id))
    assert error_of(e.value)["param"] == "environment.environment_template_id"


def prepared(client, template_id: str) -> dict[str, Any]:
    """The template once its preparation ended (extra fields read from the raw resource)."""
    for _ in range(600):
        body = client.beta.agents.environments.templates.retrieve(template_id).to_dict()
        if body["status"] != "preparing":
            return body
        time.sleep(0.05)
    raise AssertionError(f"template {template_id} still preparing")


def test_a_template_is_prepared_once_and_its_environments_do_not_run_setup(client, model):
    t = client.beta.agents.environments.templates.create(
        files=[inline("/workspace/t.txt", "template file\n")],
        setup_commands=[{"command": "echo ran >> /workspace/setup-count; echo prepared-here"}],
    )
    assert t.to_dict()["status"] == "preparing"
    body = prepared(client, t.id)
    assert body["status"] == "ready" and "prepared-here" in body["preparation_log"], body
    for _ in range(2):
        env = client.beta.agents.environments.create(environment=hosted(environment_template_id=t.id))
        s = client.beta.agents.sessions.create(agent=MODEL, environment={"type": "reference", "environment_id": env.id})
        out = shell_output(client, model, s.id, "cat /workspace/t.txt /workspace/setup-count")
        assert out == "template file\nran\n", "setup ran once, when the template was prepared"
        log = client.beta.agents.environments.retrieve(env.id).to_dict()["setup_log"]
        assert log.startswith("Prepared once from environment template") and "prepared-here" not in log, log


def test_a_template_whose_preparation_fails_refuses_environments(org_client):
    t = org_client.beta.agents.environments.templates.create(setup_commands=[{"command": "echo broken; exit 3"}])
    body = prepared(org_client, t.id)
    assert body["status"] == "failed" and "broken" in body["preparation_error"]["output"], body
    with pytest.raises(openai.ConflictError) as e:
        once(org_client).beta.agents.environments.create(environment=hosted(environment_template_id=t.id))
    assert "preparation failed" in error_of(e.value)["message"]
