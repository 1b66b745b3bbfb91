"""The scripted model server (`target/debug/scripted-model`, from the
test-support crate) driven over its HTTP control API, and helpers for tests
that run turns against it.

The model server speaks the OpenAI Chat Completions wire format and plays one
scripted step per request:

    {"type": "reply", "text": "Hello", "chunks": 3, "tool_calls": [{"id"?, "name", "arguments"}],
     "chunk_delay_ms", "latency_ms", "usage": {...}, "finish_reason", "cut_after", "stall_after",
     "abort_after", "repeat": n}
    {"type": "error", "status": 500, "body": "..."}
    {"type": "stall"}

`POST /_script` appends steps, `GET /_requests` lists every request body it
received, `GET /_stats` counts them, `POST /_reset` empties everything.
"""

from __future__ import annotations

import os
import queue
import re
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable

import httpx2
from openai import OpenAI

from harness import REPO_ROOT

LISTENING = re.compile(r"^scripted model listening on (http://\S+)$")
START_TIMEOUT = 30.0
WAIT_TIMEOUT = 10.0
# A read timeout for event streams: a test that waits for an event the server
# never sends fails after this long instead of hanging (keep-alives come every 15 s).
STREAM_TIMEOUT = 10.0

NONE = {"type": "none"}
NOW_TOOL = {
    "type": "function",
    "name": "now",
    "description": "The current time",
    "parameters": {"type": "object", "properties": {}},
}
NOW = "2026-11-30T12:00:00Z"


def scripted_model_bin() -> Path:
    return Path(os.environ.get("SCRIPTED_MODEL_BIN") or REPO_ROOT / "target" / "debug" / "scripted-model")


class ScriptedModel:
    """One `scripted-model` process on a free port."""

    def __init__(self, *args: str) -> None:
        """`args` go to the binary after `--listen` (`--script FILE`, `--loop`)."""
        self.args = list(args)
        self.url = ""
        self.proc: subprocess.Popen[str] | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._http = httpx2.Client(timeout=10)

    def start(self) -> "ScriptedModel":
        binary = scripted_model_bin()
        if not binary.exists():
            raise RuntimeError(f"{binary} does not exist: run `cargo build --bins` first, or set SCRIPTED_MODEL_BIN")
        self.proc = subprocess.Popen(
            [str(binary), "--listen", "127.0.0.1:0", *self.args],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        threading.Thread(target=self._pump, daemon=True).start()
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.stop()
                raise RuntimeError("scripted-model did not print its listening line")
            try:
                line = self._lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                raise RuntimeError(f"scripted-model exited with {self.proc.wait()} before listening")
            match = LISTENING.match(line)
            if match:
                self.url = match.group(1)
                return self

    def _pump(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line.rstrip("\n"))
        self._lines.put(None)

    @property
    def base_url(self) -> str:
        """For `OPENAI_BASE_URL`."""
        return f"{self.url}/v1"

    def env(self) -> dict[str, str]:
        """The environment that points `rebyte serve` at this model server."""
        return {"OPENAI_BASE_URL": self.base_url, "OPENAI_API_KEY": "test"}

    def script(self, *steps: dict[str, Any]) -> None:
        r = self._http.post(f"{self.url}/_script", json=list(steps))
        assert r.status_code == 200, r.text

    def requests(self) -> list[dict[str, Any]]:
        """Every model request received since the last reset: `{path, headers, body}`."""
        return self._http.get(f"{self.url}/_requests").json()

    def bodies(self) -> list[dict[str, Any]]:
        return [r["body"] for r in self.requests()]

    def stats(self) -> dict[str, int]:
        """`{"requests", "pending", "aborted"}`."""
        return self._http.get(f"{self.url}/_stats").json()

    def reset(self) -> None:
        self._http.post(f"{self.url}/_reset").raise_for_status()

    def stop(self) -> None:
        self._http.close()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def reply(text: str = "", **fields: Any) -> dict[str, Any]:
    return {"type": "reply", "text": text, **fields}


def call(name: str, arguments: Any = None, id: str | None = None, text: str = "", **fields: Any) -> dict[str, Any]:
    """A reply that calls one tool."""
    tool_call: dict[str, Any] = {"name": name, "arguments": {} if arguments is None else arguments}
    if id is not None:
        tool_call["id"] = id
    return {"type": "reply", "text": text, "tool_calls": [tool_call], **fields}


def message(text: str) -> dict[str, Any]:
    """An `agent.session.input.message` input event."""
    return {"type": "agent.session.input.message", "input": [user(text)]}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "input_text", "text": text}]}


def send(client: OpenAI, session_id: str, text: str, **kwargs: Any) -> None:
    client.beta.agents.sessions.events.create(session_id, events=[message(text)], **kwargs)


def wait_until(check: Callable[[], Any], what: str, timeout: float = WAIT_TIMEOUT) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)


def turns(client: OpenAI, session_id: str) -> list[Any]:
    """Every turn of a session, oldest first."""
    return list(client.beta.agents.sessions.turns.list(session_id, order="asc", limit=100))


def wait_turn(client: OpenAI, session_id: str, turn_id: str, *statuses: str) -> Any:
    """The turn once its status is one of `statuses` (default: a terminal one)."""
    wanted = statuses or ("completed", "failed", "cancelled")

    def check() -> Any:
        turn = client.beta.agents.sessions.turns.retrieve(turn_id, session_id=session_id)
        return turn if turn.status in wanted else None

    return wait_until(check, f"turn {turn_id} to be {'/'.join(wanted)}")


def wait_idle(client: OpenAI, session_id: str) -> Any:
    """The session once it is idle (a turn's row is written just before its session's state)."""

    def check() -> Any:
        session = client.beta.agents.sessions.retrieve(session_id)
        return session if session.status == "idle" else None

    return wait_until(check, f"session {session_id} to be idle")


def only_turn(client: OpenAI, session_id: str) -> Any:
    """The session's one turn, once it exists."""
    found = wait_until(lambda: turns(client, session_id), f"a turn of session {session_id}")
    assert len(found) == 1, found
    return found[0]


def last_turn(client: OpenAI, session_id: str, count: int) -> Any:
    """The newest turn, once the session has `count` turns."""
    found = wait_until(lambda: (t := turns(client, session_id)) and len(t) >= count and t, f"{count} turns")
    assert len(found) == count, found
    return found[-1]


def collect(stream: Iterable[Any], until: Callable[[Any], bool]) -> list[Any]:
    """Events from `stream` up to and including the first one `until` accepts."""
    events = []
    for event in stream:
        events.append(event)
        if until(event):
            return events
    raise AssertionError(f"the stream ended before the awaited event; got {[e.type for e in events]}")


def types(events: Iterable[Any]) -> list[str]:
    return [e.type for e in events]
