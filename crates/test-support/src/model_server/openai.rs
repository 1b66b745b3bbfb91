//! Renders a scripted reply in the OpenAI Chat Completions wire format: SSE
//! chunks (`chat.completion.chunk`, `tool_calls` deltas by index, a usage
//! chunk, `[DONE]`) or one `chat.completion` JSON object.

use super::playback::Frames;
use super::script::{Reply, ScriptedUsage, split};
use serde_json::{Value, json};

/// What the request asked for that shapes the answer.
pub(crate) struct Ctx<'a> {
    pub(crate) model: &'a str,
    pub(crate) request_no: usize,
    pub(crate) include_usage: bool,
}

pub(crate) fn stream(reply: &Reply, ctx: &Ctx<'_>) -> Frames {
    let id = format!("chatcmpl-scripted-{}", ctx.request_no);
    let chunk = |delta: Value, finish: Value| {
        let body = json!({
            "id": id, "object": "chat.completion.chunk", "created": 0, "model": ctx.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        });
        frame(&body)
    };
    let mut content = vec![chunk(json!({"role": "assistant", "content": ""}), Value::Null)];
    for piece in split(&reply.reasoning, reply.chunks) {
        content.push(chunk(json!({"reasoning_content": piece}), Value::Null));
    }
    for piece in split(&reply.text, reply.chunks) {
        content.push(chunk(json!({"content": piece}), Value::Null));
    }
    for (index, call) in reply.tool_calls.iter().enumerate() {
        let call_id = call.id.clone().unwrap_or_else(|| format!("call_{}_{index}", ctx.request_no));
        let first = json!({"tool_calls": [{
            "index": index, "id": call_id, "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }]});
        content.push(chunk(first, Value::Null));
        for piece in split(&call.arguments, reply.chunks) {
            content
                .push(chunk(json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}), Value::Null));
        }
    }
    content.push(chunk(json!({}), json!(finish_reason(reply))));
    if ctx.include_usage {
        let body = json!({
            "id": id, "object": "chat.completion.chunk", "created": 0, "model": ctx.model,
            "choices": [], "usage": usage(reply.usage.unwrap_or_default()),
        });
        content.push(frame(&body));
    }
    Frames { content, end: vec!["data: [DONE]\n\n".to_owned()] }
}

pub(crate) fn complete(reply: &Reply, ctx: &Ctx<'_>) -> Value {
    let tool_calls: Vec<Value> = reply
        .tool_calls
        .iter()
        .enumerate()
        .map(|(index, call)| {
            json!({
                "id": call.id.clone().unwrap_or_else(|| format!("call_{}_{index}", ctx.request_no)),
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            })
        })
        .collect();
    let mut message = json!({
        "role": "assistant",
        "content": if reply.text.is_empty() && !tool_calls.is_empty() { Value::Null } else { json!(reply.text) },
    });
    if !tool_calls.is_empty() {
        message["tool_calls"] = Value::Array(tool_calls);
    }
    if !reply.reasoning.is_empty() {
        message["reasoning_content"] = json!(reply.reasoning);
    }
    json!({
        "id": format!("chatcmpl-scripted-{}", ctx.request_no),
        "object": "chat.completion",
        "created": 0,
        "model": ctx.model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(reply)}],
        "usage": usage(reply.usage.unwrap_or_default()),
    })
}

/// The error body this wire format uses.
pub(crate) fn error_body(kind: &str, message: &str) -> Value {
    json!({"error": {"message": message, "type": kind, "code": kind}})
}

fn finish_reason(reply: &Reply) -> String {
    match &reply.finish_reason {
        Some(reason) => reason.clone(),
        None if reply.tool_calls.is_empty() => "stop".to_owned(),
        None => "tool_calls".to_owned(),
    }
}

fn usage(usage: ScriptedUsage) -> Value {
    json!({
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cached_tokens},
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
    })
}

fn frame(body: &Value) -> String {
    format!("data: {body}\n\n")
}
