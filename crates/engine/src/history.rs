//! Rebuilding the model's view of a session from its stored items.

use models::{Message, ToolCall};
use protocol::item::{Content, Item, Role};
use serde_json::Value;

/// The text a tool result carries back to the model.
pub fn output_text(output: &Option<Value>, error: &Option<String>) -> String {
    if let Some(error) = error {
        return format!("error: {error}");
    }
    match output {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str).map(str::to_string))
            .collect::<Vec<_>>()
            .join("\n"),
        Some(other) => other.to_string(),
    }
}

/// Arguments as the model sent them, as a string.
pub fn arguments_text(arguments: &Value) -> String {
    match arguments {
        Value::String(raw) => raw.clone(),
        other => other.to_string(),
    }
}

fn text_of(content: &[Content]) -> String {
    content.iter().filter_map(Content::text).collect::<Vec<_>>().join("\n")
}

/// The messages a model sees for these items, oldest first. Calls that never
/// got an answer (a turn that failed while waiting) are answered with a note,
/// because providers reject a tool call without its result.
pub fn messages(items: &[Item]) -> Vec<Message> {
    let mut out = Vec::with_capacity(items.len());
    let mut unanswered: Vec<String> = Vec::new();
    let flush = |out: &mut Vec<Message>, unanswered: &mut Vec<String>| {
        for call_id in unanswered.drain(..) {
            out.push(Message::tool_result(call_id, "error: no result was recorded for this call"));
        }
    };
    for item in items {
        match item {
            Item::Message { role: Role::User, content, .. } => {
                flush(&mut out, &mut unanswered);
                out.push(Message::user(text_of(content)));
            }
            Item::Message { role: Role::Assistant, content, .. } => {
                flush(&mut out, &mut unanswered);
                out.push(Message::assistant(text_of(content)));
            }
            Item::FunctionCall { call_id, name, arguments, .. } => {
                out.push(Message::ToolCall(ToolCall::new(call_id, name, arguments_text(arguments))));
                unanswered.push(call_id.clone());
            }
            Item::FunctionCallOutput { call_id, output, error, .. } => {
                unanswered.retain(|c| c != call_id);
                out.push(Message::tool_result(call_id, output_text(output, error)));
            }
            Item::McpCall { call_id, server_label, name, arguments, output, error, .. } => {
                let args = serde_json::json!({"server": server_label, "name": name, "arguments": arguments});
                out.push(Message::ToolCall(ToolCall::new(call_id, "call_tool", args.to_string())));
                let text = match error {
                    Value::Null => output_text(&Some(output.clone()), &None),
                    e => format!("error: {}", output_text(&Some(e.clone()), &None)),
                };
                out.push(Message::tool_result(call_id, text));
            }
            Item::Reasoning { summary, encrypted_content, source, .. } => {
                let text = summary.iter().map(|s| s.text.as_str()).collect::<Vec<_>>().join("\n\n");
                out.push(Message::Reasoning(models::Reasoning {
                    text,
                    signature: encrypted_content.clone(),
                    redacted: source.as_ref().is_some_and(|s| s.redacted),
                    id: source.as_ref().and_then(|s| s.upstream_id.clone()),
                    origin: source.as_ref().map(|s| s.format.clone()),
                }));
            }
            Item::Program { call_id, code, .. } => {
                let args = serde_json::json!({"code": code});
                out.push(Message::ToolCall(ToolCall::new(call_id, "dynamic_workflow", args.to_string())));
                unanswered.push(call_id.clone());
            }
            Item::ProgramOutput { call_id, result, .. } => {
                unanswered.retain(|c| c != call_id);
                out.push(Message::tool_result(call_id, result.clone()));
            }
            Item::CommandExecution { call_id, command, cwd, output, exit_code, .. } => {
                let args = serde_json::json!({"command": command, "cwd": cwd});
                out.push(Message::ToolCall(ToolCall::new(call_id, "shell", args.to_string())));
                let code = exit_code.map_or_else(|| "none".to_string(), |c| c.to_string());
                out.push(Message::tool_result(
                    call_id,
                    format!("exit code: {code}\n{}", output.clone().unwrap_or_default()),
                ));
            }
        }
    }
    // Calls still unanswered at the end belong to the turn now waiting, and
    // are answered before its next model step.
    out
}
