"""Fixtures of the console's browser tests: the real `rebyte serve` binary
pointed at the scripted model server (both from `cargo build --bins`), a
small client of the public API (standard library only), and headless
Chromium from Debian's packages driven by Selenium through Debian's
chromedriver — no browser or driver is downloaded at test time.

Each test's screenshots go to its own temporary directory (`tmp_path`).
"""

from __future__ import annotations

import json
import os
import queue
import re
import secrets
import shutil
import string
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

REPO_ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("REBYTE_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("REBYTE_CHROMEDRIVER", "/usr/bin/chromedriver")


def new_key() -> str:
    alphabet = string.ascii_letters + string.digits
    return "rbk_" + "".join(secrets.choice(alphabet) for _ in range(40))


class Process:
    """A child process found through the line it prints once it listens."""

    def __init__(self, argv: list[str], banner: str, env: dict[str, str], log: Path):
        self.log = log
        self._log = open(log, "w")
        self.proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=self._log, stdin=subprocess.DEVNULL, env=env, text=True
        )
        lines: queue.Queue[str | None] = queue.Queue()

        def pump() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                lines.put(line.rstrip("\n"))
            lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        pattern = re.compile(rf"^{re.escape(banner)} (http://\S+)$")
        deadline = time.monotonic() + 60
        while True:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                line = ""
            if line is None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{argv[0]} did not start:\n{log.read_text()[-4000:]}")
            match = pattern.match(line)
            if match:
                self.url = match.group(1)
                return

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


class Api:
    """The public API with one key."""

    def __init__(self, base: str, key: str):
        self.base, self.key = base, key

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"{self.base}{path}", data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.key}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read() or b"null")

    def ok(self, method: str, path: str, body: Any = None) -> Any:
        status, answer = self.call(method, path, body)
        assert 200 <= status < 300, f"{method} {path}: {status} {answer}"
        return answer

    def session(self, environment: dict | None = None, **agent: Any) -> dict:
        """A session (with no environment unless given); `agent` adds to its inline agent (`tools=[…]`)."""
        body = {"environment": environment or {"type": "none"}, "agent": {"model": "gpt-test", **agent}}
        return self.ok("POST", "/v1/agents/sessions", body)

    def send(self, session_id: str, text: str) -> str:
        """Submits a user message; the id of the turn it created."""
        event = {"type": "agent.session.input.message", "input": [{"role": "user", "content": [{"type": "input_text", "text": text}]}]}
        self.ok("POST", f"/v1/agents/sessions/{session_id}/events", {"events": [event]})
        return self.ok("GET", f"/v1/agents/sessions/{session_id}/turns?limit=1")["data"][0]["id"]

    def turn(self, session_id: str, turn_id: str) -> dict:
        return self.ok("GET", f"/v1/agents/sessions/{session_id}/turns/{turn_id}")

    def org_key(self, scopes: list[str]) -> tuple[str, "Api"]:
        """A new organization and a key of it with `scopes` (this key must be an admin's)."""
        org = self.ok("POST", "/v1/admin/organizations", {"name": f"console-{secrets.token_hex(4)}"})
        return org["id"], self.key_of(org["id"], scopes)

    def key_of(self, org_id: str, scopes: list[str]) -> "Api":
        key = self.ok("POST", "/v1/admin/keys", {"organization_id": org_id, "scopes": scopes})
        return Api(self.base, key["secret"])


class Model:
    """The scripted model server's control API (see tests/compat/scripted.py)."""

    def __init__(self, url: str):
        self.url = url

    def _post(self, path: str, body: Any = None) -> None:
        data = json.dumps(body).encode() if body is not None else b""
        req = urllib.request.Request(f"{self.url}{path}", data=data, method="POST")
        req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=10) as resp:
            assert resp.status == 200

    def script(self, *steps: dict) -> None:
        self._post("/_script", list(steps))

    def reset(self) -> None:
        self._post("/_reset")


BIN_DIR = Path(os.environ.get("REBYTE_BIN", REPO_ROOT / "target" / "debug" / "rebyte")).parent


def serve(model_url: str, data_dir: Path, key: str, listen: str = "127.0.0.1:0") -> Process:
    """`rebyte serve` on `data_dir`, its models at the scripted server, `key` its bootstrap key."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REBYTE_")}
    env.update({"OPENAI_BASE_URL": f"{model_url}/v1", "OPENAI_API_KEY": "test", "REBYTE_BOOTSTRAP_KEY": key})
    argv = [str(BIN_DIR / "rebyte"), "serve", "--listen", listen, "--data-dir", str(data_dir)]
    return Process(argv, "rebyte listening on", env, data_dir.parent / f"server-{secrets.token_hex(4)}.log")


@pytest.fixture(scope="session")
def stack() -> Iterator[tuple[Model, str, str]]:
    """(the scripted model, the server's base URL, its bootstrap key)."""
    work = Path(tempfile.mkdtemp(prefix="rebyte-console-"))
    model = Process([str(BIN_DIR / "scripted-model"), "--listen", "127.0.0.1:0"], "scripted model listening on", dict(os.environ), work / "model.log")
    key = new_key()
    try:
        server = serve(model.url, work / "data", key)
    except Exception:
        model.stop()
        raise
    try:
        yield Model(model.url), server.url, key
    finally:
        server.stop()
        model.stop()
        shutil.rmtree(work, ignore_errors=True)


@pytest.fixture
def model(stack: tuple[Model, str, str]) -> Model:
    stack[0].reset()
    return stack[0]


@pytest.fixture
def url(stack: tuple[Model, str, str]) -> str:
    return stack[1]


@pytest.fixture
def admin(stack: tuple[Model, str, str]) -> Api:
    return Api(stack[1], stack[2])


@pytest.fixture
def org(admin: Api) -> tuple[str, Api]:
    """A fresh organization (so each test sees only its sessions) and a task key of it."""
    return admin.org_key(["tasks:read", "tasks:write"])


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[webdriver.Chrome]:
    """Headless Chromium; its last screen is saved as `final.png` in the test's directory."""
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1280,900"]:
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.implicitly_wait(0)
    try:
        yield driver
    finally:
        driver.save_screenshot(str(tmp_path / "final.png"))
        driver.quit()


MCP_SERVERS = REPO_ROOT / "crates" / "mcp" / "tests" / "servers"
EVERYTHING = MCP_SERVERS / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"


@pytest.fixture(scope="session")
def everything(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The reference MCP server `server-everything` in Streamable HTTP mode (from
    the mcp crate's `tests/servers`, installed with `npm ci` on first use, as
    the compatibility suite does); yields its MCP URL."""
    import socket

    if not EVERYTHING.exists():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=MCP_SERVERS, check=True)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = tmp_path_factory.mktemp("mcp") / "everything.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            ["node", str(EVERYTHING), "streamableHttp"], cwd=MCP_SERVERS, env={**os.environ, "PORT": str(port)},
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )
    try:
        deadline = time.monotonic() + 30
        while "listening on port" not in log.read_text().lower():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"server-everything did not start:\n{log.read_text()[-2000:]}")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
