//! Approvals for MCP calls (Rebyte extension on `type: "mcp"` tools, shaped
//! like the Responses API's MCP tool): which calls wait for a person's
//! decision, the required action a waiting turn shows, and the decision that
//! answers it.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Value, json};

/// `require_approval`: `"always"`, `"never"` (the default), or a filter naming tools.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum RequireApproval {
    Mode(ApprovalMode),
    Filter(ApprovalFilter),
}

impl Default for RequireApproval {
    fn default() -> Self {
        Self::Mode(ApprovalMode::Never)
    }
}

/// `"always"` or `"never"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalMode {
    Always,
    Never,
}

/// `{"always": {"tool_names": […]}, "never": {"tool_names": […]}}`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalFilter {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub always: Option<ToolNames>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub never: Option<ToolNames>,
}

/// A list of tool names (tools a server does not have yet are accepted).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolNames {
    pub tool_names: Vec<String>,
}

impl<'de> Deserialize<'de> for RequireApproval {
    // By hand, so that a malformed value says what is accepted.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        const EXPECTED: &str = r#"must be "always", "never" or {"always"|"never": {"tool_names": [...]}}"#;
        let value = Value::deserialize(d)?;
        match &value {
            Value::String(_) => {
                serde_json::from_value(value).map(Self::Mode).map_err(|_| serde::de::Error::custom(EXPECTED))
            }
            Value::Object(_) => serde_json::from_value(value).map(Self::Filter).map_err(serde::de::Error::custom),
            _ => Err(serde::de::Error::custom(EXPECTED)),
        }
    }
}

impl RequireApproval {
    /// Whether a call of `tool` waits for approval. In a filter, a tool in
    /// `always` does and one in `never` does not; any other does only when
    /// the filter names no `always` list (so `{"never": …}` alone approves
    /// the tools it names and asks for the rest).
    pub fn needs(&self, tool: &str) -> bool {
        let listed = |names: &Option<ToolNames>| names.as_ref().is_some_and(|n| n.tool_names.iter().any(|t| t == tool));
        match self {
            Self::Mode(ApprovalMode::Never) => false,
            Self::Mode(ApprovalMode::Always) => true,
            Self::Filter(f) if listed(&f.always) => true,
            Self::Filter(f) if listed(&f.never) => false,
            Self::Filter(f) => f.always.is_none() && f.never.is_some(),
        }
    }
}

/// A person's answer to an approval request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    Approve,
    Deny,
    /// Dismisses the request: the call does not run; the turn goes on.
    Cancel,
}

/// `agent.session.input.mcp_approval_request_result`'s `response`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalResponse {
    #[serde(rename = "type")]
    pub kind: ApprovalKind,
    pub decision: Decision,
}

/// What an approval is for: an MCP tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalKind {
    McpToolCall,
}

/// The required action of a call waiting for approval (the client's
/// `mcp_approval_request`); `call_id` (Rebyte extension) is the model's call.
pub fn required_action(
    request_id: &str,
    turn_id: &str,
    call_id: &str,
    server: &str,
    tool: &str,
    arguments: &Value,
) -> Value {
    json!({
        "type": "mcp_approval_request",
        "request_id": request_id,
        "turn_id": turn_id,
        "call_id": call_id,
        "request": {
            "type": "mcp_tool_call",
            "server_label": server,
            "name": tool,
            "arguments": arguments,
            "message": format!("The model wants to call the tool '{tool}' of the MCP server '{server}'."),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: Value) -> Result<RequireApproval, serde_json::Error> {
        serde_json::from_value(v)
    }

    #[test]
    fn modes_and_filters_decide_which_calls_wait() {
        assert!(parse(json!("always")).unwrap().needs("x"));
        assert!(!parse(json!("never")).unwrap().needs("x"));
        assert!(!RequireApproval::default().needs("x"));
        let both = parse(json!({"always": {"tool_names": ["rm"]}, "never": {"tool_names": ["ls"]}})).unwrap();
        assert!(both.needs("rm") && !both.needs("ls") && !both.needs("cat"));
        let never = parse(json!({"never": {"tool_names": ["ls"]}})).unwrap();
        assert!(!never.needs("ls") && never.needs("rm"));
    }

    #[test]
    fn malformed_values_are_refused() {
        for bad in [json!("sometimes"), json!(3), json!({"always": ["rm"]}), json!({"maybe": {"tool_names": []}})] {
            assert!(parse(bad.clone()).is_err(), "{bad}");
        }
    }
}
