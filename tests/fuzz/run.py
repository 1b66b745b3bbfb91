"""A bounded schema-driven fuzz run (schemathesis) against a real `rebyte serve`.

Starts the server from REBYTE_BIN (default target/debug/rebyte) on SQLite with
the compatibility suite's harness, pointed at a scripted model that answers
every request with a short reply, creates an organization and a key with the
task and vault scopes (not `admin`: the admin operations are fuzzed for their
403, and never create organizations or revoke keys), then runs schemathesis
from the server's own `GET /v1/openapi.json` with tests/fuzz/schemathesis.toml.

Exits non-zero when schemathesis found a failure (a 5xx, or an answer the
document does not describe) or could not run, when the server logged a panic
or an ERROR line, or died, or did not stop cleanly; schemathesis's report names
each failure with a curl command that reproduces it (the key shows as
`[Filtered]`: any key of an organization does). The seed is fixed so that a commit's run can be
repeated; REBYTE_FUZZ_SEED=N picks another one, REBYTE_FUZZ_SEED=random a new
one each run.

Usage: .venv/bin/python tests/fuzz/run.py [extra `st run` arguments, e.g.
--include-operation-id createAgent or --max-time 30]. The schemathesis command
is REBYTE_FUZZ_ST, default .venv-fuzz/bin/st (scripts/test installs it from
tests/fuzz/requirements.txt).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "compat"))

from harness import REPO_ROOT, Admin, Server, api_client, new_key  # noqa: E402
from scripted import ScriptedModel  # noqa: E402

SEED = "20261204"
# The scripted model's one step, played for every model request of every turn.
MODEL_SCRIPT = [{"type": "reply", "text": "ok"}]
# schemathesis's own --max-time bounds the run; this only catches a hang.
HARD_TIMEOUT = 600
TASK_AND_VAULT_SCOPES = ["tasks:read", "tasks:write", "vaults:read", "vaults:write"]


def main(extra: list[str]) -> int:
    st = os.environ.get("REBYTE_FUZZ_ST") or str(REPO_ROOT / ".venv-fuzz" / "bin" / "st")
    if not Path(st).exists():
        print(f"{st} does not exist: pip install -r tests/fuzz/requirements.txt into .venv-fuzz", file=sys.stderr)
        return 2
    # SQLite, whatever the caller's environment says.
    os.environ.pop("REBYTE_TEST_DATABASE_URL", None)
    seed = os.environ.get("REBYTE_FUZZ_SEED") or SEED
    with tempfile.TemporaryDirectory(prefix="rebyte-fuzz-") as tmp:
        script = Path(tmp) / "model.json"
        script.write_text(json.dumps(MODEL_SCRIPT))
        model = ScriptedModel("--script", str(script), "--loop").start()
        server = Server(bootstrap_key=new_key(), env=model.env())
        try:
            server.start()
            key = organization_key(server)
            cmd = [
                st,
                "--config-file",
                str(HERE / "schemathesis.toml"),
                "--no-color",
                "run",
                f"{server.url}/v1/openapi.json",
                "--url",
                server.url,
                "-H",
                f"Authorization: Bearer {key}",
                *([] if seed == "random" else ["--seed", seed]),
                *extra,
            ]
            print(f"schemathesis against {server.url} (seed {seed})", flush=True)
            env = {**os.environ, "SCHEMATHESIS_HOOKS": str(HERE / "hooks.py")}
            try:
                code = subprocess.run(cmd, cwd=tmp, env=env, timeout=HARD_TIMEOUT).returncode
            except subprocess.TimeoutExpired:
                print(f"fuzz: schemathesis did not finish within {HARD_TIMEOUT} s", file=sys.stderr)
                code = 1
            alive = server.proc is not None and server.proc.poll() is None
            if not alive:
                print(f"fuzz: the server died during the run\n{server.log()}", file=sys.stderr)
                code = code or 1
        finally:
            exit_code = server.stop()
            log = server.log()
            faults = server_faults(server)
            model.stop()
            server.cleanup()
        if code == 0 and exit_code != 0:
            print(f"fuzz: rebyte did not exit cleanly on SIGTERM (exit {exit_code})\n{log}", file=sys.stderr)
            code = 1
        if faults:
            # A panic or an error in a task of its own (a turn, a sandbox) answers no request with a 5xx.
            print("fuzz: the server logged faults of its own:\n" + "\n".join(faults[:20]), file=sys.stderr)
            code = code or 1
    return code


def server_faults(server: Server) -> list[str]:
    """The server log's panics and ERROR lines."""
    try:
        lines = server._log_path.read_text(errors="replace").splitlines()
    except OSError:
        return []
    return [line for line in lines if "panicked" in line or " ERROR " in line]


def organization_key(server: Server) -> str:
    """The secret of a new key with the task and vault scopes, on a new organization."""
    client = api_client(server.bootstrap_key or "", server.url)
    try:
        admin = Admin(client, server.url)
        org = admin.create_org("fuzz")
        return admin.create_key(org["id"], TASK_AND_VAULT_SCOPES, name="fuzz")["secret"]
    finally:
        client.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
