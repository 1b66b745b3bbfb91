//! Skills (`/v1/skills`): a skill is uploaded as one zip or as the files of
//! one directory, checked ([`archive`]: bounded, no escaping paths, no
//! symlinks, a `SKILL.md` whose front matter names it), and kept as
//! immutable numbered versions, each a canonical zip in the database. The
//! skill shows its default version's name and description; a new version
//! becomes the default only when asked. Environments take a version by
//! number, `latest`, or the default (see [`crate::environment_contents`]).

pub mod archive;

use crate::{App, Error, Result, now};
use archive::Bundle;
use protocol::ids::Kind;
use protocol::list::{Order, PageRequest};
use protocol::skill::front_matter::{self, SkillMeta};
use protocol::skill::{SkillRecord, SkillVersionRecord, VersionParam};
use store::Page;

/// How often a write that lost a race with another is tried again.
const TRIES: usize = 5;

/// One uploaded file of a multipart request.
#[derive(Debug, Clone)]
pub struct Upload {
    /// The part's file name: a relative path for a directory upload.
    pub filename: String,
    pub data: Vec<u8>,
}

/// A checked skill: its files and what its `SKILL.md` declares.
#[derive(Debug)]
pub struct Checked {
    pub bundle: Bundle,
    pub meta: SkillMeta,
}

impl Checked {
    /// The canonical zip to keep.
    pub fn zip(&self) -> Result<Vec<u8>> {
        self.bundle.to_zip().map_err(|e| Error::Internal(format!("writing a skill's zip: {e}")))
    }
}

/// Whether bytes are a zip (its local file header, or an empty archive's end record).
fn is_zip(data: &[u8]) -> bool {
    data.starts_with(b"PK\x03\x04") || data.starts_with(b"PK\x05\x06")
}

/// Checks a skill given as a zip's bytes; errors name `param`.
pub fn check_zip(param: &str, data: &[u8]) -> Result<Checked> {
    let bundle = Bundle::from_zip(data).map_err(|e| Error::invalid(param, e.to_string()))?;
    check_bundle(param, bundle)
}

fn check_bundle(param: &str, bundle: Bundle) -> Result<Checked> {
    let meta = front_matter::parse(bundle.skill_md()).map_err(|e| Error::invalid(param, e.to_string()))?;
    Ok(Checked { bundle, meta })
}

/// Checks an upload: one zip, or the files of one directory (`files`).
pub fn check_upload(uploads: Vec<Upload>) -> Result<Checked> {
    let param = "files";
    if uploads.is_empty() {
        return Err(Error::invalid(param, "upload the skill: the files of its directory, or one zip"));
    }
    let total: usize = uploads.iter().map(|u| u.data.len()).sum();
    if total > archive::MAX_UPLOAD_BYTES {
        return Err(Error::TooLarge(format!("a skill upload is limited to {} bytes", archive::MAX_UPLOAD_BYTES)));
    }
    if let [one] = uploads.as_slice()
        && (is_zip(&one.data) || one.filename.to_ascii_lowercase().ends_with(".zip"))
    {
        return check_zip(param, &one.data);
    }
    if uploads.iter().any(|u| u.filename.is_empty()) {
        return Err(Error::invalid(param, "each file of a directory upload needs its path as its file name"));
    }
    let files = uploads.into_iter().map(|u| (u.filename, u.data)).collect();
    check_bundle(param, Bundle::from_files(files).map_err(|e| Error::invalid(param, e.to_string()))?)
}

/// A version number from a path segment (a number, or `latest`).
fn parse_version(version: &str) -> Result<Option<i64>> {
    VersionParam::Text(version.to_string()).number().map_err(|m| Error::invalid("version", m))
}

fn version_record(skill_id: &str, number: i64, checked: &Checked) -> SkillVersionRecord {
    SkillVersionRecord {
        id: Kind::SkillVersion.mint(),
        skill_id: skill_id.to_string(),
        version: number,
        created_at: now(),
        name: checked.meta.name.clone(),
        description: checked.meta.description.clone(),
        size_bytes: checked.bundle.size(),
    }
}

/// The skills of one organization.
pub struct Service<'a> {
    pub(crate) app: &'a App,
    pub(crate) org: &'a str,
}

impl Service<'_> {
    /// A new skill whose first version (the default) is the upload.
    pub async fn create(&self, uploads: Vec<Upload>) -> Result<SkillRecord> {
        let checked = check_upload(uploads)?;
        let zip = checked.zip()?;
        let id = Kind::Skill.mint();
        let version = version_record(&id, 1, &checked);
        let skill = SkillRecord {
            id,
            created_at: version.created_at,
            name: version.name.clone(),
            description: version.description.clone(),
            default_version: 1,
            latest_version: 1,
            last_version: 1,
            rev: 1,
        };
        self.app.store.create_skill(self.org, &skill, &version, &zip).await?;
        Ok(skill)
    }

    pub async fn get(&self, id: &str) -> Result<SkillRecord> {
        self.app.store.get_skill(self.org, id).await?.ok_or_else(|| Error::not_found("skill", id))
    }

    pub async fn list(&self, page: &PageRequest) -> Result<Page<SkillRecord>> {
        Ok(self.app.store.list_skills(self.org, page).await?)
    }

    pub async fn delete(&self, id: &str) -> Result<()> {
        if !self.app.store.delete_skill(self.org, id).await? {
            return Err(Error::not_found("skill", id));
        }
        Ok(())
    }

    /// The version a request names (`None`: `latest`) of a skill, or 404 naming `param`.
    pub async fn resolve(&self, param: &str, skill: &SkillRecord, number: Option<i64>) -> Result<SkillVersionRecord> {
        let number = number.unwrap_or(skill.latest_version);
        self.app.store.get_skill_version(self.org, &skill.id, number).await?.ok_or_else(|| Error::MissingReference {
            param: param.to_string(),
            message: format!("Skill '{}' has no version {number}.", skill.id),
        })
    }

    /// Makes another version the default.
    pub async fn set_default(&self, id: &str, version: &VersionParam) -> Result<SkillRecord> {
        let number = version.number().map_err(|m| Error::invalid("default_version", m))?;
        for _ in 0..TRIES {
            let skill = self.get(id).await?;
            let chosen = self.resolve("default_version", &skill, number).await?;
            let mut next = skill.clone();
            (next.default_version, next.name, next.description) = (chosen.version, chosen.name, chosen.description);
            next.rev += 1;
            if self.app.store.update_skill(self.org, &next).await? {
                return Ok(next);
            }
        }
        Err(Error::Conflict(format!("skill '{id}' is being changed by another request; retry")))
    }

    /// A new version (the next number); the default too if `make_default`.
    pub async fn create_version(
        &self,
        id: &str,
        uploads: Vec<Upload>,
        make_default: bool,
    ) -> Result<SkillVersionRecord> {
        self.get(id).await?;
        let checked = check_upload(uploads)?;
        let zip = checked.zip()?;
        for _ in 0..TRIES {
            let skill = self.get(id).await?;
            let version = version_record(id, skill.last_version + 1, &checked);
            let mut next = skill.clone();
            (next.latest_version, next.last_version) = (version.version, version.version);
            if make_default {
                next.default_version = version.version;
                (next.name, next.description) = (version.name.clone(), version.description.clone());
            }
            next.rev += 1;
            if self.app.store.add_skill_version(self.org, &next, &version, &zip).await? {
                return Ok(version);
            }
        }
        Err(Error::Conflict(format!("skill '{id}' is being changed by another request; retry")))
    }

    /// One version (`version`: a number or `latest`).
    pub async fn version(&self, id: &str, version: &str) -> Result<SkillVersionRecord> {
        let number = parse_version(version)?;
        let skill = self.get(id).await?;
        self.resolve("version", &skill, number)
            .await
            .map_err(|_| Error::NotFound(format!("No version '{version}' of skill '{id}' found.")))
    }

    pub async fn list_versions(&self, id: &str, page: &PageRequest) -> Result<Page<SkillVersionRecord>> {
        self.get(id).await?;
        Ok(self.app.store.list_skill_versions(self.org, id, page).await?)
    }

    /// Deletes a version that is not the default; returns it.
    pub async fn delete_version(&self, id: &str, version: &str) -> Result<SkillVersionRecord> {
        for _ in 0..TRIES {
            let skill = self.get(id).await?;
            let record = self.version(id, version).await?;
            let gone = record.version;
            if gone == skill.default_version {
                return Err(Error::Conflict(format!(
                    "version {gone} is the default version of skill '{id}': make another version the default first, \
                     or delete the skill"
                )));
            }
            let mut next = skill.clone();
            if gone == skill.latest_version {
                let newest = PageRequest { limit: 2, after: None, before: None, order: Order::Desc };
                let page = self.app.store.list_skill_versions(self.org, id, &newest).await?;
                next.latest_version =
                    page.items.iter().map(|v| v.version).find(|v| *v != gone).unwrap_or(skill.default_version);
            }
            next.rev += 1;
            if self.app.store.delete_skill_version(self.org, &next, gone).await? {
                return Ok(record);
            }
        }
        Err(Error::Conflict(format!("skill '{id}' is being changed by another request; retry")))
    }

    /// The zip of the default version: (file name, bytes).
    pub async fn content(&self, id: &str) -> Result<(String, Vec<u8>)> {
        let skill = self.get(id).await?;
        self.version_content(id, &skill.default_version.to_string()).await
    }

    /// The zip of one version: (file name, bytes).
    pub async fn version_content(&self, id: &str, version: &str) -> Result<(String, Vec<u8>)> {
        let v = self.version(id, version).await?;
        let zip = self.app.store.skill_version_content(self.org, id, v.version).await?;
        let zip = zip.ok_or_else(|| Error::NotFound(format!("No version '{version}' of skill '{id}' found.")))?;
        Ok((format!("{}-{}.zip", v.name, v.version), zip))
    }
}
