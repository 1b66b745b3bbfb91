"""Issue 10, point 5: setup progress you can watch, through the official client. While an environment's setup runs,
`environments.retrieve` keeps `status: "pending"` (the client knows no other state for it), shows the Rebyte extension
`setup` (`state`, `step`, `command`, `steps_completed`/`steps_total`, times) and a `setup_log` that grows as the
commands print; a turn waiting for the environment gets that output as `agent.session.environment.pending` events
(the client's own type, with the extension fields `setup_output` and `environment.setup`)."""

from __future__ import annotations

import base64
import concurrent.futures
import time

from openai.types.beta.agent_session_environment_pending_event import AgentSessionEnvironmentPendingEvent

from scripted import STREAM_TIMEOUT, call, collect, reply, send, wait_until

SLOW_SETUP = "echo one; sleep 1; echo two; sleep 1"


def slow_environment(client):
    env = client.beta.agents.environments.create(
        environment={"type": "openai_hosted", "setup_commands": [{"command": SLOW_SETUP}]}
    )
    assert env.status == "pending" and env.to_dict()["setup"] is None, "nothing runs before first use"
    return env


def test_retrieve_shows_the_running_step_and_a_growing_setup_log(client):
    env = slow_environment(client)
    seen = []
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        # A direct file write is a first use: it answers once setup is done.
        data = base64.b64encode(b"a").decode()
        write = pool.submit(
            client.beta.agents.environments.files.create, env.id, type="inline", path="/workspace/a.txt", data=data
        )
        deadline = time.monotonic() + 30
        while (current := client.beta.agents.environments.retrieve(env.id)).status == "pending":
            seen.append(current.to_dict())
            assert time.monotonic() < deadline, seen[-1]
            time.sleep(0.025)
        assert write.result().path == "/workspace/a.txt"
    logs = [e.get("setup_log") for e in seen if (e["setup"] or {}).get("step") == "setup_commands[0]"]
    assert f"$ {SLOW_SETUP}\none\n" in logs, f"the log after `one` only, while pending: {logs}"
    assert f"$ {SLOW_SETUP}\none\ntwo\n" in logs, f"then grown, still pending: {logs}"
    half = next(e for e in seen if e.get("setup_log") == f"$ {SLOW_SETUP}\none\n")
    assert {k: half["setup"][k] for k in ("state", "step", "command", "steps_completed", "steps_total")} == {
        "state": "running",
        "step": "setup_commands[0]",
        "command": SLOW_SETUP,
        "steps_completed": 0,
        "steps_total": 1,
    }
    done = current.to_dict()
    assert current.status == "ready" and done["setup_log"] == f"$ {SLOW_SETUP}\none\ntwo\n"
    assert (done["setup"]["state"], done["setup"]["step"], done["setup"]["steps_completed"]) == ("completed", None, 1)


def test_a_waiting_turn_streams_the_setup_output_as_pending_events(client, model):
    env = slow_environment(client)
    session = client.beta.agents.sessions.create(
        agent={"model": "gpt-test"}, environment={"type": "reference", "environment_id": env.id}
    )
    model.script(call("shell", {"command": "echo after-setup"}), reply("Done."))
    with client.beta.agents.sessions.events.stream(session.id, timeout=STREAM_TIMEOUT) as stream:
        send(client, session.id, "go")
        events = collect(stream, lambda e: e.type == "agent.session.turn.completed")
    kinds = [e.type for e in events]
    pending = [e for e in events if e.type == "agent.session.environment.pending"]
    assert all(isinstance(e, AgentSessionEnvironmentPendingEvent) for e in pending), "the client's own type"
    assert len(pending) >= 2, f"one when the turn starts waiting, then the output: {kinds}"
    last_pending = max(i for i, k in enumerate(kinds) if k == "agent.session.environment.pending")
    assert last_pending < kinds.index("agent.session.environment.ready"), kinds
    for e in pending:
        assert (e.environment.id, e.environment.status) == (env.id, "pending")
        if "setup_output" in e.to_dict():  # the first may come before setup started, without either
            assert e.to_dict()["environment"]["setup"]["state"] == "running"
    streamed = "".join(e.to_dict().get("setup_output", "") for e in pending)
    ready = wait_until(lambda: (r := client.beta.agents.environments.retrieve(env.id)).status == "ready" and r, "ready")
    assert streamed == ready.to_dict()["setup_log"], "the events carry the whole log, in order"
    assert "two\n" in streamed
