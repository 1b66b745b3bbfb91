//! The operations of skills (and their versions) and of uploaded files.

use super::op::{Op, of};
use super::{Doc, views};
use protocol::file::{FileDeleted, FileObject};
use protocol::list::List;
use protocol::skill::{Skill, SkillDeleted, SkillUpdate, SkillVersion, SkillVersionDeleted};
use schemars::SchemaGenerator;
use serde_json::{Value, json};

const SKILL: &str = "/v1/skills/{skill_id}";
const VERSIONS: &str = "/v1/skills/{skill_id}/versions";
const VERSION: &str = "/v1/skills/{skill_id}/versions/{version}";
const FILE: &str = "/v1/files/{file_id}";

/// A skill upload: the files of one directory (`files[]`, each named by its
/// relative path) or one zip (`files`).
fn skill_upload(_: &mut SchemaGenerator) -> Value {
    let file = json!({"type": "string", "format": "binary"});
    json!({"type": "object", "properties": {
        "files[]": {"type": "array", "items": file, "description": "The files of the skill's directory."},
        "files": {"type": "string", "format": "binary", "description": "One zip of the skill."},
        "default": {"type": "boolean", "description": "Versions only: make it the default."}
    }})
}

fn file_upload(_: &mut SchemaGenerator) -> Value {
    json!({"type": "object", "required": ["file", "purpose"], "properties": {
        "file": {"type": "string", "format": "binary"},
        "purpose": {"type": "string", "enum": protocol::file::PURPOSES},
        "expires_after[anchor]": {"type": "string", "enum": ["created_at"]},
        "expires_after[seconds]": {"type": "integer", "minimum": 3600, "maximum": 2592000}
    }})
}

pub(super) fn add(doc: &mut Doc) {
    doc.tag("Skills", "Directories with a SKILL.md, in immutable versions, unpacked into environments.");
    doc.add(
        Op::post("/v1/skills", "createSkill", "Create a skill")
            .about("A zip, or the files of one directory, with a SKILL.md naming it; the first version.")
            .multipart(skill_upload)
            .json(of::<Skill>),
    );
    doc.add(Op::get("/v1/skills", "listSkills", "List skills").list().json(of::<List<Skill>>));
    doc.add(Op::get(SKILL, "retrieveSkill", "Retrieve a skill").json(of::<Skill>));
    doc.add(
        Op::post(SKILL, "updateSkill", "Choose a skill's default version").body(of::<SkillUpdate>).json(of::<Skill>),
    );
    doc.add(Op::delete(SKILL, "deleteSkill", "Delete a skill and its versions").json(of::<SkillDeleted>));
    doc.add(
        Op::get("/v1/skills/{skill_id}/content", "retrieveSkillContent", "The default version's zip")
            .answers("application/zip", views::bytes),
    );
    doc.add(
        Op::post(VERSIONS, "createSkillVersion", "Create a skill version")
            .multipart(skill_upload)
            .json(of::<SkillVersion>)
            .errors(&[409]),
    );
    doc.add(Op::get(VERSIONS, "listSkillVersions", "List a skill's versions").list().json(of::<List<SkillVersion>>));
    doc.add(Op::get(VERSION, "retrieveSkillVersion", "Retrieve a skill version").json(of::<SkillVersion>));
    doc.add(
        Op::delete(VERSION, "deleteSkillVersion", "Delete a skill version")
            .about("Not the default version (409).")
            .json(of::<SkillVersionDeleted>)
            .errors(&[409]),
    );
    doc.add(
        Op::get("/v1/skills/{skill_id}/versions/{version}/content", "retrieveSkillVersionContent", "A version's zip")
            .answers("application/zip", views::bytes),
    );

    doc.tag("Files", "Uploaded files, placed into environments by id.");
    doc.add(
        Op::post("/v1/files", "createFile", "Upload a file")
            .about("At most 32 MiB (413 beyond).")
            .multipart(file_upload)
            .json(of::<FileObject>),
    );
    doc.add(
        Op::get("/v1/files", "listFiles", "List files")
            .list()
            .query("purpose", json!({"type": "string"}), "Only files with this purpose.")
            .json(of::<List<FileObject>>),
    );
    doc.add(Op::get(FILE, "retrieveFile", "Retrieve a file").json(of::<FileObject>));
    doc.add(Op::delete(FILE, "deleteFile", "Delete a file").json(of::<FileDeleted>));
    doc.add(
        Op::get("/v1/files/{file_id}/content", "retrieveFileContent", "A file's bytes")
            .answers("application/octet-stream", views::bytes),
    );
}
