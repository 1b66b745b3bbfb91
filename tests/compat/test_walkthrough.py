"""The walkthrough (shared/WALKTHROUGH.md) as a user runs it: `examples/walkthrough.py`, unmodified, in a
process of its own against the suite's server, with `REBYTE_WALKTHROUGH_OFFLINE=1` (a setup command that
needs no network; the optional MCP server gives up at once). The scripted model plays the turn the walkthrough
asks for: it calls the built-in `shell` tool to average input.csv and write report.md into $REBYTE_OUTPUT_DIR,
calls the `now` client function, and answers; then it answers the Responses API call.

Checked against what WALKTHROUGH.md says the user should see: the environment goes pending → ready on the
first turn; the turn shows a command_execution with its output; report.md comes back as an artifact of `main`
only; a second run never repeats setup for an environment that already ran it; an error names what failed
(which server, which step, which model)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Any

import pytest

from harness import REPO_ROOT
from scripted import call, reply

SCRIPT = REPO_ROOT / "examples" / "walkthrough.py"
RUN_TIMEOUT = 60
# What the model runs: the average of input.csv with the standard library, written to the session's outputs.
AVERAGE = (
    "python3 -c \"import csv, os, statistics; "
    "rows = list(csv.DictReader(open('/workspace/input.csv'))); "
    "avg = statistics.mean(float(r['temp']) for r in rows); "
    "open(os.path.join(os.environ['REBYTE_OUTPUT_DIR'], 'report.md'), 'w').write(f'# Temperatures\\n\\nAverage: {avg}\\n'); "
    "print('average', avg)\""
)
ANSWER = "The average temperature is 15.0; report.md is in your outputs."
CITIES = "Oslo (9), then Paris (21)."
SETUP_MARK = "echo setup >> /workspace/.setup-runs"


def the_turn() -> list[dict[str, Any]]:
    """The model's steps for one run: the turn (shell, now, answer), then the Responses call."""
    return [
        call("shell", {"command": AVERAGE}, text="Let me compute that."),
        call("now"),
        reply(ANSWER, chunks=3),
        reply(CITIES),
    ]


def walkthrough(url: str, key: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Runs examples/walkthrough.py the way a user does, with REBYTE_BASE_URL / REBYTE_API_KEY and `env`."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("REBYTE_")}
    environ.update({"REBYTE_BASE_URL": f"{url}/v1", "REBYTE_API_KEY": key, "REBYTE_WALKTHROUGH_OFFLINE": "1", **env})
    return subprocess.run(
        [sys.executable, str(SCRIPT)], env=environ, capture_output=True, text=True, timeout=RUN_TIMEOUT
    )


def env_ids(out: str) -> list[str]:
    return re.findall(r"^environment (env_[0-9a-f]+): (\w+)", out, re.M)


@pytest.fixture
def org_key(admin) -> str:
    """A key (tasks scopes) of an organization of its own, so that its lists show only the walkthrough's objects."""
    org = admin.create_org()
    return admin.create_key(org["id"], ["tasks:read", "tasks:write"])["secret"]


def test_the_walkthrough_runs_and_shows_what_the_user_should_see(url, admin, org_key, model):
    model.script(*the_turn())
    run = walkthrough(url, org_key)
    out = run.stdout
    assert run.returncode == 0, out + run.stderr
    assert run.stderr == "", "no warnings, no tracebacks"

    # The environment goes pending → ready on the first turn; setup ran then, once.
    [(env_id, before), (same, after)] = env_ids(out)
    assert (same, before, after) == (env_id, "pending", "ready"), out
    setup = re.search(r"^setup \(ran once, when the environment first started\):\n((?:\$ .*\n)+)", out, re.M)
    assert setup, out
    assert setup.group(1).splitlines() == ["$ write /workspace/input.csv", setup.group(1).splitlines()[1]]
    assert setup.group(1).splitlines()[1].endswith(SETUP_MARK), "the one setup command, offline variant"
    assert re.search(rf"^sessions main (\S+) and helper (\S+) share environment {env_id}$", out, re.M), out

    # The turn streamed its text and showed the command with its output; the client function ran here.
    assert "Let me compute that." in out and ANSWER in out
    assert f"$ {AVERAGE}  [exit 0, completed]\naverage 15.0\n" in out, out
    assert "[now() called by the model]" in out
    bodies = model.bodies()
    tool_results = [m["content"] for m in bodies[2]["messages"] if m["role"] == "tool"]
    assert tool_results == ["exit code: 0\naverage 15.0\n", "2026-11-30T12:00:00Z"], "shell then now, in order"
    assert {t["function"]["name"] for t in bodies[0]["tools"]} >= {"shell", "read_file", "write_file", "now"}
    assert bodies[0]["model"] == "gpt-6-luna"

    # report.md is an artifact of main only.
    main_id = re.search(r"^sessions main (\S+) and", out, re.M).group(1)
    artifacts = re.findall(r"^SessionArtifact\((.*)\)$", out, re.M)
    assert len(artifacts) == 1, out
    assert "report.md" in artifacts[0] and f"session_id='{main_id}'" in artifacts[0]
    assert f"environment_id='{env_id}'" in artifacts[0] and "size_bytes=30" in artifacts[0]
    assert "helper has 0 artifact(s)" in out

    # The same session through the Responses API, then the cleanup.
    assert out.rstrip().splitlines()[-2:] == [CITIES, f"deleted environment {env_id}"], out
    assert bodies[3]["messages"][-1] == {"role": "user", "content": "Now list the cities, coldest first."}
    assert len(bodies) == 4
    client = admin.client_for(org_key)
    assert client.beta.agents.sessions.list().data == [] and client.beta.agents.environments.list().data == []
    assert client.beta.agents.list().data == []


def test_a_second_run_never_repeats_setup_for_the_same_environment(url, admin, org_key, model):
    """Two runs on one environment (the first keeps it, the second reuses it), two sessions each: the setup
    command, which appends a line to /workspace/.setup-runs each time it runs, ran once."""
    model.script(*the_turn(), *the_turn())
    first = walkthrough(url, org_key, REBYTE_KEEP_ENVIRONMENT="1")
    assert first.returncode == 0, first.stdout + first.stderr
    [(env_id, before), (env_id_again, after)] = env_ids(first.stdout)
    assert (env_id_again, before, after) == (env_id, "pending", "ready")
    assert f"kept environment {env_id}" in first.stdout

    second = walkthrough(url, org_key, REBYTE_ENVIRONMENT_ID=env_id, REBYTE_KEEP_ENVIRONMENT="1")
    assert second.returncode == 0, second.stdout + second.stderr
    assert env_ids(second.stdout) == [(env_id, "ready"), (env_id, "ready")]
    assert f"environment {env_id}: ready (reused: its setup does not run again)" in second.stdout
    assert "average 15.0" in second.stdout and CITIES in second.stdout

    client = admin.client_for(org_key)
    files = {f.path: f.size_bytes for f in client.beta.agents.environments.files.list(env_id)}
    assert files["/workspace/.setup-runs"] == len("setup\n"), "setup ran once for two runs and four sessions"
    assert client.beta.agents.environments.retrieve(env_id).to_dict()["setup_log"].count(SETUP_MARK) == 1
    assert client.beta.agents.sessions.list().data == [], "both runs deleted their sessions"
    assert client.delete(f"/agents/environments/{env_id}", cast_to=object)["deleted"] is True


def test_a_failing_setup_names_the_step_and_its_output(url, org_key, model):
    model.script(call("shell", {"command": "echo never"}))
    run = walkthrough(url, org_key, REBYTE_WALKTHROUGH_SETUP="echo fetching pandas; echo 'no network' >&2; exit 7")
    out = run.stdout
    assert run.returncode == 1, out + run.stderr
    assert "environment setup failed at step `echo fetching pandas; echo 'no network' >&2; exit 7`: exit code 7\n" in out
    assert all(line.count("exit 7`") <= 1 for line in out.splitlines()), "no message repeats the step"
    assert "fetching pandas" in out and "no network" in out, "the failing command's output"
    assert re.search(r"^turn failed: sandbox_error: .*exit", out, re.M), out
    assert re.search(r"^environment env_\w+: failed$", out, re.M)
    assert re.search(r"^deleted environment env_\w+$", out, re.M), "cleanup still runs"


def test_a_failing_model_names_the_model(url, org_key, model):
    model.script({"type": "error", "status": 400, "body": '{"error":{"message":"no such model"}}'})
    run = walkthrough(url, org_key)
    out = run.stdout
    assert run.returncode == 1, out + run.stderr
    assert re.search(r"^turn failed: invalid_request: model 'gpt-6-luna' failed: .*HTTP 400", out, re.M), out
    assert "no such model" in out


def test_a_required_mcp_server_that_cannot_start_names_the_server(url, org_key, model):
    """With `required: True`, as WALKTHROUGH.md has it, an MCP server that cannot start offline fails the turn,
    naming the server and the step."""
    model.script(*the_turn())
    run = walkthrough(url, org_key, REBYTE_WALKTHROUGH_MCP_REQUIRED="1")
    out = run.stdout
    assert run.returncode == 1, out + run.stderr
    assert "MCP server 'files' (required)" in out
    failed = re.search(r"^turn failed: (\w+): (.*)$", out, re.M)
    assert failed, out
    assert "'files'" in failed.group(2) and "step" in failed.group(2), failed.group(0)
    assert model.stats()["requests"] == 0, "the turn failed before the first model call"


def test_a_refused_request_names_the_call(url, model):
    run = walkthrough(url, "rbk_" + "x" * 40)
    assert run.returncode == 2, run.stdout + run.stderr
    [line] = run.stdout.splitlines()
    assert line.startswith("error: POST /v1/agents answered 401: "), line
    assert model.stats()["requests"] == 0


def test_a_turn_that_called_no_tool_and_wrote_no_artifact_is_said_to_be_so(url, org_key, model):
    """A model that answers without calling a tool (as one without tool calling does): the walkthrough says the
    turn called no tool and produced no artifact, and exits non-zero, instead of looking like a success."""
    model.script(reply("The average is about 15."), reply(CITIES))
    run = walkthrough(url, org_key)
    out = run.stdout
    assert run.returncode == 1, out + run.stderr
    assert "not as the walkthrough shows: the turn called no tool: model gpt-6-luna answered" in out, out
    assert "not as the walkthrough shows: the turn produced no artifact" in out, out
    assert CITIES in out, "the rest still ran"
    assert re.search(r"^deleted environment env_\w+$", out, re.M), "cleanup still runs"
