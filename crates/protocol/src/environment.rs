//! Environments: one sandbox with its files, processes and setup, created
//! lazily on first use and shareable by many sessions by reference.

use crate::Metadata;
use crate::ids::{EnvironmentId, SessionId};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A file placed in the environment at initialization.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum FileParam {
    /// Base64 `data` written at `path`.
    Inline { path: String, data: String },
    /// A file of the Files API, copied when the environment is created.
    FileId { path: String, file_id: String },
}

/// A setup command, run once at initialization.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetupCommand {
    pub command: String,
    #[serde(default)]
    pub cwd: Option<String>,
}

/// Packages installed at initialization.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PackagesParam {
    #[serde(default)]
    pub npm: Option<Vec<String>>,
    #[serde(default)]
    pub python: Option<Vec<String>>,
    #[serde(default)]
    pub system: Option<Vec<String>>,
}

/// Network access.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NetworkAccess {
    Enabled,
    #[default]
    Disabled,
    Restricted,
}

/// The network policy of an environment.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NetworkParam {
    pub access: NetworkAccess,
    #[serde(default)]
    pub allowed_domains: Option<Vec<String>>,
    #[serde(default)]
    pub blocked_domains: Option<Vec<String>>,
}

pub use crate::vault::VaultCredentialBinding;

/// Desktop provisioning (not offered).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DesktopParam {
    pub enabled: bool,
}

/// An `openai_hosted` environment's configuration, as requests send it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnvironmentConfig {
    #[serde(default)]
    pub files: Option<Vec<FileParam>>,
    #[serde(default)]
    pub env: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub setup_commands: Option<Vec<SetupCommand>>,
    #[serde(default)]
    pub packages: Option<PackagesParam>,
    #[serde(default)]
    pub network: Option<NetworkParam>,
    #[serde(default)]
    pub capability_directories: Option<Vec<String>>,
    #[serde(default)]
    pub container_size: Option<String>,
    #[serde(default)]
    pub desktop: Option<DesktopParam>,
    #[serde(default)]
    pub environment_template_id: Option<String>,
    #[serde(default)]
    pub environment_id: Option<String>,
    #[serde(default)]
    pub plugins: Option<Vec<serde_json::Value>>,
    /// Resolved into [`EnvironmentRecord::skills`] when the environment is
    /// created (and then not kept here: their zips are stored apart).
    #[serde(default)]
    pub skills: Option<Vec<crate::skill::SkillParam>>,
    /// Rebyte extension: environment credentials from vaults.
    #[serde(default)]
    pub vault_credentials: Option<Vec<VaultCredentialBinding>>,
}

/// The constant `"openai_hosted"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HostedKind {
    OpenaiHosted,
}

/// `{"type": "openai_hosted", …}`.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct HostedEnvironmentParam {
    #[serde(rename = "type")]
    pub kind: HostedKind,
    #[serde(flatten)]
    pub config: EnvironmentConfig,
}

/// `POST /v1/agents/environments`.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnvironmentCreate {
    pub environment: HostedEnvironmentParam,
    #[serde(default)]
    pub vault_ids: Option<Vec<String>>,
    #[serde(default)]
    pub metadata: Option<Metadata>,
}

/// `POST /v1/agents/environments/{id}/fork` (a Rebyte extension; the body is optional).
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnvironmentFork {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub metadata: Option<Metadata>,
}

/// Where an environment is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EnvironmentStatus {
    /// Identity reserved, nothing started.
    Pending,
    /// Initialization is running.
    Initializing,
    Ready,
    /// Paused after idling; resumes on use.
    Suspended,
    /// Initialization failed; final.
    Failed,
}

/// Why initialization failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EnvironmentError {
    pub code: String,
    pub message: String,
    /// The failing step (`setup_commands[1]`, `packages.python` …).
    pub step: Option<String>,
    /// What it printed.
    pub output: Option<String>,
}

/// Where an environment's setup is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SetupState {
    Running,
    Completed,
    Failed,
}

/// Rebyte extension: the progress of an environment's one-time setup (`setup`
/// on the resource, and on `agent.session.environment.pending` events while a
/// turn waits for it). Null until setup starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EnvironmentSetup {
    pub state: SetupState,
    /// The step running, or the one that failed: `sandbox` (creating it),
    /// `files[0]`, `packages.system`, `packages.python`, `packages.npm`,
    /// `setup_commands[1]` …; null once setup completed.
    pub step: Option<String>,
    /// That step's command (`write <path>` for a file).
    pub command: Option<String>,
    /// How many of `steps_total` steps finished.
    pub steps_completed: u32,
    /// Files, package installs and setup commands (the sandbox's creation not counted).
    pub steps_total: u32,
    /// Unix seconds.
    pub started_at: i64,
    pub step_started_at: Option<i64>,
    pub completed_at: Option<i64>,
}

impl EnvironmentSetup {
    /// Setup starting: the sandbox is being created.
    pub fn started(at: i64, steps_total: u32) -> Self {
        EnvironmentSetup {
            state: SetupState::Running,
            step: Some("sandbox".into()),
            command: None,
            steps_completed: 0,
            steps_total,
            started_at: at,
            step_started_at: Some(at),
            completed_at: None,
        }
    }

    /// The step `index` (from 0) starts.
    pub fn step(&mut self, name: &str, command: &str, index: u32, at: i64) {
        self.step = Some(name.into());
        self.command = Some(command.into());
        self.steps_completed = index;
        self.step_started_at = Some(at);
    }

    /// Setup ended: `completed` clears the step, `failed` keeps it.
    pub fn end(&mut self, state: SetupState, at: i64) {
        if state == SetupState::Completed {
            (self.step, self.command, self.step_started_at) = (None, None, None);
            self.steps_completed = self.steps_total;
        }
        self.state = state;
        self.completed_at = Some(at);
    }
}

/// A file of the environment's initial configuration, as resources show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HostedFile {
    pub id: String,
    pub path: String,
    pub size_bytes: u64,
    #[serde(rename = "type")]
    pub kind: String,
    /// The Files API file it was copied from (`type: file_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_id: Option<String>,
}

/// An environment as the server keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnvironmentRecord {
    pub id: EnvironmentId,
    pub created_at: i64,
    pub status: EnvironmentStatus,
    pub error: Option<EnvironmentError>,
    /// The session that created it inline (a private environment), if any.
    pub owner_session: Option<SessionId>,
    /// Set by the first reference; never cleared.
    pub shared: bool,
    pub metadata: Metadata,
    pub config: EnvironmentConfig,
    pub files: Vec<HostedFile>,
    /// The skills unpacked at initialization, resolved at creation.
    #[serde(default)]
    pub skills: Vec<crate::skill::HostedSkill>,
    /// What initialization printed (so far, while it runs).
    pub setup_log: Option<String>,
    /// Where setup is; None until it starts.
    #[serde(default)]
    pub setup: Option<EnvironmentSetup>,
    pub vault_ids: Vec<String>,
    /// In a cluster: the node whose sandbox backend runs it (its files live there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// The template (and its version) it was created from, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<crate::environment_template::TemplateOrigin>,
    /// The environment it was forked from, if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<EnvironmentId>,
    /// A name given at a fork.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// The environment resource (`agent.environment`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Environment {
    pub id: String,
    pub object: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub status: EnvironmentStatus,
    pub created_at: i64,
    pub files: Vec<HostedFile>,
    pub plugins: Vec<serde_json::Value>,
    pub skills: Vec<crate::skill::HostedSkill>,
    pub capability_directories: Vec<String>,
    /// `small`, `medium` or `large` (1, 2 or 4 CPUs and 2, 4 or 8 GiB); absent: the server's limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_size: Option<String>,
    pub network: NetworkView,
    pub packages: PackagesView,
    /// Rebyte extension: why initialization failed.
    pub error: Option<EnvironmentError>,
    /// Rebyte extension: `private` (owned by the session that created it) or `shared`.
    pub lifetime: String,
    /// Rebyte extension: what initialization printed; it grows while setup runs.
    pub setup_log: Option<String>,
    /// Rebyte extension: where setup is (`status` stays `pending` while it runs).
    pub setup: Option<EnvironmentSetup>,
    /// Rebyte extension: the template (and its version) it was created from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment_template: Option<crate::environment_template::TemplateOrigin>,
    /// Rebyte extension: the environment this one was forked from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<String>,
    /// Rebyte extension: the name given at a fork.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub metadata: Metadata,
}

/// The network policy as resources show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NetworkView {
    pub access: NetworkAccess,
    pub allowed_domains: Vec<String>,
}

/// Packages as resources show them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PackagesView {
    pub npm: Vec<String>,
    pub python: Vec<String>,
    pub system: Vec<String>,
}

/// `DELETE /v1/agents/environments/{id}` (Rebyte extension).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EnvironmentDeleted {
    pub id: String,
    pub object: String,
    pub deleted: bool,
}

/// A live file of an environment (`agent.environment.file`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EnvironmentFile {
    pub environment_id: String,
    pub object: String,
    pub path: String,
    pub size_bytes: u64,
}

impl EnvironmentRecord {
    pub fn network(&self) -> NetworkView {
        let n = self.config.network.clone().unwrap_or_default();
        NetworkView { access: n.access, allowed_domains: n.allowed_domains.unwrap_or_default() }
    }

    pub fn packages(&self) -> PackagesView {
        let p = self.config.packages.clone().unwrap_or_default();
        PackagesView {
            npm: p.npm.unwrap_or_default(),
            python: p.python.unwrap_or_default(),
            system: p.system.unwrap_or_default(),
        }
    }

    /// The public resource.
    pub fn resource(&self) -> Environment {
        Environment {
            id: self.id.to_string(),
            object: "agent.environment".into(),
            kind: "openai_hosted".into(),
            // The client knows no `initializing`: setup running is still pending.
            status: if self.status == EnvironmentStatus::Initializing {
                EnvironmentStatus::Pending
            } else {
                self.status
            },
            created_at: self.created_at,
            files: self.files.clone(),
            plugins: Vec::new(),
            skills: self.skills.clone(),
            capability_directories: self.config.capability_directories.clone().unwrap_or_default(),
            container_size: self.config.container_size.clone(),
            network: self.network(),
            packages: self.packages(),
            error: self.error.clone(),
            lifetime: if self.shared || self.owner_session.is_none() { "shared".into() } else { "private".into() },
            setup_log: self.setup_log.clone(),
            setup: self.setup.clone(),
            environment_template: self.template.clone(),
            forked_from: self.forked_from.as_ref().map(|id| id.to_string()),
            name: self.name.clone(),
            metadata: self.metadata.clone(),
        }
    }

    /// The view a session resource shows of its environment.
    pub fn session_view(&self) -> crate::session::SessionEnvironment {
        crate::session::SessionEnvironment::OpenaiHosted {
            id: self.id.clone(),
            capability_directories: self.config.capability_directories.clone().unwrap_or_default(),
            files: self.files.clone(),
            network: self.network(),
            packages: self.packages(),
            plugins: Vec::new(),
            skills: self.skills.iter().filter_map(|s| serde_json::to_value(s).ok()).collect(),
        }
    }
}

impl<'de> Deserialize<'de> for HostedEnvironmentParam {
    // By hand, so that unknown fields are refused and errors name their path
    // (serde's `flatten` would silently drop a misspelled `setup_command`).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (_, rest) = crate::tagged::split::<D>(d, &["openai_hosted"])?;
        let config = crate::tagged::variant::<EnvironmentConfig, D>(rest)?;
        Ok(HostedEnvironmentParam { kind: HostedKind::OpenaiHosted, config })
    }
}
