"""Issue 13, uploaded files, through the official client: `client.files` (create, retrieve, list, content, delete;
organization-scoped; 32 MiB at most, 413 beyond), `{"type": "file_id"}` entries in an environment's `files` (copied
when it is created, so deleting the upload afterwards changes nothing) and in `environments.files.create`, and the
client's helpers `environments.files.upload`, `prepare` and `prepare_directory`, unmodified."""

from __future__ import annotations

import openai
import pytest

from harness import conforms, error_of
from scripted import reply
from test_environments import commands, hosted, ref, run, session, shell

LIMIT = 32 << 20


def cat(client, model, env_id: str, *paths: str) -> str:
    """Runs one turn on the environment whose command prints `paths`, and answers its output."""
    model.reset()
    model.script(shell("cat " + " ".join(paths)), reply("ok"))
    s = session(client, ref(env_id))
    turn, _ = run(client, s.id, "read")
    [cmd] = commands(client, s.id, turn.id)
    return cmd.output


def test_a_file_uploads_and_is_listed_read_and_deleted(org_client):
    f = org_client.files.create(file=("notes.txt", b"hello\x00world"), purpose="user_data")
    body = conforms(f)
    assert body["id"].startswith("file-")
    assert (body["object"], body["bytes"], body["filename"], body["purpose"], body["status"]) == (
        "file", 11, "notes.txt", "user_data", "processed")
    assert conforms(org_client.files.retrieve(f.id)) == body
    other = org_client.files.create(file=("a.jsonl", b"{}\n"), purpose="assistants")
    assert [x.id for x in org_client.files.list(order="asc")] == [f.id, other.id]
    assert [x.id for x in org_client.files.list(purpose="assistants")] == [other.id]
    assert org_client.files.content(f.id).read() == b"hello\x00world"
    gone = org_client.files.delete(f.id)
    assert (gone.id, gone.object, gone.deleted) == (f.id, "file", True)
    with pytest.raises(openai.NotFoundError):
        org_client.files.retrieve(f.id)
    with pytest.raises(openai.NotFoundError):
        org_client.files.content(f.id)


def test_expires_after_sets_expires_at(org_client):
    f = org_client.files.create(file=("x", b"x"), purpose="batch", expires_after={"anchor": "created_at", "seconds": 3600})
    assert f.expires_at == f.created_at + 3600
    with pytest.raises(openai.BadRequestError) as e:
        org_client.files.create(file=("x", b"x"), purpose="batch", expires_after={"anchor": "created_at", "seconds": 5})
    assert error_of(e.value)["param"] == "expires_after.seconds"


def test_a_bad_purpose_is_400_and_stores_nothing(org_client):
    with pytest.raises(openai.BadRequestError) as e:
        org_client.files.create(file=("x", b"x"), purpose="nonsense")  # type: ignore[arg-type]
    assert error_of(e.value)["param"] == "purpose"
    assert org_client.files.list().data == []


def test_a_file_over_the_size_limit_is_413(org_client):
    with pytest.raises(openai.APIStatusError) as e:
        org_client.with_options(max_retries=0).files.create(file=("big.bin", bytes(LIMIT + 1)), purpose="user_data")
    assert e.value.status_code == 413
    assert str(LIMIT) in error_of(e.value)["message"]
    assert org_client.files.list().data == []
    assert org_client.files.create(file=("max.bin", bytes(LIMIT)), purpose="user_data").bytes == LIMIT


def test_a_file_id_in_an_environment_is_at_its_path(client, model):
    f = client.files.create(file=("input.csv", b"a,b\n1,2\n"), purpose="user_data")
    env = client.beta.agents.environments.create(
        environment=hosted(files=[{"type": "file_id", "file_id": f.id, "path": "/workspace/data/input.csv"}])
    )
    [entry] = conforms(env)["files"]
    assert entry == {"id": entry["id"], "type": "file_id", "file_id": f.id, "path": "/workspace/data/input.csv",
                     "size_bytes": 8}
    client.files.delete(f.id)
    assert cat(client, model, env.id, "/workspace/data/input.csv") == "a,b\n1,2\n", "copied when the environment was made"


def test_environments_files_create_takes_a_file_id(client):
    f = client.files.create(file=("note.txt", b"staged"), purpose="user_data")
    env = client.beta.agents.environments.create(environment=hosted())
    staged = client.beta.agents.environments.files.create(env.id, type="file_id", file_id=f.id, path="/workspace/note.txt")
    assert (conforms(staged)["path"], staged.size_bytes, staged.environment_id) == ("/workspace/note.txt", 6, env.id)
    listed = {x.path: x.size_bytes for x in client.beta.agents.environments.files.list(env.id)}
    assert listed["/workspace/note.txt"] == 6


def test_the_clients_file_helpers_work_unmodified(client, model, tmp_path):
    (tmp_path / "one.txt").write_text("one\n")
    project = tmp_path / "project"
    (project / "pkg").mkdir(parents=True)
    (project / "main.py").write_text("print('main')\n")
    (project / "pkg" / "util.py").write_text("print('util')\n")
    (project / "notes.md").write_text("not selected\n")
    files = client.beta.agents.environments.files
    prepared = files.prepare({"/workspace/one.txt": tmp_path / "one.txt"})
    directory = files.prepare_directory(project, destination="/workspace/project", include=["**/*.py"])
    assert len(prepared.uploaded_file_ids) == 1 and len(directory.uploaded_file_ids) == 2
    env = client.beta.agents.environments.create(environment=hosted(files=prepared.files + directory.files))
    assert sorted(f.path for f in env.files) == [
        "/workspace/one.txt", "/workspace/project/main.py", "/workspace/project/pkg/util.py"]
    staged = files.upload(env.id, file=tmp_path / "one.txt", path="/workspace/staged/one.txt")
    assert staged.file.path == "/workspace/staged/one.txt" and staged.uploaded_file_id.startswith("file-")
    out = cat(client, model, env.id, "/workspace/one.txt", "/workspace/project/main.py",
              "/workspace/project/pkg/util.py", "/workspace/staged/one.txt")
    assert out == "one\nprint('main')\nprint('util')\none\n"
    for file_id in prepared.uploaded_file_ids + directory.uploaded_file_ids + [staged.uploaded_file_id]:
        client.files.delete(file_id)


def test_an_unknown_or_another_organizations_file_id_is_404(client, org_client):
    theirs = client.files.create(file=("secret.txt", b"secret"), purpose="user_data")
    for file_id in (theirs.id, "file-00000000000000000000000000000000"):
        with pytest.raises(openai.NotFoundError) as e:
            org_client.beta.agents.environments.create(
                environment=hosted(files=[{"type": "file_id", "file_id": file_id, "path": "/workspace/x"}])
            )
        assert error_of(e.value)["param"] == "environment.files[0].file_id"
    env = org_client.beta.agents.environments.create(environment=hosted())
    with pytest.raises(openai.NotFoundError) as e:
        org_client.beta.agents.environments.files.create(env.id, type="file_id", file_id=theirs.id, path="/workspace/x")
    assert error_of(e.value)["param"] == "file_id"
    for attempt in (lambda: org_client.files.retrieve(theirs.id), lambda: org_client.files.content(theirs.id),
                    lambda: org_client.files.delete(theirs.id)):
        with pytest.raises(openai.NotFoundError):
            attempt()
    assert org_client.files.list().data == []
    assert client.files.retrieve(theirs.id).bytes == 6
