//! Environment templates (`agent.environment.template`): a reusable
//! `openai_hosted` configuration. An environment created with
//! `environment_template_id` starts from the template's configuration, the
//! request's own fields replacing the template's; it keeps which template and
//! which version it came from, and a later update of the template changes
//! nothing in it. Confidential inputs (`env` values, setup command bodies,
//! inline file and skill contents) are kept but never shown.

use crate::environment::{
    DesktopParam, EnvironmentConfig, FileParam, NetworkAccess, NetworkParam, PackagesParam, PackagesView, SetupCommand,
};
use crate::ids::EnvironmentTemplateId;
use crate::skill::{SkillParam, VersionParam};
use serde::{Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;

/// `POST /v1/agents/environments/templates`: the fields of an
/// `openai_hosted` environment, and a name.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnvironmentTemplateCreate {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub capability_directories: Option<Vec<String>>,
    #[serde(default)]
    pub desktop: Option<DesktopParam>,
    #[serde(default)]
    pub env: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub files: Option<Vec<FileParam>>,
    #[serde(default)]
    pub network: Option<NetworkParam>,
    #[serde(default)]
    pub packages: Option<PackagesParam>,
    #[serde(default)]
    pub plugins: Option<Vec<serde_json::Value>>,
    #[serde(default)]
    pub setup_commands: Option<Vec<SetupCommand>>,
    #[serde(default)]
    pub skills: Option<Vec<SkillParam>>,
}

impl EnvironmentTemplateCreate {
    /// The name, and the configuration an environment starts from.
    pub fn into_parts(self) -> (Option<String>, EnvironmentConfig) {
        let config = EnvironmentConfig {
            capability_directories: self.capability_directories,
            desktop: self.desktop,
            env: self.env,
            files: self.files,
            network: self.network,
            packages: self.packages,
            plugins: self.plugins,
            setup_commands: self.setup_commands,
            skills: self.skills,
            ..Default::default()
        };
        (self.name, config)
    }
}

/// A field of an update: absent (`None`) keeps the template's value, `null`
/// (`Some(None)`) resets it to the default, a value replaces it.
type Change<T> = Option<Option<T>>;

/// Tells an explicit `null` (`Some(None)`) from an absent field (`None`, by `default`).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Change<T>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// `POST /v1/agents/environments/templates/{id}`: each field omitted keeps
/// the template's, `null` resets it (no name, the default network policy, no
/// desktop, empty lists), a value replaces it whole.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnvironmentTemplateUpdate {
    #[serde(default, deserialize_with = "present")]
    pub name: Change<String>,
    #[serde(default, deserialize_with = "present")]
    pub capability_directories: Change<Vec<String>>,
    #[serde(default, deserialize_with = "present")]
    pub desktop: Change<DesktopParam>,
    #[serde(default, deserialize_with = "present")]
    pub env: Change<BTreeMap<String, String>>,
    #[serde(default, deserialize_with = "present")]
    pub files: Change<Vec<FileParam>>,
    #[serde(default, deserialize_with = "present")]
    pub network: Change<NetworkParam>,
    #[serde(default, deserialize_with = "present")]
    pub packages: Change<PackagesParam>,
    #[serde(default, deserialize_with = "present")]
    pub plugins: Change<Vec<serde_json::Value>>,
    #[serde(default, deserialize_with = "present")]
    pub setup_commands: Change<Vec<SetupCommand>>,
    #[serde(default, deserialize_with = "present")]
    pub skills: Change<Vec<SkillParam>>,
}

impl EnvironmentTemplateUpdate {
    /// The template's name and configuration with this update applied.
    pub fn apply(self, name: &mut Option<String>, c: &mut EnvironmentConfig) {
        fn set<T>(field: &mut Option<T>, change: Change<T>) {
            if let Some(value) = change {
                *field = value;
            }
        }
        set(name, self.name);
        set(&mut c.capability_directories, self.capability_directories);
        set(&mut c.desktop, self.desktop);
        set(&mut c.env, self.env);
        set(&mut c.files, self.files);
        set(&mut c.network, self.network);
        set(&mut c.packages, self.packages);
        set(&mut c.plugins, self.plugins);
        set(&mut c.setup_commands, self.setup_commands);
        set(&mut c.skills, self.skills);
    }
}

/// Where a template's preparation is. Until templates are prepared into
/// snapshots, a template is `ready` as soon as it is created: an environment
/// made from it runs the setup itself, at its first use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TemplateStatus {
    Preparing,
    Ready,
    Failed,
}

/// A template as the server keeps it: the configuration as sent (confidential
/// parts included) and the inline files' decoded sizes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnvironmentTemplateRecord {
    pub id: EnvironmentTemplateId,
    pub name: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    /// 1 at creation, one more at each update; a store write names the
    /// version it read (`version - 1`).
    pub version: i64,
    pub config: EnvironmentConfig,
    /// The decoded size of each entry of `config.files` (0 for a `file_id`).
    pub file_sizes: Vec<u64>,
    pub status: TemplateStatus,
    pub preparation_log: Option<String>,
    /// Why preparation failed (the step and its output), once it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preparation_error: Option<crate::environment::EnvironmentError>,
}

/// Which template (and version of it) an environment was created from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TemplateOrigin {
    pub id: EnvironmentTemplateId,
    pub version: i64,
}

/// A template's file, as the resource shows it (never the contents).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TemplateFile {
    FileId { file_id: String, path: String },
    Inline { path: String, size_bytes: u64 },
}

/// A template's skill, as the resource shows it: a reference keeps its
/// version selector unresolved (each environment resolves it at creation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TemplateSkill {
    SkillReference { skill_id: String, version: Option<String> },
    Inline { name: String, description: String },
}

/// A template's network policy as the resource shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TemplateNetwork {
    pub access: NetworkAccess,
    pub allowed_domains: Vec<String>,
    /// Rebyte extension (the client's type omits it).
    pub blocked_domains: Vec<String>,
}

/// The template resource (`agent.environment.template`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EnvironmentTemplate {
    pub id: String,
    pub object: String,
    pub name: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    pub capability_directories: Vec<String>,
    pub files: Vec<TemplateFile>,
    pub network: TemplateNetwork,
    pub packages: PackagesView,
    pub plugins: Vec<serde_json::Value>,
    pub skills: Vec<TemplateSkill>,
    pub desktop: Option<DesktopParam>,
    /// Rebyte extension: the version environments created now record.
    pub version: i64,
    /// Rebyte extension: where its preparation is: `preparing` while its
    /// setup runs once into a snapshot, then `ready` (environments made from
    /// it start from the snapshot) or `failed` (environments are refused).
    pub status: TemplateStatus,
    /// Rebyte extension: what preparation printed.
    pub preparation_log: Option<String>,
    /// Rebyte extension: why preparation failed (the step and its output).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preparation_error: Option<crate::environment::EnvironmentError>,
}

/// `DELETE /v1/agents/environments/templates/{id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EnvironmentTemplateDeleted {
    pub id: String,
    pub object: String,
    pub deleted: bool,
}

impl EnvironmentTemplateRecord {
    /// The public resource.
    pub fn resource(&self) -> EnvironmentTemplate {
        let c = &self.config;
        let files = c.files.iter().flatten().enumerate().map(|(i, f)| match f {
            FileParam::FileId { path, file_id } => {
                TemplateFile::FileId { file_id: file_id.clone(), path: path.clone() }
            }
            FileParam::Inline { path, .. } => {
                TemplateFile::Inline { path: path.clone(), size_bytes: self.file_sizes.get(i).copied().unwrap_or(0) }
            }
        });
        let skills = c.skills.iter().flatten().map(|s| match s {
            SkillParam::SkillReference { skill_id, version } => {
                let version = version.as_ref().map(|v| match v {
                    VersionParam::Number(n) => n.to_string(),
                    VersionParam::Text(t) => t.clone(),
                });
                TemplateSkill::SkillReference { skill_id: skill_id.clone(), version }
            }
            SkillParam::Inline { name, description, .. } => {
                TemplateSkill::Inline { name: name.clone(), description: description.clone() }
            }
        });
        let n = c.network.clone().unwrap_or_default();
        let p = c.packages.clone().unwrap_or_default();
        EnvironmentTemplate {
            id: self.id.to_string(),
            object: "agent.environment.template".into(),
            name: self.name.clone(),
            created_at: self.created_at,
            updated_at: self.updated_at,
            capability_directories: c.capability_directories.clone().unwrap_or_default(),
            files: files.collect(),
            network: TemplateNetwork {
                access: n.access,
                allowed_domains: n.allowed_domains.unwrap_or_default(),
                blocked_domains: n.blocked_domains.unwrap_or_default(),
            },
            packages: PackagesView {
                npm: p.npm.unwrap_or_default(),
                python: p.python.unwrap_or_default(),
                system: p.system.unwrap_or_default(),
            },
            plugins: c.plugins.clone().unwrap_or_default(),
            skills: skills.collect(),
            desktop: c.desktop.clone(),
            version: self.version,
            status: self.status,
            preparation_log: self.preparation_log.clone(),
            preparation_error: self.preparation_error.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_update_tells_absent_from_null() {
        let update: EnvironmentTemplateUpdate =
            serde_json::from_value(serde_json::json!({"name": null, "packages": {"python": ["six"]}})).unwrap();
        let (mut name, mut config) = (Some("old".to_string()), EnvironmentConfig::default());
        config.env = Some(BTreeMap::from([("A".to_string(), "1".to_string())]));
        update.apply(&mut name, &mut config);
        assert_eq!(name, None);
        assert_eq!(config.env.as_ref().map(|e| e.len()), Some(1), "absent: kept");
        assert_eq!(config.packages.and_then(|p| p.python), Some(vec!["six".to_string()]));
        let unknown = serde_json::from_value::<EnvironmentTemplateUpdate>(serde_json::json!({"setup_command": []}));
        assert!(unknown.is_err());
    }
}
