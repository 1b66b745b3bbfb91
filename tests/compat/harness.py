"""Helpers for the compatibility suite: a `rebyte serve` process on a free
port, the admin API, and checks that an answer is what the client's types
describe.

The server is started the way a user starts it and is found through the one
line it prints on stdout once it listens (`rebyte listening on http://…`); we
never sleep to wait for it.
"""

from __future__ import annotations

import ctypes
import os
import queue
import re
import secrets
import shutil
import signal
import string
import subprocess
import tempfile
import threading
import time
import urllib.parse
import uuid
from pathlib import Path
from typing import Any, Iterable

import httpx2
import openai
from openai import OpenAI

REPO_ROOT = Path(__file__).resolve().parents[2]
LISTENING = re.compile(r"^rebyte listening on (http://\S+)$")
START_TIMEOUT = 60.0
STOP_TIMEOUT = 20.0

ALL_SCOPES = ["tasks:read", "tasks:write", "vaults:read", "vaults:write", "admin"]
TASK_SCOPES = ["tasks:read", "tasks:write"]

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
AGENT_ID_RE = re.compile(r"^agent_[0-9a-f]{32}$")
CONV_ID_RE = re.compile(r"^conv_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def rebyte_bin() -> Path:
    return Path(os.environ.get("REBYTE_BIN") or REPO_ROOT / "target" / "debug" / "rebyte")


def new_key() -> str:
    """A fresh `rbk_` key: 40 base62 characters."""
    alphabet = string.ascii_letters + string.digits
    return "rbk_" + "".join(secrets.choice(alphabet) for _ in range(40))


# Whether this run's servers use PostgreSQL (scripts/test's second compat run).
ON_POSTGRES = bool(os.environ.get("REBYTE_TEST_DATABASE_URL"))
# The run on two nodes of one PostgreSQL database (scripts/test's third run,
# REBYTE_COMPAT_NODES=2): the suite's clients write to one node and read from
# the other. Set by the `server` fixture: (writes' base URL, reads' base URL).
TWO_NODES = os.environ.get("REBYTE_COMPAT_NODES") == "2"
SPLIT: tuple[str, str] | None = None


class ReadsElsewhere(httpx2.BaseTransport):
    """Sends every GET to another node (`reads`), every other request where it was addressed."""

    def __init__(self, reads: str):
        self._reads = httpx2.URL(reads)
        self._inner = httpx2.HTTPTransport()

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.method == "GET":
            request.url = request.url.copy_with(host=self._reads.host, port=self._reads.port)
        return self._inner.handle_request(request)

    def close(self) -> None:
        self._inner.close()


def api_client(key: str, base_url: str) -> OpenAI:
    """The official client for `base_url`; in the two-node run, the session
    server's reads go to its second node (the client itself is unmodified:
    only its HTTP transport chooses the node)."""
    if SPLIT is not None and base_url == SPLIT[0]:
        http = openai.DefaultHttpxClient(transport=ReadsElsewhere(SPLIT[1]))
        return OpenAI(api_key=key, base_url=f"{base_url}/v1", http_client=http)
    return OpenAI(api_key=key, base_url=f"{base_url}/v1")


_libc = ctypes.CDLL(None, use_errno=True)
_MNT_DETACH = 2


def detach_mounts_below(directory: Path) -> None:
    """Lazily detaches what a stopped server left mounted under `directory`
    (its sandbox images), deepest first, so that the directory can be removed.
    Without the privilege to unmount, nothing was mounted either."""
    root = str(directory.resolve())
    try:
        table = Path("/proc/self/mountinfo").read_text()
    except OSError:
        return
    targets = []
    for line in table.splitlines():
        fields = line.split(" ")
        if len(fields) > 4:
            target = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])
            if target == root or target.startswith(root + "/"):
                targets.append(target)
    for target in sorted(targets, key=len, reverse=True):
        _libc.umount2(target.encode(), _MNT_DETACH)


class Server:
    """One `rebyte serve` process with its own data directory."""

    def __init__(
        self,
        data_dir: Path | None = None,
        bootstrap_key: str | None = None,
        extra_args: Iterable[str] = (),
        env: dict[str, str] | None = None,
    ):
        self._own_dir = data_dir is None
        self.extra_env = dict(env or {})
        self.data_dir = data_dir or Path(tempfile.mkdtemp(prefix="rebyte-compat-")) / "data"
        self.bootstrap_key = bootstrap_key
        self.extra_args = list(extra_args)
        self.url: str = ""
        # The PostgreSQL database the server uses when the suite runs on PostgreSQL.
        self.database_url: str | None = None
        self.banner: list[str] = []  # stdout lines printed before the listening line
        self.proc: subprocess.Popen[str] | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._log_path = self.data_dir.parent / f"server-{uuid.uuid4().hex[:8]}.log"

    def start(self) -> "Server":
        binary = rebyte_bin()
        if not binary.exists():
            raise RuntimeError(f"{binary} does not exist: run `cargo build --bins` first, or set REBYTE_BIN")
        env = {k: v for k, v in os.environ.items() if k != "REBYTE_BOOTSTRAP_KEY"}
        if self.bootstrap_key is not None:
            env["REBYTE_BOOTSTRAP_KEY"] = self.bootstrap_key
        env.update(self.extra_env)
        self.database_url = self._test_database(env)
        if self.database_url is not None:
            env["REBYTE_DATABASE_URL"] = self.database_url
        self._log = open(self._log_path, "w")
        self.proc = subprocess.Popen(
            [str(binary), "serve", "--listen", "127.0.0.1:0", "--data-dir", str(self.data_dir), *self.extra_args],
            stdout=subprocess.PIPE,
            stderr=self._log,
            stdin=subprocess.DEVNULL,
            env=env,
            text=True,
        )
        # A reader thread keeps draining stdout so that the server never blocks
        # on a full pipe, and lets us wait for the listening line with a timeout.
        threading.Thread(target=self._pump, daemon=True).start()
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.stop()
                raise RuntimeError(f"rebyte did not print its listening line within {START_TIMEOUT}s\n{self.log()}")
            try:
                line = self._lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                code = self.proc.wait()
                raise RuntimeError(f"rebyte exited with {code} before listening\n{self.log()}")
            match = LISTENING.match(line)
            if match:
                self.url = match.group(1)
                return self
            self.banner.append(line)

    def _test_database(self, env: dict[str, str]) -> str | None:
        """With REBYTE_TEST_DATABASE_URL set (a PostgreSQL cluster's base URL),
        a fresh database for this data directory, created on its first start
        and kept beside it for restarts; None when the suite runs on SQLite or
        the test chose its own database."""
        base = os.environ.get("REBYTE_TEST_DATABASE_URL")
        if not base or "REBYTE_DATABASE_URL" in self.extra_env or "--database-url" in self.extra_args:
            return None
        kept = self.data_dir.parent / f"{self.data_dir.name}.database-url"
        if kept.exists():
            return kept.read_text()
        name = f"rebyte_compat_{uuid.uuid4().hex}"
        subprocess.run(["psql", base, "-q", "-c", f"CREATE DATABASE {name}"], check=True, env=env)
        parts = urllib.parse.urlsplit(base)
        url = urllib.parse.urlunsplit(parts._replace(path=f"/{name}"))
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        kept.write_text(url)
        return url

    def stored_bytes(self) -> list[tuple[str, bytes]]:
        """Everything the server stored, as (name, bytes): the data directory's
        files and, on PostgreSQL, the database as pg_dump writes it."""
        stored = [(p.name, p.read_bytes()) for p in self.data_dir.iterdir() if p.is_file()]
        if self.database_url is not None:
            bin_dir = os.environ.get("REBYTE_TEST_PG_BIN", "/usr/bin")
            dump = subprocess.run([f"{bin_dir}/pg_dump", f"--dbname={self.database_url}"], check=True, capture_output=True)
            stored.append(("pg_dump", dump.stdout))
        return stored

    def _pump(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line.rstrip("\n"))
        self._lines.put(None)

    def log(self) -> str:
        try:
            return self._log_path.read_text()[-4000:]
        except OSError:
            return ""

    def stop(self, sig: int = signal.SIGTERM) -> int | None:
        """Sends `sig`, waits for the exit, and returns the exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        # A restart mounts the images again.
        detach_mounts_below(self.data_dir)
        return self.proc.returncode

    def cleanup(self) -> None:
        if self._own_dir:
            shutil.rmtree(self.data_dir.parent, ignore_errors=True)

    def client(self, key: str | None = None) -> OpenAI:
        return OpenAI(api_key=key or self.bootstrap_key, base_url=f"{self.url}/v1")


class Admin:
    """The admin endpoints, driven through the client's generic `post`/`get`/`delete`."""

    def __init__(self, client: OpenAI, base_url: str):
        self.client = client
        self.base_url = base_url
        self._clients: list[OpenAI] = []

    def create_org(self, name: str | None = None) -> dict[str, Any]:
        name = name or f"org-{uuid.uuid4().hex[:12]}"
        return self.client.post("/admin/organizations", body={"name": name}, cast_to=object)

    def create_key(self, organization_id: str, scopes: list[str] | None = None, name: str | None = None) -> dict:
        body: dict[str, Any] = {"organization_id": organization_id}
        if scopes is not None:
            body["scopes"] = scopes
        if name is not None:
            body["name"] = name
        return self.client.post("/admin/keys", body=body, cast_to=object)

    def list_keys(self) -> list[dict[str, Any]]:
        return self.client.get("/admin/keys", cast_to=object)["data"]

    def revoke_key(self, key_id: str) -> dict[str, Any]:
        return self.client.delete(f"/admin/keys/{key_id}", cast_to=object)

    def client_for(self, secret: str) -> OpenAI:
        c = api_client(secret, self.base_url)
        self._clients.append(c)
        return c

    def new_org_client(self, scopes: list[str] | None = None) -> tuple[OpenAI, dict[str, Any]]:
        """A client whose key belongs to a brand-new organization (tasks scopes by default)."""
        org = self.create_org()
        key = self.create_key(org["id"], scopes or TASK_SCOPES)
        return self.client_for(key["secret"]), org

    def close(self) -> None:
        for c in self._clients:
            c.close()


def conforms(obj: Any) -> dict[str, Any]:
    """Validates the server's answer strictly against the client type it was
    parsed into (every required field present, every literal right) and
    returns it as the JSON the server sent (API names, only fields it sent)."""
    as_json = obj.to_dict()
    type(obj).model_validate(as_json)
    return as_json


def error_of(exc: openai.APIStatusError) -> dict[str, Any]:
    """The `error` object of a failed call, checked to have our shape."""
    body = exc.response.json()
    assert set(body) == {"error"}, body
    err = body["error"]
    assert set(err) == {"type", "code", "message", "param"}, err
    assert isinstance(err["message"], str) and err["message"], err
    assert exc.body == err, "the client exposes the error object as e.body"
    return err


def assert_recent(ts: int) -> None:
    assert isinstance(ts, int)
    assert abs(ts - time.time()) < 600, f"{ts} is not a Unix timestamp in seconds near now"


def raw(method: str, url: str, key: str | None, **kwargs: Any) -> httpx2.Response:
    """A request the client would never send (malformed JSON, no key …)."""
    headers = dict(kwargs.pop("headers", {}) or {})
    if key is not None:
        headers.setdefault("Authorization", f"Bearer {key}")
    headers.setdefault("OpenAI-Beta", "agents=v1")
    return httpx2.request(method, url, headers=headers, timeout=60, **kwargs)
