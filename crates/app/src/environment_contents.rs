//! What an environment carries besides its setup, resolved when it is
//! created: its skills (`skill_reference` → the concrete version, `inline`
//! → a checked zip) and its uploaded files (`file_id` → the file's size).
//! Their bytes are copied into the environment's own contents in the
//! database (`store::Store::put_environment_content`, the `copy_*` calls),
//! so a later version of a skill, or deleting the file, changes nothing in
//! an environment made before; the engine unpacks them at initialization.

use crate::environments::{Service, check_config};
use crate::skills::{self, archive};
use crate::{Error, Result};
use base64::Engine as _;
use protocol::environment::{EnvironmentConfig, FileParam, HostedFile};
use protocol::ids::EnvironmentId;
use protocol::skill::{HostedSkill, SkillParam, VersionParam, content_key, file_content_key};
use std::collections::HashMap;

/// Most skills in one environment.
const MAX_SKILLS: usize = 64;
/// Most capability directories.
const MAX_CAPABILITY_DIRECTORIES: usize = 16;

/// Bytes to store with a new environment.
#[derive(Debug)]
enum Content {
    /// An inline skill's canonical zip.
    Zip { key: String, data: Vec<u8> },
    /// A skill version's zip, copied.
    Version { key: String, skill_id: String, version: i64 },
    /// An uploaded file's bytes, copied.
    File { key: String, file_id: String },
}

/// A checked configuration's resolved parts.
#[derive(Debug, Default)]
pub struct Prepared {
    pub files: Vec<HostedFile>,
    pub skills: Vec<HostedSkill>,
    contents: Vec<Content>,
}

/// Collapses runs of whitespace, so YAML's folding does not count as a difference.
fn words(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A capability directory as the sandbox sees it: absolute, or under `/workspace`.
fn check_directory(param: &str, dir: &str) -> Result<String> {
    let full = if dir.starts_with('/') { dir.to_string() } else { format!("/workspace/{dir}") };
    let full = full.trim_end_matches('/').to_string();
    if dir.is_empty() || full.is_empty() || full.contains('\0') || full.split('/').any(|c| c == "..") {
        return Err(Error::invalid(param, format!("'{dir}' is not a directory path of the sandbox")));
    }
    Ok(full)
}

impl Service<'_> {
    /// Checks an environment's configuration and resolves what it refers to:
    /// skills (404 for an unknown skill or version), uploaded files (404 for
    /// an unknown file), vault bindings. Takes `skills` out of `config`
    /// (their zips are stored apart) and normalizes its capability directories.
    pub async fn prepare(&self, prefix: &str, config: &mut EnvironmentConfig) -> Result<Prepared> {
        let p = |f: &str| format!("{prefix}.{f}");
        let mut files = check_config(prefix, config)?;
        self.check_bindings(prefix, config).await?;
        let dirs = config.capability_directories.take().unwrap_or_default();
        if dirs.len() > MAX_CAPABILITY_DIRECTORIES {
            return Err(Error::invalid(p("capability_directories"), format!("at most {MAX_CAPABILITY_DIRECTORIES}")));
        }
        let dirs =
            dirs.iter().enumerate().map(|(i, d)| check_directory(&p(&format!("capability_directories[{i}]")), d));
        config.capability_directories = Some(dirs.collect::<Result<_>>()?);
        let mut contents = Vec::new();
        for (i, f) in config.files.iter().flatten().enumerate() {
            if let FileParam::FileId { file_id, .. } = f {
                let file = self.app.files(self.org).get(file_id).await.map_err(|_| Error::MissingReference {
                    param: p(&format!("files[{i}].file_id")),
                    message: format!("No file found with id '{file_id}'."),
                })?;
                files[i].size_bytes = file.bytes;
                contents.push(Content::File { key: file_content_key(i), file_id: file_id.clone() });
            }
        }
        let params = config.skills.take().unwrap_or_default();
        if params.len() > MAX_SKILLS {
            return Err(Error::invalid(p("skills"), format!("an environment has at most {MAX_SKILLS} skills")));
        }
        let mut skills = Vec::new();
        let mut named: HashMap<String, usize> = HashMap::new();
        for (i, param) in params.into_iter().enumerate() {
            let at = |f: &str| p(&format!("skills[{i}]{f}"));
            let (skill, content) = match param {
                SkillParam::SkillReference { skill_id, version } => self.reference(&at, skill_id, version).await?,
                SkillParam::Inline { name, description, source } => {
                    if source.kind != "base64" {
                        return Err(Error::invalid(at(".source.type"), "must be base64"));
                    }
                    if source.media_type != "application/zip" {
                        return Err(Error::invalid(at(".source.media_type"), "must be application/zip"));
                    }
                    if source.data.len() > archive::MAX_UPLOAD_BYTES / 3 * 4 + 4 {
                        return Err(Error::TooLarge(format!(
                            "{}: a skill's zip is limited to {} bytes",
                            at(".source.data"),
                            archive::MAX_UPLOAD_BYTES
                        )));
                    }
                    let zip = base64::engine::general_purpose::STANDARD
                        .decode(&source.data)
                        .map_err(|e| Error::invalid(at(".source.data"), format!("data must be base64: {e}")))?;
                    let checked = skills::check_zip(&at(".source.data"), &zip)?;
                    if checked.meta.name != name {
                        return Err(Error::invalid(
                            at(".name"),
                            format!("'{name}' is not the name its SKILL.md declares ('{}')", checked.meta.name),
                        ));
                    }
                    if words(&checked.meta.description) != words(&description) {
                        return Err(Error::invalid(at(".description"), "is not the description its SKILL.md declares"));
                    }
                    let content = Content::Zip { key: content_key(&name), data: checked.zip()? };
                    (HostedSkill::Inline { name, description: checked.meta.description }, content)
                }
            };
            if let Some(first) = named.insert(skill.name().to_string(), i) {
                return Err(Error::invalid(
                    at(""),
                    format!(
                        "skills[{first}] and skills[{i}] are both named '{}'; an environment's skills need distinct names",
                        skill.name()
                    ),
                ));
            }
            skills.push(skill);
            contents.push(content);
        }
        Ok(Prepared { files, skills, contents })
    }

    /// A `skill_reference`: its concrete version (omitted: the default).
    async fn reference(
        &self,
        at: &(dyn Fn(&str) -> String + Sync),
        skill_id: String,
        version: Option<VersionParam>,
    ) -> Result<(HostedSkill, Content)> {
        let service = self.app.skills(self.org);
        let skill = service.get(&skill_id).await.map_err(|e| match e {
            Error::NotFound(message) => Error::MissingReference { param: at(".skill_id"), message },
            other => other,
        })?;
        let number = match version {
            None => Some(skill.default_version),
            Some(v) => v.number().map_err(|m| Error::invalid(at(".version"), m))?,
        };
        let v = service.resolve(&at(".version"), &skill, number).await?;
        let content = Content::Version { key: content_key(&v.name), skill_id: skill_id.clone(), version: v.version };
        let hosted = HostedSkill::SkillReference {
            skill_id,
            version: v.version.to_string(),
            name: v.name,
            description: v.description,
        };
        Ok((hosted, content))
    }

    /// Stores a new environment's contents; on failure none stay.
    pub async fn store_contents(&self, env_id: &EnvironmentId, prepared: Prepared) -> Result<()> {
        let stored = self.write_contents(env_id, prepared.contents).await;
        if stored.is_err() {
            let _ = self.app.store.delete_environment_contents(self.org, env_id).await;
        }
        stored
    }

    async fn write_contents(&self, env_id: &EnvironmentId, contents: Vec<Content>) -> Result<()> {
        let store = &self.app.store;
        for content in contents {
            let copied = match &content {
                Content::Zip { key, data } => {
                    store.put_environment_content(self.org, env_id, key, data).await?;
                    true
                }
                Content::Version { key, skill_id, version } => {
                    store.copy_skill_version_to_environment(self.org, env_id, key, skill_id, *version).await?
                }
                Content::File { key, file_id } => {
                    store.copy_file_to_environment(self.org, env_id, key, file_id).await?
                }
            };
            if !copied {
                let what = match content {
                    Content::Version { skill_id, version, .. } => format!("version {version} of skill '{skill_id}'"),
                    Content::File { file_id, .. } => format!("file '{file_id}'"),
                    Content::Zip { key, .. } => key,
                };
                return Err(Error::Conflict(format!("{what} was deleted while the environment was being created")));
            }
        }
        Ok(())
    }

    /// Deletes a never-used environment and its contents (a failed create).
    pub(crate) async fn discard(&self, env_id: &EnvironmentId) {
        let _ = self.app.store.delete_environment(self.org, env_id).await;
        let _ = self.app.store.delete_environment_contents(self.org, env_id).await;
    }
}
