//! The wire items the Responses and Conversations APIs accept, checked and
//! turned into what a session takes: user messages, client function results,
//! messages to append to a conversation, and function tools.

use crate::{Error, Result};
use engine::turn::ToolResult;
use protocol::item::{Content, InputContent, Role};
use protocol::tool::{FunctionTool, ToolParam};
use serde_json::{Value, json};

/// What a response's `input` asks for: new user messages, or answers for
/// what a response waits for (client function results, approval decisions).
#[derive(Debug)]
pub enum ResponseInput {
    Messages(Vec<Vec<Content>>),
    Results(Vec<Reply>),
}

/// One answer to a waiting response.
#[derive(Debug)]
pub enum Reply {
    /// A `function_call_output`.
    Result(ToolResult),
    /// An `mcp_approval_response`.
    Approval { request_id: String, approve: bool },
}

/// At most this many items are added to a conversation at a time.
pub const MAX_APPENDED_ITEMS: usize = 20;

/// Parses a response's `input`: a non-empty string, or a list of `message`
/// items or of `function_call_output` items (not both).
pub fn response_input(input: Option<Value>) -> Result<ResponseInput> {
    let items = match input {
        None | Some(Value::Null) => return Err(Error::invalid("input", "input is required")),
        Some(Value::String(text)) if !text.is_empty() => {
            return Ok(ResponseInput::Messages(vec![vec![Content::InputText { text }]]));
        }
        Some(Value::Array(items)) if !items.is_empty() => items,
        Some(_) => return Err(Error::invalid("input", "input must be a non-empty string or list of items")),
    };
    let mut messages = Vec::new();
    let mut results = Vec::new();
    for (i, item) in items.into_iter().enumerate() {
        match item.get("type").and_then(Value::as_str).unwrap_or("message") {
            "function_call_output" => {
                let call_id = item.get("call_id").and_then(Value::as_str).ok_or_else(|| {
                    Error::invalid(format!("input[{i}].call_id"), "a function_call_output needs call_id")
                })?;
                results.push(Reply::Result(ToolResult {
                    call_id: call_id.to_string(),
                    success: true,
                    output: item.get("output").cloned(),
                    error: None,
                }));
            }
            "mcp_approval_response" => {
                let request_id = item.get("approval_request_id").and_then(Value::as_str).ok_or_else(|| {
                    Error::invalid(
                        format!("input[{i}].approval_request_id"),
                        "an mcp_approval_response needs approval_request_id",
                    )
                })?;
                let approve = item.get("approve").and_then(Value::as_bool).ok_or_else(|| {
                    Error::invalid(
                        format!("input[{i}].approve"),
                        "an mcp_approval_response needs approve: true or false",
                    )
                })?;
                results.push(Reply::Approval { request_id: request_id.to_string(), approve });
            }
            "message" => {
                let role = item.get("role").and_then(Value::as_str).unwrap_or("user");
                if !matches!(role, "user" | "system" | "developer") {
                    return Err(Error::invalid(
                        format!("input[{i}].role"),
                        format!("input messages cannot have role '{role}'"),
                    ));
                }
                messages.push(content(&item, &format!("input[{i}].content"))?);
            }
            other => {
                return Err(Error::unsupported(
                    format!("input[{i}].type"),
                    format!("input items of type '{other}' are not supported"),
                ));
            }
        }
    }
    match (messages.is_empty(), results.is_empty()) {
        (false, true) if messages.iter().any(Vec::is_empty) => {
            Err(Error::invalid("input", "every message needs content"))
        }
        (false, true) => Ok(ResponseInput::Messages(messages)),
        (true, false) => Ok(ResponseInput::Results(results)),
        _ => Err(Error::invalid(
            "input",
            "send either messages or function_call_output / mcp_approval_response items, not both",
        )),
    }
}

/// Parses conversation items to add: messages only (`user`, `system` and
/// `developer` become user input; `assistant` text is kept as the assistant's).
pub fn conversation_items(items: Vec<Value>) -> Result<Vec<(Role, Vec<Content>)>> {
    if items.len() > MAX_APPENDED_ITEMS {
        return Err(Error::invalid("items", format!("at most {MAX_APPENDED_ITEMS} items can be added at a time")));
    }
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            let kind = item.get("type").and_then(Value::as_str).unwrap_or("message");
            if kind != "message" {
                return Err(Error::unsupported(
                    format!("items[{i}].type"),
                    format!("items of type '{kind}' cannot be added"),
                ));
            }
            let role = match item.get("role").and_then(Value::as_str) {
                Some("user" | "system" | "developer") => Role::User,
                Some("assistant") => Role::Assistant,
                other => return Err(Error::invalid(format!("items[{i}].role"), format!("unsupported role {other:?}"))),
            };
            let mut parts = content(&item, &format!("items[{i}].content"))?;
            if role == Role::Assistant {
                parts = parts
                    .into_iter()
                    .map(|p| match p {
                        Content::InputText { text } => Content::OutputText { text },
                        other => other,
                    })
                    .collect();
            }
            if parts.is_empty() {
                return Err(Error::invalid(format!("items[{i}].content"), "content must not be empty"));
            }
            Ok((role, parts))
        })
        .collect()
}

/// A message item's content parts (a string or a list of parts).
fn content(item: &Value, param: &str) -> Result<Vec<Content>> {
    let content: InputContent = serde_json::from_value(item.get("content").cloned().unwrap_or(Value::Null))
        .map_err(|e| Error::invalid(param, e.to_string()))?;
    Ok(content.into_parts())
}

/// Function tools in the Responses shape (`{"type":"function","name",…}`;
/// `strict` is accepted and not enforced). `None` when none were sent.
pub fn function_tools(tools: Option<Vec<Value>>) -> Result<Option<Vec<ToolParam>>> {
    let Some(tools) = tools else { return Ok(None) };
    tools
        .into_iter()
        .enumerate()
        .map(|(i, mut tool)| {
            if let Some(obj) = tool.as_object_mut() {
                obj.remove("strict");
                obj.remove("type");
                obj.entry("description").or_insert(json!(""));
            }
            serde_json::from_value::<FunctionTool>(tool).map(ToolParam::Function).map_err(|e| {
                Error::invalid(format!("tools[{i}]"), format!("only function tools are supported here: {e}"))
            })
        })
        .collect::<Result<Vec<_>>>()
        .map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_is_messages_or_results_never_both() {
        assert!(matches!(response_input(Some(json!("hi"))).unwrap(), ResponseInput::Messages(m) if m.len() == 1));
        let results = json!([{"type": "function_call_output", "call_id": "c1", "output": "4"}]);
        assert!(
            matches!(response_input(Some(results)).unwrap(), ResponseInput::Results(r) if matches!(&r[0], Reply::Result(t) if t.call_id == "c1"))
        );
        let approval = json!([{"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": false}]);
        assert!(matches!(response_input(Some(approval)).unwrap(), ResponseInput::Results(r)
            if matches!(&r[0], Reply::Approval { request_id, approve: false } if request_id == "mcpr_1")));
        let no_decision = json!([{"type": "mcp_approval_response", "approval_request_id": "mcpr_1"}]);
        assert!(response_input(Some(no_decision)).is_err());
        let both = json!([{"role": "user", "content": "a"}, {"type": "function_call_output", "call_id": "c"}]);
        assert!(matches!(response_input(Some(both)), Err(Error::Invalid { param: Some(p), .. }) if p == "input"));
        let assistant = json!([{"role": "assistant", "content": "a"}]);
        assert!(
            matches!(response_input(Some(assistant)), Err(Error::Invalid { param: Some(p), .. }) if p == "input[0].role")
        );
        assert!(response_input(Some(json!(""))).is_err());
        assert!(response_input(None).is_err());
    }

    #[test]
    fn conversation_items_keep_assistant_text_as_output() {
        let items = conversation_items(vec![json!({"role": "assistant", "content": "done"})]).unwrap();
        assert_eq!(items, vec![(Role::Assistant, vec![Content::OutputText { text: "done".into() }])]);
        let too_many = vec![json!({"role": "user", "content": "x"}); MAX_APPENDED_ITEMS + 1];
        assert!(matches!(conversation_items(too_many), Err(Error::Invalid { param: Some(p), .. }) if p == "items"));
        let kind = conversation_items(vec![json!({"type": "function_call", "role": "user"})]);
        assert!(matches!(kind, Err(Error::Invalid { param: Some(p), .. }) if p == "items[0].type"));
    }

    #[test]
    fn function_tools_accept_the_responses_shape() {
        let tools =
            function_tools(Some(vec![json!({"type": "function", "name": "add", "parameters": {}, "strict": true})]));
        assert!(matches!(tools.unwrap().unwrap().as_slice(), [ToolParam::Function(f)] if f.name == "add"));
        let bad = function_tools(Some(vec![json!({"type": "web_search"})]));
        assert!(matches!(bad, Err(Error::Invalid { param: Some(p), .. }) if p == "tools[0]"));
    }
}
