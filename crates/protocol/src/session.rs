//! Sessions (= Conversations): durable context that snapshots an agent
//! configuration at creation and owns the transcript across turns.

use crate::Metadata;
use crate::agent::{
    AgentConfig, AgentText, AgentTextParam, Compaction, Experimental, ExperimentalPatch, MultiAgentConfig, Patch,
    Reasoning, ServiceTier,
};
use crate::ids::{EnvironmentId, SessionId};
use crate::tool::{Tool, ToolParam};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The environment a session create asks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EnvironmentParam {
    /// No execution environment.
    None,
    /// A new private hosted environment configured inline.
    OpenaiHosted(Box<crate::environment::EnvironmentConfig>),
    /// A self-hosted executor (not offered by this server).
    SelfHosted(Map<String, Value>),
    /// Rebyte extension: share an existing Environment by id. Carries only
    /// `type` and `environment_id`.
    Reference(EnvironmentReference),
}

/// `{"type": "reference", "environment_id": …}` and nothing else.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnvironmentReference {
    pub environment_id: String,
}

/// Agent fields a session create may override over the saved agent.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionAgentParam {
    #[serde(default)]
    pub compaction: Patch<Compaction>,
    #[serde(default)]
    pub experimental: Option<ExperimentalPatch>,
    #[serde(default)]
    pub instructions: Patch<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub multi_agent: Patch<MultiAgentConfig>,
    #[serde(default)]
    pub reasoning: Patch<Reasoning>,
    #[serde(default)]
    pub service_tier: Patch<ServiceTier>,
    #[serde(default)]
    pub text: Patch<AgentTextParam>,
    #[serde(default)]
    pub tools: Patch<Vec<ToolParam>>,
    #[serde(default)]
    pub max_steps: Patch<u32>,
}

impl SessionAgentParam {
    /// Applies these overrides to a base configuration.
    pub fn apply(self, c: &mut AgentConfig) {
        self.compaction.apply_opt(&mut c.compaction);
        if let Some(patch) = self.experimental {
            patch.merge(&mut c.experimental);
        }
        self.instructions.apply_opt(&mut c.instructions);
        if let Some(model) = self.model {
            c.model = model;
        }
        self.multi_agent.apply_or_default(&mut c.multi_agent);
        self.reasoning.apply_or_default(&mut c.reasoning);
        self.service_tier.apply_or_default(&mut c.service_tier);
        match self.text {
            Patch::Absent => {}
            Patch::Null => c.text = AgentText::default(),
            Patch::Value(t) => c.text = t.into(),
        }
        self.tools.apply_or_default(&mut c.tools);
        self.max_steps.apply_opt(&mut c.max_steps);
    }
}

/// Prompt cache lifetime.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PromptCacheOptions {
    pub ttl: PromptCacheTtl,
}

/// Allowed prompt cache lifetimes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum PromptCacheTtl {
    #[serde(rename = "30m")]
    Minutes30,
    #[serde(rename = "12h")]
    Hours12,
}

/// Action review mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Review {
    #[default]
    None,
    AutoReview,
}

/// `POST /v1/agents/sessions`.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionCreate {
    #[serde(deserialize_with = "environment_param")]
    pub environment: EnvironmentParam,
    #[serde(default)]
    pub agent: Option<SessionAgentParam>,
    #[serde(default)]
    pub agent_id: Option<String>,
    /// A string, or a list of user messages. Runs as the first turn.
    #[serde(default)]
    pub input: Option<Value>,
    #[serde(default)]
    pub metadata: Option<Metadata>,
    #[serde(default)]
    pub prompt_cache_options: Option<PromptCacheOptions>,
    #[serde(default)]
    pub review: Option<Review>,
    #[serde(default)]
    pub stream: Option<bool>,
    #[serde(default)]
    pub stream_options: Option<Map<String, Value>>,
    #[serde(default)]
    pub vault_ids: Option<Vec<String>>,
}

/// A session's `environment`: `{"type": "none"}` carries nothing else (skills,
/// files and setup need an `openai_hosted` environment), which serde's tagged
/// enum alone would silently drop.
fn environment_param<'de, D: serde::Deserializer<'de>>(d: D) -> Result<EnvironmentParam, D::Error> {
    use serde::de::Error;
    let value = Value::deserialize(d)?;
    if value.get("type").and_then(Value::as_str) == Some("none")
        && let Some(key) = value.as_object().and_then(|o| o.keys().find(|k| k.as_str() != "type"))
    {
        return Err(D::Error::custom(format_args!(
            "at `{key}`: a session without an environment (type none) cannot have {key}; \
             use an openai_hosted environment"
        )));
    }
    crate::tagged::variant::<EnvironmentParam, D>(value)
}

/// Agent fields a session update may change for future turns.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionAgentUpdate {
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub reasoning: Option<Reasoning>,
    #[serde(default)]
    pub service_tier: Patch<ServiceTier>,
    #[serde(default)]
    pub tools: Patch<Vec<ToolParam>>,
}

/// `POST /v1/agents/sessions/{session_id}`.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionUpdate {
    #[serde(default)]
    pub agent: Option<SessionAgentUpdate>,
    #[serde(default)]
    pub metadata: Patch<Metadata>,
    #[serde(default)]
    pub prompt_cache_options: Patch<PromptCacheOptions>,
    #[serde(default)]
    pub review: Option<Review>,
}

/// The agent a session runs: a snapshot taken at creation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionAgent {
    /// The saved agent's id, or `agent_inline` for a purely inline agent.
    pub id: String,
    /// The saved agent's version at snapshot time.
    pub version: Option<i64>,
    pub name: Option<String>,
    pub config: AgentConfig,
}

/// The id a session's agent snapshot shows when no saved agent was used.
pub const INLINE_AGENT_ID: &str = "agent_inline";

/// The status of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    #[default]
    Idle,
    InProgress,
    RequiresAction,
    Failed,
}

impl SessionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            SessionStatus::Idle => "idle",
            SessionStatus::InProgress => "in_progress",
            SessionStatus::RequiresAction => "requires_action",
            SessionStatus::Failed => "failed",
        }
    }
}

/// The environment a session is attached to, as the server keeps it.
#[allow(clippy::large_enum_variant)] // Kept inline: one per session record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SessionEnvironment {
    None,
    OpenaiHosted {
        id: EnvironmentId,
        capability_directories: Vec<String>,
        files: Vec<crate::environment::HostedFile>,
        network: crate::environment::NetworkView,
        packages: crate::environment::PackagesView,
        plugins: Vec<Value>,
        skills: Vec<Value>,
    },
}

impl SessionEnvironment {
    /// The environment's id, if the session has one.
    pub fn id(&self) -> Option<&EnvironmentId> {
        match self {
            SessionEnvironment::None => None,
            SessionEnvironment::OpenaiHosted { id, .. } => Some(id),
        }
    }
}

/// How a session relates to its environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EnvironmentRole {
    /// No environment.
    #[default]
    None,
    /// Created it inline: outputs go to `/workspace/outputs`.
    Owner,
    /// Attached by reference, or on a standalone environment:
    /// outputs go to `/workspace/outputs/sessions/<session_id>`.
    Member,
}

/// Token usage, best effort.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TokenUsage {
    pub input_tokens: i64,
    pub input_tokens_details: InputTokensDetails,
    pub output_tokens: i64,
    pub output_tokens_details: OutputTokensDetails,
    pub total_tokens: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct InputTokensDetails {
    pub cached_tokens: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OutputTokensDetails {
    pub reasoning_tokens: i64,
}

/// A session as the server keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    pub id: SessionId,
    pub created_at: i64,
    pub last_active_at: i64,
    pub metadata: Metadata,
    pub agent: SessionAgent,
    pub environment: SessionEnvironment,
    pub status: SessionStatus,
    pub error: Option<String>,
    pub vault_ids: Vec<String>,
    pub prompt_cache_options: Option<PromptCacheOptions>,
    pub review: Review,
    pub usage: Option<TokenUsage>,
    /// What the session waits for (client function calls), while `requires_action`.
    #[serde(default)]
    pub required_actions: Vec<Value>,
    #[serde(default)]
    pub environment_role: EnvironmentRole,
    /// The inline MCP HTTP secrets (`authorization`, `headers`) of the
    /// session's tools, sealed by the server (base64); the tools themselves
    /// are stored without them. Never shown in a resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sealed_mcp_secrets: Option<String>,
}

/// The part of a session the engine owns: written without touching the
/// configuration a caller may update concurrently.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionState {
    pub status: SessionStatus,
    pub error: Option<String>,
    pub last_active_at: i64,
    pub usage: Option<TokenUsage>,
    pub required_actions: Vec<Value>,
}

impl SessionRecord {
    /// A new idle session of `agent`, created `at`, with no environment.
    pub fn new(agent: SessionAgent, metadata: Metadata, at: i64) -> Self {
        Self {
            id: SessionId::new(),
            created_at: at,
            last_active_at: at,
            metadata,
            agent,
            environment: SessionEnvironment::None,
            status: SessionStatus::Idle,
            error: None,
            vault_ids: Vec::new(),
            prompt_cache_options: None,
            review: Default::default(),
            usage: None,
            required_actions: Vec::new(),
            environment_role: Default::default(),
            sealed_mcp_secrets: None,
        }
    }

    /// The engine-owned state of this record.
    pub fn state(&self) -> SessionState {
        SessionState {
            status: self.status,
            error: self.error.clone(),
            last_active_at: self.last_active_at,
            usage: self.usage.clone(),
            required_actions: self.required_actions.clone(),
        }
    }

    /// Applies engine-owned state to this record.
    pub fn set_state(&mut self, state: SessionState) {
        self.status = state.status;
        self.error = state.error;
        self.last_active_at = state.last_active_at;
        self.usage = state.usage;
        self.required_actions = state.required_actions;
    }
}

/// The agent snapshot as the session resource shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SessionAgentView {
    pub id: String,
    /// Rebyte extension: the saved agent version this session pinned.
    pub version: Option<i64>,
    pub instructions: Option<String>,
    pub model: String,
    pub multi_agent: MultiAgentConfig,
    pub name: Option<String>,
    pub reasoning: Reasoning,
    pub service_tier: ServiceTier,
    pub text: AgentText,
    pub tools: Vec<Tool>,
    pub compaction: Option<Compaction>,
    pub experimental: Option<Experimental>,
    /// Rebyte extension: the most model steps one turn may take.
    pub max_steps: u32,
}

/// The Session resource (`agent.session`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Session {
    pub id: String,
    pub object: String,
    pub agent: SessionAgentView,
    pub created_at: i64,
    pub environment: SessionEnvironment,
    pub error: Option<String>,
    pub last_active_at: i64,
    pub metadata: Metadata,
    pub required_actions: Vec<Value>,
    pub status: SessionStatus,
    pub usage: Option<TokenUsage>,
    pub vault_ids: Vec<String>,
    pub prompt_cache_options: Option<PromptCacheOptions>,
    pub review: Review,
}

/// `DELETE /v1/agents/sessions/{session_id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SessionDeleted {
    pub id: String,
    pub object: String,
    pub deleted: bool,
}

impl SessionAgent {
    pub fn view(&self) -> SessionAgentView {
        let c = &self.config;
        SessionAgentView {
            id: self.id.clone(),
            version: self.version,
            instructions: c.instructions.clone(),
            model: c.model.clone(),
            multi_agent: c.multi_agent.clone(),
            name: self.name.clone(),
            reasoning: c.reasoning.clone(),
            service_tier: c.service_tier,
            text: c.text.clone(),
            tools: c.tools.iter().map(ToolParam::view).collect(),
            compaction: c.compaction.clone(),
            experimental: c.experimental.clone(),
            max_steps: c.max_steps(),
        }
    }
}

impl SessionRecord {
    /// The public resource.
    pub fn resource(&self) -> Session {
        Session {
            id: self.id.to_string(),
            object: "agent.session".into(),
            agent: self.agent.view(),
            created_at: self.created_at,
            environment: self.environment.clone(),
            error: self.error.clone(),
            last_active_at: self.last_active_at,
            metadata: self.metadata.clone(),
            required_actions: self.required_actions.clone(),
            status: self.status,
            usage: self.usage.clone(),
            vault_ids: self.vault_ids.clone(),
            prompt_cache_options: self.prompt_cache_options.clone(),
            review: self.review,
        }
    }
}

impl SessionUpdate {
    /// Applies the update to a session record.
    pub fn apply(self, s: &mut SessionRecord) {
        if let Some(agent) = self.agent {
            let c = &mut s.agent.config;
            if let Some(model) = agent.model {
                c.model = model;
            }
            if let Some(reasoning) = agent.reasoning {
                c.reasoning.effort = reasoning.effort;
            }
            agent.service_tier.apply_or_default(&mut c.service_tier);
            agent.tools.apply_or_default(&mut c.tools);
        }
        self.metadata.apply_or_default(&mut s.metadata);
        self.prompt_cache_options.apply_opt(&mut s.prompt_cache_options);
        if let Some(review) = self.review {
            s.review = review;
        }
    }
}
