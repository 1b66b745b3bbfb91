"""The README's "Try it without a model account", as written: the scripted model server playing
`examples/scripted-model.json` in a loop, `rebyte serve` pointed at it with `OPENAI_BASE_URL`, and
`examples/first-turn.sh` run unmodified with only `REBYTE_API_KEY` and `REBYTE_BASE_URL` set (ports and the
data directory moved, as the README's commands allow). Its output shows what the user should see: the session,
the streamed answer, the command with its output, the turn completed, the artifact and its content. Twice in a
row (the looping script answers every turn), and a failing turn is said to be one."""

from __future__ import annotations

import os
import re
import subprocess
from typing import Iterator

import pytest

from harness import REPO_ROOT, Server
from scripted import ScriptedModel

SCRIPT = REPO_ROOT / "examples" / "first-turn.sh"
DEMO = REPO_ROOT / "examples" / "scripted-model.json"


@pytest.fixture
def demo() -> Iterator[tuple[ScriptedModel, Server]]:
    model = ScriptedModel("--script", str(DEMO), "--loop").start()
    server = Server(env={"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "unused"}).start()
    try:
        yield model, server
    finally:
        server.stop()
        server.cleanup()
        model.stop()


def first_turn(server: Server, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("REBYTE_")}
    key = (server.data_dir / "bootstrap-key").read_text().strip()
    environ.update({"REBYTE_API_KEY": key, "REBYTE_BASE_URL": f"{server.url}/v1", **env})
    return subprocess.run(["bash", str(SCRIPT)], env=environ, capture_output=True, text=True, timeout=60)


def test_the_first_turn_runs_end_to_end_against_the_scripted_model(demo):
    model, server = demo
    for _ in range(2):
        run = first_turn(server)
        out = run.stdout
        assert run.returncode == 0, out + run.stderr
        session = re.search(r"^session ([0-9a-f-]{36}), environment env_[0-9a-f]{32}$", out, re.M)
        assert session, out
        assert out.index("Let me try the sandbox.") < out.index("[environment ready]") < out.index("$ uname -sr")
        assert re.search(r"\[exit 0\]\nLinux \S+\nhello from session " + session.group(1) + "\n", out), out
        assert "it wrote hello.txt to your outputs.\nturn completed\n" in out, out
        assert out.endswith(f"artifact /workspace/outputs/hello.txt:\nhello from session {session.group(1)}\n"), out
    assert model.stats()["requests"] == 4, "two turns of two model steps each"


def test_a_failing_turn_is_said_to_be_one():
    """A model endpoint that answers every request with an error (here: a scripted model with no script): the
    script prints the turn's failure with its code and message and exits non-zero, with no artifact."""
    model = ScriptedModel().start()
    server = Server(env={"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "unused"}).start()
    try:
        run = first_turn(server)
    finally:
        server.stop()
        server.cleanup()
        model.stop()
    assert run.returncode == 1, run.stdout + run.stderr
    failed = re.search(r"^turn failed: (\S+): (.*)$", run.stdout, re.M)
    assert failed, run.stdout
    assert "gpt-6-luna" in failed.group(2) and "script exhausted" in failed.group(2), failed.group(0)
    assert run.stdout.rstrip().endswith("the turn produced no artifact"), run.stdout
