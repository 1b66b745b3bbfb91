//! Saved Agents: organization-owned, versioned definitions that never run by
//! themselves. [`AgentConfig`] is what a turn needs; [`Agent`] is the resource.

use crate::Metadata;
use crate::tool::{Tool, ToolParam};
use serde::{Deserialize, Deserializer, Serialize};

/// A field that an update may omit (keep), set to null (clear) or set.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Patch<T> {
    #[default]
    Absent,
    Null,
    Value(T),
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Patch<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match Option::<T>::deserialize(d)? {
            None => Patch::Null,
            Some(v) => Patch::Value(v),
        })
    }
}

impl<T: schemars::JsonSchema> schemars::JsonSchema for Patch<T> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        Option::<T>::schema_name()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        Option::<T>::json_schema(generator)
    }
}

impl<T> Patch<T> {
    /// Applies the patch to an optional field: absent keeps, null clears.
    pub fn apply_opt(self, current: &mut Option<T>) {
        match self {
            Patch::Absent => {}
            Patch::Null => *current = None,
            Patch::Value(v) => *current = Some(v),
        }
    }

    /// Applies the patch to a field with a default: null resets it.
    pub fn apply_or_default(self, current: &mut T)
    where
        T: Default,
    {
        match self {
            Patch::Absent => {}
            Patch::Null => *current = T::default(),
            Patch::Value(v) => *current = v,
        }
    }

    pub fn is_absent(&self) -> bool {
        matches!(self, Patch::Absent)
    }
}

/// The service tier used for model requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ServiceTier {
    #[default]
    Auto,
    Default,
    Flex,
    Priority,
    Fast,
    Ultrafast,
}

/// Reasoning effort.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Effort {
    None,
    Minimal,
    Low,
    Medium,
    High,
    Xhigh,
    Max,
}

/// Reasoning summary format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Summary {
    Concise,
    Detailed,
    Auto,
}

/// Reasoning configuration.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Reasoning {
    #[serde(default)]
    pub effort: Option<Effort>,
    #[serde(default)]
    pub summary: Option<Summary>,
}

/// Output text format.
#[derive(Debug, Clone, PartialEq, Default, Serialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TextFormat {
    #[default]
    Text,
    JsonSchema {
        schema: serde_json::Map<String, serde_json::Value>,
    },
}

/// The JSON-schema format's fields, for the tagged deserializer.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonSchemaFields {
    schema: serde_json::Map<String, serde_json::Value>,
}

/// The text format's fields (none).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoFields {}

impl<'de> Deserialize<'de> for TextFormat {
    // By hand, so that errors inside a format name their field path.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (kind, rest) = crate::tagged::split::<D>(d, &["text", "json_schema"])?;
        match kind.as_str() {
            "text" => crate::tagged::variant::<NoFields, D>(rest).map(|_| TextFormat::Text),
            _ => {
                crate::tagged::variant::<JsonSchemaFields, D>(rest).map(|f| TextFormat::JsonSchema { schema: f.schema })
            }
        }
    }
}

/// Verbosity of generated text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Verbosity {
    Low,
    #[default]
    Medium,
    High,
}

/// Text configuration as resources show it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AgentText {
    pub format: TextFormat,
    pub verbosity: Verbosity,
}

/// Text configuration as requests send it (both fields optional).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentTextParam {
    #[serde(default)]
    pub format: Option<TextFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

impl From<AgentTextParam> for AgentText {
    fn from(p: AgentTextParam) -> Self {
        Self { format: p.format.unwrap_or_default(), verbosity: p.verbosity.unwrap_or_default() }
    }
}

/// Context compaction settings.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Compaction {
    #[serde(rename = "async", default, deserialize_with = "null_as_false")]
    pub async_: bool,
}

/// Experimental settings.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Experimental {
    #[serde(default)]
    pub time_awareness: bool,
}

/// Experimental settings to merge by key: omitted settings keep their values.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExperimentalPatch {
    #[serde(default)]
    pub time_awareness: Option<bool>,
}

impl ExperimentalPatch {
    /// Merges these settings into `current`.
    pub fn merge(self, current: &mut Option<Experimental>) {
        let target = current.get_or_insert_with(Experimental::default);
        if let Some(v) = self.time_awareness {
            target.time_awareness = v;
        }
    }
}

/// Subagent configuration. Native multi-agent orchestration is unsupported,
/// so only `enabled: false` is accepted.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MultiAgentConfig {
    pub enabled: bool,
    #[serde(default)]
    pub max_concurrent_subagents: Option<u32>,
}

fn null_as_false<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(Option::<bool>::deserialize(d)?.unwrap_or(false))
}

/// Everything a turn needs to run an agent: the part of an Agent that a
/// Session snapshots at creation.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AgentConfig {
    pub model: String,
    pub instructions: Option<String>,
    pub reasoning: Reasoning,
    pub service_tier: ServiceTier,
    pub text: AgentText,
    pub tools: Vec<ToolParam>,
    pub compaction: Option<Compaction>,
    pub experimental: Option<Experimental>,
    pub multi_agent: MultiAgentConfig,
    /// Rebyte extension: the most model steps one turn may take.
    #[serde(default)]
    pub max_steps: Option<u32>,
}

/// Model steps a turn may take when the agent does not say.
pub const DEFAULT_MAX_STEPS: u32 = 50;
/// The largest `max_steps` an agent may ask for.
pub const MAX_MAX_STEPS: u32 = 1000;

impl AgentConfig {
    /// Each MCP tool's explicit `credential_id`, with the tool's index.
    pub fn mcp_credential_ids(&self) -> Vec<(usize, &str)> {
        let ids = self.tools.iter().enumerate().filter_map(|(i, tool)| match tool {
            ToolParam::Mcp(m) => m.credential_id.as_deref().map(|id| (i, id)),
            _ => None,
        });
        ids.collect()
    }

    /// The step limit in force.
    pub fn max_steps(&self) -> u32 {
        self.max_steps.unwrap_or(DEFAULT_MAX_STEPS)
    }
}

/// `POST /v1/agents`.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentCreate {
    pub model: String,
    #[serde(default)]
    pub compaction: Option<Compaction>,
    #[serde(default)]
    pub experimental: Option<Experimental>,
    #[serde(default)]
    pub instructions: Option<String>,
    #[serde(default)]
    pub metadata: Option<Metadata>,
    #[serde(default)]
    pub multi_agent: Option<MultiAgentConfig>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub reasoning: Option<Reasoning>,
    #[serde(default)]
    pub service_tier: Option<ServiceTier>,
    #[serde(default)]
    pub text: Option<AgentTextParam>,
    #[serde(default)]
    pub tools: Option<Vec<ToolParam>>,
    /// Rebyte extension: the most model steps one turn may take (default 50).
    #[serde(default)]
    pub max_steps: Option<u32>,
}

/// `POST /v1/agents/{agent_id}`: omitted fields keep, null clears or resets.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentUpdate {
    #[serde(default)]
    pub compaction: Patch<Compaction>,
    #[serde(default)]
    pub experimental: Option<ExperimentalPatch>,
    #[serde(default)]
    pub instructions: Patch<String>,
    #[serde(default)]
    pub metadata: Patch<Metadata>,
    #[serde(default)]
    pub model: Patch<String>,
    #[serde(default)]
    pub multi_agent: Patch<MultiAgentConfig>,
    #[serde(default)]
    pub name: Patch<String>,
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

/// A saved Agent as the server keeps it: every version is one of these.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentRecord {
    pub id: String,
    pub version: i64,
    pub created_at: i64,
    pub updated_at: i64,
    pub name: Option<String>,
    pub metadata: Metadata,
    pub config: AgentConfig,
    /// The inline `env` of its stdio MCP tools, sealed with the master key
    /// (base64); the tools in `config` carry none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sealed_mcp_secrets: Option<String>,
}

/// The Agent resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Agent {
    pub id: String,
    pub object: AgentObject,
    pub created_at: i64,
    pub updated_at: i64,
    /// Rebyte extension: the version number, starting at 1; each update adds one.
    pub version: i64,
    pub name: Option<String>,
    pub instructions: Option<String>,
    pub metadata: Metadata,
    pub model: String,
    pub multi_agent: MultiAgentConfig,
    pub reasoning: Reasoning,
    pub service_tier: ServiceTier,
    pub text: AgentText,
    pub tools: Vec<Tool>,
    pub compaction: Option<Compaction>,
    pub experimental: Option<Experimental>,
    /// Rebyte extension: the most model steps one turn may take.
    pub max_steps: u32,
}

/// The constant `"agent"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum AgentObject {
    #[serde(rename = "agent")]
    Agent,
}

/// `DELETE /v1/agents/{agent_id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AgentDeleted {
    pub id: String,
    pub object: String,
    pub deleted: bool,
}

impl AgentRecord {
    /// The public resource of this version.
    pub fn resource(&self) -> Agent {
        let c = &self.config;
        Agent {
            id: self.id.clone(),
            object: AgentObject::Agent,
            created_at: self.created_at,
            updated_at: self.updated_at,
            version: self.version,
            name: self.name.clone(),
            instructions: c.instructions.clone(),
            metadata: self.metadata.clone(),
            model: c.model.clone(),
            multi_agent: c.multi_agent.clone(),
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

impl AgentCreate {
    /// Splits the request into the record's parts: (name, metadata, config).
    pub fn into_parts(self) -> (Option<String>, Metadata, AgentConfig) {
        let config = AgentConfig {
            model: self.model,
            instructions: self.instructions,
            reasoning: self.reasoning.unwrap_or_default(),
            service_tier: self.service_tier.unwrap_or_default(),
            text: self.text.map(AgentText::from).unwrap_or_default(),
            tools: self.tools.unwrap_or_default(),
            compaction: self.compaction,
            experimental: self.experimental,
            multi_agent: self.multi_agent.unwrap_or_default(),
            max_steps: self.max_steps,
        };
        (self.name, self.metadata.unwrap_or_default(), config)
    }
}

impl AgentUpdate {
    /// Applies the update to a record, producing the next version's fields.
    /// The configuration fields patch exactly as a session's agent overrides do.
    pub fn apply(self, record: &mut AgentRecord) {
        self.metadata.apply_or_default(&mut record.metadata);
        self.name.apply_opt(&mut record.name);
        let config = crate::session::SessionAgentParam {
            compaction: self.compaction,
            experimental: self.experimental,
            instructions: self.instructions,
            model: match self.model {
                Patch::Value(model) => Some(model),
                Patch::Absent | Patch::Null => None,
            },
            multi_agent: self.multi_agent,
            reasoning: self.reasoning,
            service_tier: self.service_tier,
            text: self.text,
            tools: self.tools,
            max_steps: self.max_steps,
        };
        config.apply(&mut record.config);
    }
}
