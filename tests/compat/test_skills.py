"""Issue 13, skills, through the official client: `client.skills` and `client.skills.versions` (a zip or the files
of one directory; numbered immutable versions; their zips), skills in environments (`skill_reference` resolved when
the environment is created, `inline` zips), unpacked read-only at `/workspace/.agents/skills/<name>/` before setup,
`capability_directories` scanned when each turn starts, and the catalog in each turn's instructions (name,
description and SKILL.md path only). Bad skills are 400s naming what is wrong and store nothing; another
organization's skill is 404."""

from __future__ import annotations

import io
import zipfile

import openai
import pytest

from harness import conforms, error_of
from scripted import reply
from skills_support import (
    bomb_zip,
    escaping_zip,
    inline_skill,
    skill_files,
    skill_md,
    symlink_zip,
    upload_list,
    zip_of,
)
from test_environments import commands, hosted, ref, run, session, shell

SKILLS = "/workspace/.agents/skills"


def make_skill(client, name: str, description: str, greeting: str = "hello") -> object:
    return client.skills.create(files=("skill.zip", zip_of(skill_files(name, description, greeting))))


def system_prompt(model) -> str:
    first = model.bodies()[0]["messages"][0]
    assert first["role"] == "system", first
    return first["content"]


# ---------------------------------------------------------------------------------------------------------------
# The Skills API


def test_a_skill_uploads_as_one_zip_and_as_the_files_of_one_directory(org_client):
    files = skill_files("pdf-tools", "Extracts text from PDFs.")
    from_zip = org_client.skills.create(files=("pdf-tools.zip", zip_of(files, top="pdf-tools")))
    body = conforms(from_zip)
    assert body["id"].startswith("skill_")
    assert (body["object"], body["name"], body["description"]) == ("skill", "pdf-tools", "Extracts text from PDFs.")
    assert (body["default_version"], body["latest_version"]) == ("1", "1")
    from_dir = org_client.skills.create(files=upload_list(skill_files("csv-tools", "Reads CSV files."), "csv-tools"))
    assert (from_dir.name, from_dir.description, from_dir.default_version) == ("csv-tools", "Reads CSV files.", "1")
    assert conforms(org_client.skills.retrieve(from_zip.id)) == body
    assert [s.id for s in org_client.skills.list(order="asc")] == [from_zip.id, from_dir.id]
    for skill in (from_zip, from_dir):
        content = org_client.skills.content.retrieve(skill.id).read()
        with zipfile.ZipFile(io.BytesIO(content)) as z:
            names = sorted(z.namelist())
            assert names == ["SKILL.md", "reference/notes.txt", "scripts/hello.sh"], "one directory, at the top"
            mode = z.getinfo("scripts/hello.sh").external_attr >> 16
            assert mode & 0o111, "a script stays executable"


def test_versions_are_numbered_and_the_default_moves_only_when_asked(org_client):
    skill = make_skill(org_client, "greeter", "Greets.")
    v2 = org_client.skills.versions.create(skill.id, files=("v2.zip", zip_of(skill_files("greeter", "Greets twice."))))
    assert conforms(v2)["object"] == "skill.version"
    assert (v2.skill_id, v2.version, v2.description) == (skill.id, "2", "Greets twice.")
    after = org_client.skills.retrieve(skill.id)
    assert (after.default_version, after.latest_version, after.description) == ("1", "2", "Greets.")
    v3 = org_client.skills.versions.create(
        skill.id, default=True, files=upload_list(skill_files("greeter", "Greets thrice."), "greeter")
    )
    after = org_client.skills.retrieve(skill.id)
    assert (after.default_version, after.latest_version, after.description) == ("3", "3", "Greets thrice.")
    listed = org_client.skills.versions.list(skill.id, order="asc")
    assert [v.version for v in listed] == ["1", "2", "3"]
    assert conforms(org_client.skills.versions.retrieve("2", skill_id=skill.id)) == conforms(v2)
    with zipfile.ZipFile(io.BytesIO(org_client.skills.versions.content.retrieve("2", skill_id=skill.id).read())) as z:
        assert b"Greets twice." in z.read("SKILL.md")
    assert conforms(org_client.skills.update(skill.id, default_version="2")).get("default_version") == "2"
    with pytest.raises(openai.ConflictError):
        org_client.with_options(max_retries=0).skills.versions.delete("2", skill_id=skill.id)
    deleted = org_client.skills.versions.delete("3", skill_id=skill.id)
    assert (deleted.object, deleted.deleted, deleted.version, deleted.id) == ("skill.version.deleted", True, "3", v3.id)
    assert org_client.skills.retrieve(skill.id).latest_version == "2"
    with pytest.raises(openai.NotFoundError):
        org_client.skills.versions.retrieve("3", skill_id=skill.id)
    with pytest.raises(openai.NotFoundError) as e:
        org_client.skills.update(skill.id, default_version="3")
    assert error_of(e.value)["param"] == "default_version"
    v4 = org_client.skills.versions.create(skill.id, files=("v4.zip", zip_of(skill_files("greeter", "Again."))))
    assert v4.version == "4", "a deleted version's number is not used again"
    gone = org_client.skills.delete(skill.id)
    assert (gone.id, gone.object, gone.deleted) == (skill.id, "skill.deleted", True)
    with pytest.raises(openai.NotFoundError):
        org_client.skills.versions.list(skill.id)


BAD = {
    "no SKILL.md": (zip_of({"README.md": b"# hi"}), "SKILL.md"),
    "front matter that does not parse": (zip_of({"SKILL.md": b"---\nname: [x\n---\n"}), "YAML"),
    "no front matter": (zip_of({"SKILL.md": b"# Just a title\n"}), "front matter"),
    "a bad name": (zip_of({"SKILL.md": skill_md("Bad_Name", "d").encode()}), "Bad_Name"),
    "a long description": (zip_of({"SKILL.md": skill_md("ok", "x" * 1025).encode()}), "1024"),
    "a path escaping the skill": (escaping_zip(), "../../outside.sh"),
    "a symlink": (symlink_zip(), "symlink"),
    "a zip bomb": (bomb_zip(), "bytes"),
    "not a zip": (b"PK\x03\x04 not really", "zip"),
}


@pytest.mark.parametrize("bad", list(BAD), ids=list(BAD))
def test_a_bad_skill_is_400_naming_what_is_wrong_and_stores_nothing(org_client, server, bad):
    data, says = BAD[bad]
    with pytest.raises(openai.BadRequestError) as e:
        org_client.skills.create(files=("skill.zip", data))
    err = error_of(e.value)
    assert err["param"] == "files" and says in err["message"], err
    assert org_client.skills.list().data == []
    with pytest.raises(openai.BadRequestError) as e:
        org_client.beta.agents.environments.create(environment=hosted(skills=[inline_skill("x", "d", data)]))
    err = error_of(e.value)
    assert err["param"] == "environment.skills[0].source.data" and says in err["message"], err
    assert org_client.beta.agents.environments.list().data == []


def test_a_directory_upload_with_an_escaping_path_is_400(org_client):
    files = upload_list(skill_files("dir-skill", "A skill."), "dir-skill") + [("../evil.sh", b"echo")]
    with pytest.raises(openai.BadRequestError) as e:
        org_client.skills.create(files=files)
    assert "../evil.sh" in error_of(e.value)["message"]
    assert org_client.skills.list().data == []


# ---------------------------------------------------------------------------------------------------------------
# Skills in environments


def test_an_environment_with_a_referenced_and_an_inline_skill(client, model):
    referenced = make_skill(client, "ref-greeter", "Greets by reference.", "hi")
    data = zip_of(skill_files("inline-greeter", "Greets inline.", "hey"), top="inline-greeter")
    env = client.beta.agents.environments.create(
        environment=hosted(
            skills=[{"type": "skill_reference", "skill_id": referenced.id}, inline_skill("inline-greeter", "Greets inline.", data)],
            setup_commands=[{"command": f"ls {SKILLS}/ref-greeter > /workspace/seen-by-setup"}],
        )
    )
    body = conforms(env)
    assert body["skills"] == [
        {"type": "skill_reference", "skill_id": referenced.id, "version": "1", "name": "ref-greeter",
         "description": "Greets by reference."},
        {"type": "inline", "name": "inline-greeter", "description": "Greets inline."},
    ], "the concrete version, names and descriptions; never the zip"
    s = client.beta.agents.sessions.create(agent={"model": "gpt-test", "instructions": "Be brief."}, environment=ref(env.id))
    model.script(
        shell(f"{SKILLS}/ref-greeter/scripts/hello.sh; {SKILLS}/inline-greeter/scripts/hello.sh; "
              f"cat /workspace/seen-by-setup; touch {SKILLS}/ref-greeter/x 2>/dev/null || echo read-only; "
              f"rm {SKILLS}/inline-greeter/SKILL.md 2>/dev/null || echo still-there"),
        reply("done"),
    )
    turn, _ = run(client, s.id, "greet")
    assert turn.status == "completed", turn
    [cmd] = commands(client, s.id, turn.id)
    assert cmd.output == (
        "hi from ref-greeter\nhey from inline-greeter\nSKILL.md\nreference\nscripts\nread-only\nstill-there\n"
    ), "the skills' scripts run, setup saw them, and nothing in the sandbox can change them"
    prompt = system_prompt(model)
    assert prompt.startswith("Be brief.\n\n"), prompt
    ref_line = f"- ref-greeter: Greets by reference. {SKILLS}/ref-greeter/SKILL.md"
    inline_line = f"- inline-greeter: Greets inline. {SKILLS}/inline-greeter/SKILL.md"
    assert ref_line in prompt and inline_line in prompt, prompt
    assert "scripts/hello.sh" not in prompt and "license" not in prompt, "name, description and path only"
    added = len(prompt) - len("Be brief.")
    own = sum(len(n) + len(d) + len(f"{SKILLS}/{n}/SKILL.md") for n, d in
              [("ref-greeter", "Greets by reference."), ("inline-greeter", "Greets inline.")])
    assert added <= own + 40 * 2, f"the catalog adds {added} bytes for {own} bytes of names, descriptions and paths"
    files = {f.path for f in client.beta.agents.environments.files.list(env.id, path=SKILLS)}
    assert f"{SKILLS}/ref-greeter/SKILL.md" in files and f"{SKILLS}/inline-greeter/reference/notes.txt" in files
    with pytest.raises(openai.BadRequestError) as e:
        client.beta.agents.environments.files.create(env.id, type="inline", path=f"{SKILLS}/ref-greeter/SKILL.md", data="eA==")
    assert error_of(e.value)["param"] == "path", "the skills are read-only"


def test_files_cannot_be_placed_among_the_skills(org_client):
    with pytest.raises(openai.BadRequestError) as e:
        org_client.beta.agents.environments.create(
            environment=hosted(files=[{"type": "inline", "path": f"{SKILLS}/x/SKILL.md", "data": "eA=="}])
        )
    assert error_of(e.value)["param"] == "environment.files[0].path"


def test_a_new_version_does_not_change_an_environment_created_before_it(client, model):
    skill = make_skill(client, "versioned", "Version one.", "one")
    before = client.beta.agents.environments.create(environment=hosted(skills=[{"type": "skill_reference", "skill_id": skill.id}]))
    client.skills.versions.create(skill.id, default=True, files=("v2.zip", zip_of(skill_files("versioned", "Version two.", "two"))))
    after = client.beta.agents.environments.create(environment=hosted(skills=[{"type": "skill_reference", "skill_id": skill.id}]))
    pinned = client.beta.agents.environments.create(
        environment=hosted(skills=[{"type": "skill_reference", "skill_id": skill.id, "version": "1"}])
    )
    assert [e.skills[0].version for e in (before, after, pinned)] == ["1", "2", "1"]
    assert client.beta.agents.environments.retrieve(before.id).skills[0].version == "1"
    client.skills.delete(skill.id)
    for env, greeting, description in [(before, "one", "Version one."), (after, "two", "Version two.")]:
        model.reset()
        model.script(shell(f"{SKILLS}/versioned/scripts/hello.sh"), reply("ok"))
        s = session(client, ref(env.id))
        turn, _ = run(client, s.id, "go")
        assert [c.output for c in commands(client, s.id, turn.id)] == [f"{greeting} from versioned\n"]
        assert f"- versioned: {description} " in system_prompt(model)


def test_skill_names_in_an_environment_must_be_distinct(org_client):
    skill = make_skill(org_client, "twice", "Twice.")
    same = {"type": "skill_reference", "skill_id": skill.id}
    data = zip_of(skill_files("twice", "Twice."))
    for skills in ([same, same], [same, inline_skill("twice", "Twice.", data)]):
        with pytest.raises(openai.BadRequestError) as e:
            org_client.beta.agents.environments.create(environment=hosted(skills=skills))
        err = error_of(e.value)
        assert err["param"] == "environment.skills[1]" and "twice" in err["message"], err
    assert org_client.beta.agents.environments.list().data == []


def test_an_inline_skill_must_be_named_as_its_skill_md_says(org_client):
    data = zip_of(skill_files("real-name", "Real."))
    with pytest.raises(openai.BadRequestError) as e:
        org_client.beta.agents.environments.create(environment=hosted(skills=[inline_skill("other-name", "Real.", data)]))
    assert error_of(e.value)["param"] == "environment.skills[0].name"


def test_an_unknown_or_another_organizations_skill_is_404(client, org_client):
    theirs = make_skill(client, "private", "Not yours.")
    for skill_id in (theirs.id, "skill_00000000000000000000000000000000"):
        with pytest.raises(openai.NotFoundError) as e:
            org_client.beta.agents.environments.create(
                environment=hosted(skills=[{"type": "skill_reference", "skill_id": skill_id}])
            )
        assert error_of(e.value)["param"] == "environment.skills[0].skill_id"
    with pytest.raises(openai.NotFoundError) as e:
        client.beta.agents.environments.create(
            environment=hosted(skills=[{"type": "skill_reference", "skill_id": theirs.id, "version": "9"}])
        )
    assert error_of(e.value)["param"] == "environment.skills[0].version"
    attempts = {
        "retrieve": lambda: org_client.skills.retrieve(theirs.id),
        "update": lambda: org_client.skills.update(theirs.id, default_version="1"),
        "delete": lambda: org_client.skills.delete(theirs.id),
        "content": lambda: org_client.skills.content.retrieve(theirs.id),
        "versions.create": lambda: org_client.skills.versions.create(theirs.id, files=("a.zip", zip_of(skill_files("a", "b")))),
        "versions.list": lambda: org_client.skills.versions.list(theirs.id),
        "versions.retrieve": lambda: org_client.skills.versions.retrieve("1", skill_id=theirs.id),
        "versions.delete": lambda: org_client.skills.versions.delete("1", skill_id=theirs.id),
        "versions.content": lambda: org_client.skills.versions.content.retrieve("1", skill_id=theirs.id),
    }
    for name, attempt in attempts.items():
        with pytest.raises(openai.NotFoundError):
            attempt()
    assert org_client.skills.list().data == [] and org_client.beta.agents.environments.list().data == []
    assert client.skills.retrieve(theirs.id).latest_version == "1"


def test_a_session_without_an_environment_or_on_a_reference_cannot_bring_skills(org_client):
    data = zip_of(skill_files("mine", "Mine."))
    env = org_client.beta.agents.environments.create(environment=hosted())
    for environment in ({"type": "none"}, ref(env.id)):
        with pytest.raises(openai.BadRequestError) as e:
            session(org_client, {**environment, "skills": [inline_skill("mine", "Mine.", data)]})
        assert error_of(e.value)["param"] == "environment.skills", environment
    assert org_client.beta.agents.sessions.list().data == []


def test_capability_directories_are_scanned_when_each_turn_starts(client, model):
    caps = "/workspace/caps"
    write = "mkdir -p {dir} && printf -- '---\\nname: {name}\\ndescription: {desc}\\n---\\nbody\\n' > {dir}/SKILL.md"
    env = client.beta.agents.environments.create(
        environment=hosted(
            capability_directories=[caps],
            setup_commands=[{"command": write.format(dir=f"{caps}/from-setup", name="from-setup", desc="Made by setup.")}],
        )
    )
    assert env.capability_directories == [caps]
    s = session(client, ref(env.id))
    model.script(
        shell(write.format(dir=f"{caps}/by-agent", name="by-agent", desc="Made by the agent.")
              + f" && mkdir -p {caps}/broken && echo no-front-matter > {caps}/broken/SKILL.md"),
        reply("written"),
    )
    run(client, s.id, "write a skill")
    first = system_prompt(model)
    assert f"- from-setup: Made by setup. {caps}/from-setup/SKILL.md" in first and "by-agent" not in first
    model.reset()
    model.script(reply("seen"))
    run(client, s.id, "look again")
    second = system_prompt(model)
    assert f"- by-agent: Made by the agent. {caps}/by-agent/SKILL.md" in second, second
    assert "from-setup" in second and "broken" not in second
