//! Skills: a directory with a `SKILL.md` (YAML front matter naming it and
//! saying what it is for) and the scripts and files beside it, uploaded
//! through `/v1/skills` in immutable numbered versions, or given inline to
//! an environment. The resources as the client's `Skill`, `SkillVersion`
//! and their deleted shapes; the environment's skill entries (requests and
//! resources); and [`front_matter`], the one parser of `SKILL.md` headers.

use serde::{Deserialize, Serialize};

/// Where an environment's skills are unpacked, one directory per name (the
/// Agent Skills convention).
pub const SKILLS_DIR: &str = "/workspace/.agents/skills";
/// Longest skill name (the Agent Skills format).
pub const MAX_NAME_CHARS: usize = 64;
/// Longest skill description (the Agent Skills format).
pub const MAX_DESCRIPTION_CHARS: usize = 1024;

/// Where an environment keeps the zip of its skill `name` (its contents).
pub fn content_key(name: &str) -> String {
    format!("skill:{name}")
}

/// Where an environment keeps the bytes of its `files[index]` (a `file_id` entry).
pub fn file_content_key(index: usize) -> String {
    format!("file:{index}")
}

/// The path of a skill's `SKILL.md` inside an environment.
pub fn skill_md_path(name: &str) -> String {
    format!("{SKILLS_DIR}/{name}/SKILL.md")
}

/// A skill as the server keeps it: the resource's fields plus the write
/// counter that guards every change and the last version number minted
/// (numbers are never reused, even after a version is deleted).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillRecord {
    pub id: String,
    pub created_at: i64,
    /// The default version's name and description.
    pub name: String,
    pub description: String,
    pub default_version: i64,
    pub latest_version: i64,
    pub last_version: i64,
    /// Incremented by every write; a write names the one it read.
    pub rev: i64,
}

impl SkillRecord {
    /// The public resource.
    pub fn resource(&self) -> Skill {
        Skill {
            id: self.id.clone(),
            object: "skill".into(),
            created_at: self.created_at,
            name: self.name.clone(),
            description: self.description.clone(),
            default_version: self.default_version.to_string(),
            latest_version: self.latest_version.to_string(),
        }
    }
}

/// The skill resource (`skill`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Skill {
    pub id: String,
    pub object: String,
    pub created_at: i64,
    pub name: String,
    pub description: String,
    /// A version number, as a string.
    pub default_version: String,
    pub latest_version: String,
}

/// One immutable version of a skill as the server keeps it (its content,
/// a zip, is stored beside it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillVersionRecord {
    pub id: String,
    pub skill_id: String,
    pub version: i64,
    pub created_at: i64,
    pub name: String,
    pub description: String,
    /// The unpacked size of its files.
    pub size_bytes: u64,
}

impl SkillVersionRecord {
    /// The public resource.
    pub fn resource(&self) -> SkillVersion {
        SkillVersion {
            id: self.id.clone(),
            object: "skill.version".into(),
            created_at: self.created_at,
            skill_id: self.skill_id.clone(),
            version: self.version.to_string(),
            name: self.name.clone(),
            description: self.description.clone(),
        }
    }
}

/// The skill version resource (`skill.version`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SkillVersion {
    pub id: String,
    pub object: String,
    pub created_at: i64,
    pub skill_id: String,
    /// The version number, as a string.
    pub version: String,
    pub name: String,
    pub description: String,
}

/// `DELETE /v1/skills/{skill_id}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SkillDeleted {
    pub id: String,
    pub object: String,
    pub deleted: bool,
}

/// `DELETE /v1/skills/{skill_id}/versions/{version}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SkillVersionDeleted {
    pub id: String,
    pub object: String,
    pub deleted: bool,
    pub version: String,
}

/// `POST /v1/skills/{skill_id}`: which version is the default.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkillUpdate {
    /// A version number (a string, as the client sends it, or an integer).
    pub default_version: VersionParam,
}

/// A version as a request names it: a number (string or integer) or `latest`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum VersionParam {
    Number(i64),
    Text(String),
}

impl VersionParam {
    /// The version number asked for; `Ok(None)` for `latest`; `Err` for
    /// anything else.
    pub fn number(&self) -> Result<Option<i64>, String> {
        let n = match self {
            VersionParam::Number(n) => *n,
            VersionParam::Text(t) if t == "latest" => return Ok(None),
            VersionParam::Text(t) => t.parse().map_err(|_| format!("'{t}' is not a version number or `latest`"))?,
        };
        if n < 1 {
            return Err(format!("{n} is not a version number (they start at 1)"));
        }
        Ok(Some(n))
    }
}

/// The base64 zip of an inline skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InlineSkillSource {
    /// Always `base64`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Always `application/zip`.
    pub media_type: String,
    pub data: String,
}

/// A skill an environment request asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum SkillParam {
    /// A skill of the Skills API: `version` is a number or `latest`;
    /// omitted, the default version. Resolved when the environment is created.
    SkillReference {
        skill_id: String,
        #[serde(default)]
        version: Option<VersionParam>,
    },
    /// A zip given in the request; `name` and `description` must be the
    /// ones its `SKILL.md` declares.
    Inline { name: String, description: String, source: InlineSkillSource },
}

/// A skill installed in an environment, as resources show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HostedSkill {
    /// The concrete version chosen when the environment was created.
    SkillReference {
        skill_id: String,
        version: String,
        name: String,
        description: String,
    },
    Inline {
        name: String,
        description: String,
    },
}

impl HostedSkill {
    pub fn name(&self) -> &str {
        match self {
            HostedSkill::SkillReference { name, .. } | HostedSkill::Inline { name, .. } => name,
        }
    }

    pub fn description(&self) -> &str {
        match self {
            HostedSkill::SkillReference { description, .. } | HostedSkill::Inline { description, .. } => description,
        }
    }
}

pub mod front_matter;
