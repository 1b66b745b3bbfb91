//! The crate's error type: every failure names the server label and the MCP step it happened in,
//! and its `Display` is written to be handed back to the model as a tool result.

use std::time::Duration;

/// The MCP step an operation was in when it failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Step {
    /// Launching the server process or opening the connection.
    Connect,
    Initialize,
    ToolsList,
    ToolsCall,
    ResourcesList,
    ResourceTemplatesList,
    ResourcesRead,
    /// Closing the connection (HTTP: `DELETE` of the MCP session).
    Terminate,
}

impl Step {
    /// The MCP method name, or a short word for steps that are not methods.
    pub fn as_str(self) -> &'static str {
        match self {
            Step::Connect => "connect",
            Step::Initialize => "initialize",
            Step::ToolsList => "tools/list",
            Step::ToolsCall => "tools/call",
            Step::ResourcesList => "resources/list",
            Step::ResourceTemplatesList => "resources/templates/list",
            Step::ResourcesRead => "resources/read",
            Step::Terminate => "terminate",
        }
    }
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Everything that can go wrong in this crate.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    #[error("MCP server '{server}' did not answer {step} within {} ms", after.as_millis())]
    Timeout { server: String, step: Step, after: Duration },

    #[error("MCP server '{server}' closed the connection during {step} (the server exited or crashed)")]
    Closed { server: String, step: Step },

    #[error("MCP server '{server}' could not be reached during {step}: {message}")]
    Transport { server: String, step: Step, message: String },

    #[error("MCP server '{server}' sent an answer to {step} that does not conform to MCP: {message}")]
    Protocol { server: String, step: Step, message: String },

    #[error("MCP server '{server}' answered {step} with error {code}: {message}")]
    Server { server: String, step: Step, code: i32, message: String },

    #[error("{step} on MCP server '{server}' was cancelled")]
    Cancelled { server: String, step: Step },

    #[error("MCP server '{server}' could not be started: {message}")]
    Spawn { server: String, message: String },

    #[error(
        "MCP server '{server}' in sandbox '{sandbox}' is no longer running; it is not restarted \
         (its state would be lost): {reason}"
    )]
    BrokerDead { server: String, sandbox: String, reason: String },

    #[error("unknown MCP server '{server}'; configured servers: {}", list(known))]
    UnknownServer { server: String, known: Vec<String> },

    #[error("tool '{tool}' is not offered by MCP server '{server}' (it may have been removed); search again")]
    UnknownTool { server: String, tool: String },

    #[error("tool '{tool}' on MCP server '{server}' is not allowed by this agent's allowed_tools")]
    ToolNotAllowed { server: String, tool: String },

    #[error("arguments for tool '{tool}' on MCP server '{server}' do not match its inputSchema: {}", errors.join("; "))]
    InvalidArguments { server: String, tool: String, errors: Vec<String> },

    #[error("tool '{tool}' on MCP server '{server}' has an inputSchema that cannot be used: {message}")]
    InvalidSchema { server: String, tool: String, message: String },

    #[error("invalid search_tools request: {0}")]
    InvalidSearch(String),

    #[error("search_tools pattern search exceeded its {} ms deadline", .0.as_millis())]
    SearchDeadline(Duration),

    #[error("invalid request: {0}")]
    InvalidRequest(String),

    #[error("invalid MCP server configuration for '{server}': {message}")]
    Config { server: String, message: String },
}

fn list(known: &[String]) -> String {
    if known.is_empty() { "none".to_owned() } else { known.join(", ") }
}

impl McpError {
    /// The server label the error is about, when there is one.
    pub fn server(&self) -> Option<&str> {
        match self {
            McpError::Timeout { server, .. }
            | McpError::Closed { server, .. }
            | McpError::Transport { server, .. }
            | McpError::Protocol { server, .. }
            | McpError::Server { server, .. }
            | McpError::Cancelled { server, .. }
            | McpError::Spawn { server, .. }
            | McpError::BrokerDead { server, .. }
            | McpError::UnknownServer { server, .. }
            | McpError::UnknownTool { server, .. }
            | McpError::ToolNotAllowed { server, .. }
            | McpError::InvalidArguments { server, .. }
            | McpError::InvalidSchema { server, .. }
            | McpError::Config { server, .. } => Some(server),
            McpError::InvalidSearch(_) | McpError::SearchDeadline(_) | McpError::InvalidRequest(_) => None,
        }
    }

    /// The MCP step the error happened in, when it came from talking to a server.
    pub fn step(&self) -> Option<Step> {
        match self {
            McpError::Timeout { step, .. }
            | McpError::Closed { step, .. }
            | McpError::Transport { step, .. }
            | McpError::Protocol { step, .. }
            | McpError::Server { step, .. }
            | McpError::Cancelled { step, .. } => Some(*step),
            McpError::Spawn { .. } => Some(Step::Connect),
            _ => None,
        }
    }

    /// Whether the error means the connection itself is gone (as opposed to one request failing).
    pub fn is_connection_lost(&self) -> bool {
        matches!(self, McpError::Closed { .. } | McpError::BrokerDead { .. })
    }
}

/// The crate's result type.
pub type Result<T, E = McpError> = std::result::Result<T, E>;
