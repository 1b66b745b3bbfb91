//! The arguments of the model-facing helpers (`call_tool`, `list_mcp_resources`,
//! `list_mcp_resource_templates`, `read_mcp_resource`; `search_tools` takes
//! [`crate::SearchArgs`]) and the tool definitions the engine offers the model for all five.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// `call_tool` as the model sends it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallToolArgs {
    pub server: String,
    pub name: String,
    /// An object; a JSON string holding an object is accepted too. Absent means `{}`.
    #[serde(default)]
    pub arguments: Value,
}

impl CallToolArgs {
    pub fn new(server: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        CallToolArgs { server: server.into(), name: name.into(), arguments }
    }
}

/// `list_mcp_resources` and `list_mcp_resource_templates`: one server's page, or every server's
/// first page.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListResourcesArgs {
    #[serde(default)]
    pub server: Option<String>,
    /// A `nextCursor` from an earlier answer; needs `server`.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// `read_mcp_resource`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadResourceArgs {
    pub server: String,
    pub uri: String,
}

/// A tool the engine offers the model when MCP servers are configured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HelperTool {
    pub name: &'static str,
    pub description: &'static str,
    /// JSON Schema of the arguments.
    pub parameters: Value,
}

/// The five MCP helpers, ready to be put in the model's tool list.
pub fn helper_tools() -> Vec<HelperTool> {
    vec![
        HelperTool {
            name: "search_tools",
            description: "Search the tools of the configured MCP servers. Give exactly one of `query` (words, \
                          BM25 over tool names, descriptions and parameter names) or `pattern` (a \
                          case-insensitive regular expression). Results carry the server label, tool name, \
                          description and inputSchema to use with call_tool.",
            parameters: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "maxLength": 500},
                    "pattern": {"type": "string", "maxLength": 200},
                    "server": {"type": "string", "description": "Search only this server label."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5}
                },
                "additionalProperties": false
            }),
        },
        HelperTool {
            name: "call_tool",
            description: "Call a tool of a configured MCP server with arguments matching its inputSchema.",
            parameters: json!({
                "type": "object",
                "properties": {
                    "server": {"type": "string"},
                    "name": {"type": "string"},
                    "arguments": {"type": "object"}
                },
                "required": ["server", "name"],
                "additionalProperties": false
            }),
        },
        HelperTool {
            name: "list_mcp_resources",
            description: "List the resources of one configured MCP server, or of all of them.",
            parameters: list_parameters(),
        },
        HelperTool {
            name: "list_mcp_resource_templates",
            description: "List the resource templates of one configured MCP server, or of all of them.",
            parameters: list_parameters(),
        },
        HelperTool {
            name: "read_mcp_resource",
            description: "Read one resource of a configured MCP server by URI.",
            parameters: json!({
                "type": "object",
                "properties": {"server": {"type": "string"}, "uri": {"type": "string"}},
                "required": ["server", "uri"],
                "additionalProperties": false
            }),
        },
    ]
}

fn list_parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "server": {"type": "string"},
            "cursor": {"type": "string", "description": "nextCursor of an earlier answer; needs server."}
        },
        "additionalProperties": false
    })
}
