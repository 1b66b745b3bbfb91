//! Input checks shared by every endpoint. Each failure names the request field
//! (`param`) at fault so that the caller can fix it.

use crate::Metadata;
use crate::agent::AgentConfig;
use crate::tool::{ConnectionOrigin, MAX_MCP_CALL_TIMEOUT_MS, McpTransportParam, ToolParam};
use std::collections::HashSet;

pub mod settings;

/// At most this many metadata pairs.
pub const METADATA_MAX_PAIRS: usize = 16;
/// Metadata keys are at most this many characters.
pub const METADATA_MAX_KEY: usize = 64;
/// Metadata values are at most this many characters.
pub const METADATA_MAX_VALUE: usize = 512;
/// The tool list must fit in this many bytes of compact JSON.
pub const TOOLS_MAX_BYTES: usize = 3 * 1024 * 1024;
/// Names the runtime gives its own tools; client functions may not take them.
pub const RESERVED_TOOL_NAMES: [&str; 10] = [
    "dynamic_workflow",
    "tool_search",
    "search_tools",
    "call_tool",
    "list_mcp_resources",
    "list_mcp_resource_templates",
    "read_mcp_resource",
    "shell",
    "read_file",
    "write_file",
];

/// A rejected input: which field, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    pub param: String,
    pub message: String,
}

pub type Result<T = ()> = std::result::Result<T, Invalid>;

pub fn invalid(param: impl Into<String>, message: impl Into<String>) -> Invalid {
    Invalid { param: param.into(), message: message.into() }
}

/// Checks the metadata limits: 16 pairs, keys of 1–64 and values of ≤ 512 characters.
pub fn metadata(param: &str, m: &Metadata) -> Result {
    if m.len() > METADATA_MAX_PAIRS {
        return Err(invalid(
            param,
            format!("at most {METADATA_MAX_PAIRS} metadata pairs are allowed, got {}", m.len()),
        ));
    }
    for (k, v) in m {
        let klen = k.chars().count();
        if klen == 0 || klen > METADATA_MAX_KEY {
            return Err(invalid(
                format!("{param}.{k}"),
                format!("metadata keys must be 1 to {METADATA_MAX_KEY} characters, got {klen}"),
            ));
        }
        let vlen = v.chars().count();
        if vlen > METADATA_MAX_VALUE {
            return Err(invalid(
                format!("{param}.{k}"),
                format!("metadata values must be at most {METADATA_MAX_VALUE} characters, got {vlen}"),
            ));
        }
    }
    Ok(())
}

/// Checks a string's length in characters.
pub fn text(param: &str, value: &str, min: usize, max: usize) -> Result {
    let n = value.chars().count();
    if n < min || n > max {
        return Err(invalid(param, format!("must be {min} to {max} characters, got {n}")));
    }
    Ok(())
}

fn identifier(param: &str, value: &str) -> Result {
    let ok = !value.is_empty()
        && value.len() <= 64
        && value.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(invalid(param, format!("'{value}' must be 1 to 64 characters of letters, digits, '_' or '-'")))
    }
}

/// Where a configuration is being saved: saved agents keep no inline secrets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    SavedAgent,
    Session,
}

/// Checks a whole agent configuration; `prefix` is the path of the config in the request.
pub fn agent_config(prefix: &str, c: &AgentConfig, owner: Owner) -> Result {
    let p = |field: &str| {
        if prefix.is_empty() { field.to_string() } else { format!("{prefix}.{field}") }
    };
    // A conversation created without an agent has no model until a response names one.
    let min_model = if owner == Owner::Session { 0 } else { 1 };
    text(&p("model"), &c.model, min_model, 256)?;
    if let Some(instructions) = &c.instructions {
        text(&p("instructions"), instructions, 0, 256 * 1024)?;
    }
    if let Some(steps) = c.max_steps
        && !(1..=crate::agent::MAX_MAX_STEPS).contains(&steps)
    {
        return Err(invalid(
            p("max_steps"),
            format!("max_steps must be 1 to {}, got {steps}", crate::agent::MAX_MAX_STEPS),
        ));
    }
    if c.multi_agent.enabled {
        return Err(invalid(p("multi_agent.enabled"), "native multi-agent orchestration is not supported"));
    }
    settings::agent_format(&p("text.format"), &c.text.format)?;
    tools(&p("tools"), &c.tools, owner)
}

/// Checks a tool list: names, uniqueness, transports, size and secrets.
pub fn tools(param: &str, tools: &[ToolParam], owner: Owner) -> Result {
    let size = serde_json::to_vec(tools).map(|v| v.len()).unwrap_or(usize::MAX);
    if size > TOOLS_MAX_BYTES {
        return Err(invalid(param, format!("the tool list must fit in {TOOLS_MAX_BYTES} bytes of JSON, got {size}")));
    }
    let mut functions = HashSet::new();
    let mut labels = HashSet::new();
    let has_mcp = tools.iter().any(|t| matches!(t, ToolParam::Mcp(_)));
    let has_search = tools.iter().any(|t| matches!(t, ToolParam::ToolSearch));
    for (i, tool) in tools.iter().enumerate() {
        let at = |field: &str| format!("{param}[{i}].{field}");
        match tool {
            ToolParam::DynamicWorkflow | ToolParam::ProgrammaticToolCalling(_) => {
                if tool.enables_workflow() && !has_mcp {
                    return Err(invalid(
                        at("type"),
                        format!("'{}' calls MCP tools from a program: add at least one mcp tool", tool.name()),
                    ));
                }
            }
            ToolParam::ToolSearch => {}
            ToolParam::Function(f) => {
                identifier(&at("name"), &f.name)?;
                if RESERVED_TOOL_NAMES.contains(&f.name.as_str()) {
                    return Err(invalid(at("name"), format!("'{}' is reserved for a built-in tool", f.name)));
                }
                if !functions.insert(f.name.as_str()) {
                    return Err(invalid(at("name"), format!("duplicate function name '{}'", f.name)));
                }
                text(&at("description"), &f.description, 0, 16 * 1024)?;
                if f.defer_loading && !has_search {
                    return Err(invalid(
                        at("defer_loading"),
                        "a deferred function is found only through tool search: add {\"type\":\"tool_search\"}",
                    ));
                }
            }
            ToolParam::Mcp(m) => {
                identifier(&at("server_label"), &m.server_label)?;
                if !labels.insert(m.server_label.as_str()) {
                    return Err(invalid(at("server_label"), format!("duplicate server_label '{}'", m.server_label)));
                }
                if let Some(ms) = m.call_timeout_ms
                    && !(1..=MAX_MCP_CALL_TIMEOUT_MS).contains(&ms)
                {
                    return Err(invalid(
                        at("call_timeout_ms"),
                        format!("call_timeout_ms must be 1 to {MAX_MCP_CALL_TIMEOUT_MS} milliseconds, got {ms}"),
                    ));
                }
                match &m.transport {
                    McpTransportParam::Http { server_url, authorization, headers } => {
                        let lower = server_url.to_ascii_lowercase();
                        if !(lower.starts_with("http://") || lower.starts_with("https://")) || server_url.len() > 2048 {
                            return Err(invalid(at("transport.server_url"), "must be an http:// or https:// URL"));
                        }
                        if owner == Owner::SavedAgent && authorization.is_some() {
                            return Err(invalid(
                                at("transport.authorization"),
                                "saved agents keep no inline HTTP secrets; supply authorization on the session or use a vault",
                            ));
                        }
                        if owner == Owner::SavedAgent && headers.as_ref().is_some_and(|h| !h.is_empty()) {
                            return Err(invalid(
                                at("transport.headers"),
                                "saved agents keep no inline HTTP headers; supply headers on the session or use a vault",
                            ));
                        }
                    }
                    McpTransportParam::Stdio { command, cwd, .. } => {
                        text(&at("transport.command"), command, 1, 4096)?;
                        if !cwd.starts_with('/') {
                            return Err(invalid(at("transport.cwd"), "must be an absolute path"));
                        }
                        if m.connection_origin == Some(ConnectionOrigin::Service) {
                            return Err(invalid(
                                at("connection_origin"),
                                "stdio servers run in the environment; omit connection_origin",
                            ));
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_limits_name_the_offending_key() {
        let mut m = Metadata::new();
        m.insert("k".repeat(65), "v".into());
        let err = metadata("metadata", &m).unwrap_err();
        assert_eq!(err.param, format!("metadata.{}", "k".repeat(65)));

        let mut m = Metadata::new();
        m.insert("ключ".into(), "値".repeat(512));
        assert!(metadata("metadata", &m).is_ok(), "unicode counts characters, not bytes");
        m.insert("ключ".into(), "値".repeat(513));
        assert!(metadata("metadata", &m).is_err());

        let m: Metadata = (0..17).map(|i| (format!("k{i}"), String::new())).collect();
        assert_eq!(metadata("metadata", &m).unwrap_err().param, "metadata");
    }

    #[test]
    fn saved_agents_reject_inline_http_secrets() {
        let tools: Vec<ToolParam> = serde_json::from_value(serde_json::json!([{
            "type": "mcp", "server_label": "company",
            "transport": {"type": "http", "server_url": "https://x", "authorization": "Bearer s"}
        }]))
        .unwrap();
        let err = super::tools("tools", &tools, Owner::SavedAgent).unwrap_err();
        assert_eq!(err.param, "tools[0].transport.authorization");
        assert!(super::tools("tools", &tools, Owner::Session).is_ok());
    }

    #[test]
    fn call_timeout_ms_is_1_ms_to_an_hour() {
        let with = |ms: u64| -> Vec<ToolParam> {
            serde_json::from_value(serde_json::json!([{
                "type": "mcp", "server_label": "s", "call_timeout_ms": ms,
                "transport": {"type": "http", "server_url": "https://x"}
            }]))
            .unwrap()
        };
        for ms in [1, 300, MAX_MCP_CALL_TIMEOUT_MS] {
            assert!(super::tools("tools", &with(ms), Owner::Session).is_ok(), "{ms}");
        }
        for ms in [0, MAX_MCP_CALL_TIMEOUT_MS + 1] {
            let err = super::tools("tools", &with(ms), Owner::Session).unwrap_err();
            assert_eq!(err.param, "tools[0].call_timeout_ms", "{ms}");
        }
    }
}
