//! Tool definitions: client functions (`type: "function"`), MCP servers
//! (`type: "mcp"`), Dynamic Workflow (`type: "dynamic_workflow"`, or the client's
//! `type: "programmatic_tool_calling"`) and the search over deferred functions
//! (`type: "tool_search"`). Requests use [`ToolParam`]; resources show [`Tool`], which
//! never carries inline secrets (`authorization`, `headers`, `env`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// A tool as a request supplies it, and as the server keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolParam {
    Function(FunctionTool),
    Mcp(McpToolParam),
    /// The spec's name for model-written programs over the MCP tools.
    DynamicWorkflow,
    /// The client's name for the same capability; on only when `enabled`.
    ProgrammaticToolCalling(ProgrammaticToolCalling),
    /// `tool_search` over the deferred functions.
    ToolSearch,
}

/// `{"type":"programmatic_tool_calling","enabled":…}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProgrammaticToolCalling {
    pub enabled: bool,
}

/// The fields of a tool that has none but its type.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoFields {}

/// A function defined by the application: the turn waits for its result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FunctionTool {
    pub name: String,
    pub description: String,
    pub parameters: Map<String, Value>,
    #[serde(default)]
    pub defer_loading: bool,
    #[serde(rename = "async", default, skip_serializing_if = "Option::is_none")]
    pub async_: Option<bool>,
}

/// Where outbound MCP HTTP connections originate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ConnectionOrigin {
    Service,
    Environment,
}

/// An MCP server as a request configures it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpToolParam {
    pub server_label: String,
    pub transport: McpTransportParam,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_tools: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_origin: Option<ConnectionOrigin>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_metadata: Option<Map<String, Value>>,
    #[serde(default)]
    pub required: bool,
    /// Rebyte extension: which calls wait for a person's approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require_approval: Option<Box<crate::approval::RequireApproval>>,
    /// Rebyte extension: how long one `tools/call` (or `resources/read`) of this server may
    /// take, in milliseconds (1 to 3600000; 60000 when left out). A call over it fails with an
    /// error naming the limit, the server is sent `notifications/cancelled`, and the turn goes on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 3600000))]
    pub call_timeout_ms: Option<u64>,
}

/// The default of an MCP tool's `call_timeout_ms`: one minute.
pub const DEFAULT_MCP_CALL_TIMEOUT_MS: u64 = 60_000;
/// The largest `call_timeout_ms`: one hour.
pub const MAX_MCP_CALL_TIMEOUT_MS: u64 = 3_600_000;

/// The transport of an MCP server as a request configures it.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum McpTransportParam {
    Http {
        server_url: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        authorization: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        headers: Option<BTreeMap<String, String>>,
    },
    Stdio {
        command: String,
        cwd: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        args: Option<Vec<String>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        env: Option<BTreeMap<String, String>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        env_vars: Option<Vec<String>>,
    },
}

/// A tool as resources show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Tool {
    Function(FunctionTool),
    Mcp(McpTool),
    DynamicWorkflow,
    ProgrammaticToolCalling(ProgrammaticToolCalling),
    ToolSearch,
}

/// An MCP server as resources show it: no inline secrets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct McpTool {
    pub server_label: String,
    pub transport: McpTransport,
    pub allowed_tools: Option<Vec<String>>,
    pub connection_origin: ConnectionOrigin,
    pub credential_id: Option<String>,
    pub request_metadata: Map<String, Value>,
    pub required: bool,
    /// Rebyte extension: which calls wait for a person's approval.
    #[serde(default)]
    pub require_approval: crate::approval::RequireApproval,
    /// Rebyte extension: how long one `tools/call` of this server may take, in milliseconds.
    #[serde(default = "default_call_timeout_ms")]
    #[schemars(range(min = 1, max = 3600000))]
    pub call_timeout_ms: u64,
}

fn default_call_timeout_ms() -> u64 {
    DEFAULT_MCP_CALL_TIMEOUT_MS
}

/// The transport of an MCP server as resources show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum McpTransport {
    Http {
        server_url: String,
        /// Always empty: header values are never returned.
        headers: BTreeMap<String, String>,
    },
    Stdio {
        args: Vec<String>,
        command: String,
        cwd: String,
        env_vars: Vec<String>,
    },
}

impl McpToolParam {
    /// The origin the server derives: stdio is always `environment`; HTTP
    /// defaults to `service`.
    pub fn effective_origin(&self) -> ConnectionOrigin {
        match (&self.transport, self.connection_origin) {
            (McpTransportParam::Stdio { .. }, _) => ConnectionOrigin::Environment,
            (McpTransportParam::Http { .. }, origin) => origin.unwrap_or(ConnectionOrigin::Service),
        }
    }

    /// The limit of one `tools/call`: `call_timeout_ms`, or one minute.
    pub fn call_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.call_timeout_ms.unwrap_or(DEFAULT_MCP_CALL_TIMEOUT_MS))
    }
}

impl ToolParam {
    /// The public view of this tool, with every inline secret left out.
    pub fn view(&self) -> Tool {
        match self {
            ToolParam::Function(f) => Tool::Function(f.clone()),
            ToolParam::Mcp(m) => Tool::Mcp(McpTool {
                server_label: m.server_label.clone(),
                transport: match &m.transport {
                    McpTransportParam::Http { server_url, .. } => {
                        McpTransport::Http { server_url: server_url.clone(), headers: BTreeMap::new() }
                    }
                    McpTransportParam::Stdio { command, cwd, args, env_vars, .. } => McpTransport::Stdio {
                        args: args.clone().unwrap_or_default(),
                        command: command.clone(),
                        cwd: cwd.clone(),
                        env_vars: env_vars.clone().unwrap_or_default(),
                    },
                },
                allowed_tools: m.allowed_tools.clone(),
                connection_origin: m.effective_origin(),
                credential_id: m.credential_id.clone(),
                request_metadata: m.request_metadata.clone().unwrap_or_default(),
                required: m.required,
                require_approval: m.require_approval.as_deref().cloned().unwrap_or_default(),
                call_timeout_ms: m.call_timeout_ms.unwrap_or(DEFAULT_MCP_CALL_TIMEOUT_MS),
            }),
            ToolParam::DynamicWorkflow => Tool::DynamicWorkflow,
            ToolParam::ProgrammaticToolCalling(p) => Tool::ProgrammaticToolCalling(*p),
            ToolParam::ToolSearch => Tool::ToolSearch,
        }
    }

    /// Whether this tool turns Dynamic Workflow on.
    pub fn enables_workflow(&self) -> bool {
        matches!(
            self,
            ToolParam::DynamicWorkflow | ToolParam::ProgrammaticToolCalling(ProgrammaticToolCalling { enabled: true })
        )
    }

    /// The name the tool is known by: a function's name or an MCP server label.
    pub fn name(&self) -> &str {
        match self {
            ToolParam::Function(f) => &f.name,
            ToolParam::Mcp(m) => &m.server_label,
            ToolParam::DynamicWorkflow => "dynamic_workflow",
            ToolParam::ProgrammaticToolCalling(_) => "programmatic_tool_calling",
            ToolParam::ToolSearch => "tool_search",
        }
    }
}

/// The two transports' fields, for the tagged deserializer.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HttpFields {
    server_url: String,
    #[serde(default)]
    authorization: Option<String>,
    #[serde(default)]
    headers: Option<BTreeMap<String, String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StdioFields {
    command: String,
    cwd: String,
    #[serde(default)]
    args: Option<Vec<String>>,
    #[serde(default)]
    env: Option<BTreeMap<String, String>>,
    #[serde(default)]
    env_vars: Option<Vec<String>>,
}

/// Tool types of the client's API this server does not offer, by the feature's name.
pub const REFUSED_TOOLS: &[(&str, &str)] = &[
    ("web_search", "web search"),
    ("web_search_preview", "web search"),
    ("computer_use", "computer use"),
    ("computer", "computer use"),
    ("computer_use_preview", "computer use"),
    ("automations", "automations"),
    ("file_search", "file search"),
    ("image_generation", "image generation"),
    ("code_interpreter", "the code interpreter"),
    ("local_shell", "the local shell tool"),
    ("apply_patch", "the apply-patch tool"),
    ("custom", "custom (free-form) tools"),
];

impl<'de> Deserialize<'de> for ToolParam {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        const KINDS: [&str; 5] = ["function", "mcp", "dynamic_workflow", "programmatic_tool_calling", "tool_search"];
        let (kind, rest) = crate::tagged::split_refusing::<D>(d, &KINDS, REFUSED_TOOLS)?;
        match kind.as_str() {
            "function" => crate::tagged::variant::<FunctionTool, D>(rest).map(ToolParam::Function),
            "dynamic_workflow" => crate::tagged::variant::<NoFields, D>(rest).map(|_| ToolParam::DynamicWorkflow),
            "programmatic_tool_calling" => {
                crate::tagged::variant::<ProgrammaticToolCalling, D>(rest).map(ToolParam::ProgrammaticToolCalling)
            }
            "tool_search" => crate::tagged::variant::<NoFields, D>(rest).map(|_| ToolParam::ToolSearch),
            _ => crate::tagged::variant::<McpToolParam, D>(rest).map(ToolParam::Mcp),
        }
    }
}

impl<'de> Deserialize<'de> for McpTransportParam {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (kind, rest) = crate::tagged::split::<D>(d, &["http", "stdio"])?;
        match kind.as_str() {
            "http" => {
                let f: HttpFields = crate::tagged::variant::<HttpFields, D>(rest)?;
                Ok(McpTransportParam::Http {
                    server_url: f.server_url,
                    authorization: f.authorization,
                    headers: f.headers,
                })
            }
            _ => {
                let f: StdioFields = crate::tagged::variant::<StdioFields, D>(rest)?;
                Ok(McpTransportParam::Stdio {
                    command: f.command,
                    cwd: f.cwd,
                    args: f.args,
                    env: f.env,
                    env_vars: f.env_vars,
                })
            }
        }
    }
}
