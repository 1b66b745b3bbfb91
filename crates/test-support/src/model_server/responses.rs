//! Renders a scripted reply in the OpenAI Responses wire format: SSE events
//! (`response.created`, output items framed by `response.output_item.added`
//! / `.done`, text, argument and reasoning-summary deltas,
//! `response.completed`) or one `response` object.

use super::openai::Ctx;
use super::playback::Frames;
use super::script::{Reply, ScriptedUsage, split};
use serde_json::{Value, json};

pub(crate) fn stream(reply: &Reply, ctx: &Ctx<'_>) -> Frames {
    let mut content = vec![event(json!({"type": "response.created", "response": shell(ctx, "in_progress")}))];
    let mut output = 0;
    if !reply.reasoning.is_empty() {
        let id = reasoning_id(ctx);
        content.push(event(json!({"type": "response.output_item.added", "output_index": output,
            "item": {"type": "reasoning", "id": id, "summary": []}})));
        content.push(event(json!({"type": "response.reasoning_summary_part.added", "item_id": id,
            "output_index": output, "summary_index": 0, "part": {"type": "summary_text", "text": ""}})));
        for piece in split(&reply.reasoning, reply.chunks) {
            content.push(event(json!({"type": "response.reasoning_summary_text.delta", "item_id": id,
                "output_index": output, "summary_index": 0, "delta": piece})));
        }
        content.push(event(json!({"type": "response.output_item.done", "output_index": output,
            "item": reasoning_item(reply, ctx)})));
        output += 1;
    }
    if !reply.text.is_empty() {
        let id = format!("msg_scripted_{}", ctx.request_no);
        content.push(event(json!({"type": "response.output_item.added", "output_index": output,
            "item": {"type": "message", "id": id, "role": "assistant", "status": "in_progress", "content": []}})));
        for piece in split(&reply.text, reply.chunks) {
            content.push(event(json!({"type": "response.output_text.delta", "item_id": id,
                "output_index": output, "content_index": 0, "delta": piece})));
        }
        content.push(event(json!({"type": "response.output_item.done", "output_index": output,
            "item": message_item(reply, ctx)})));
        output += 1;
    }
    for (n, call) in reply.tool_calls.iter().enumerate() {
        let item = call_item(reply, ctx, n);
        let mut added = item.clone();
        added["arguments"] = json!("");
        content.push(event(json!({"type": "response.output_item.added", "output_index": output, "item": added})));
        for piece in split(&call.arguments, reply.chunks) {
            content.push(event(json!({"type": "response.function_call_arguments.delta",
                "item_id": item["id"], "output_index": output, "delta": piece})));
        }
        content.push(event(json!({"type": "response.output_item.done", "output_index": output, "item": item})));
        output += 1;
    }
    let done = complete(reply, ctx);
    let kind = if done["status"] == "incomplete" { "response.incomplete" } else { "response.completed" };
    Frames { content, end: vec![event(json!({"type": kind, "response": done}))] }
}

pub(crate) fn complete(reply: &Reply, ctx: &Ctx<'_>) -> Value {
    let mut output = Vec::new();
    if !reply.reasoning.is_empty() {
        output.push(reasoning_item(reply, ctx));
    }
    if !reply.text.is_empty() {
        output.push(message_item(reply, ctx));
    }
    output.extend((0..reply.tool_calls.len()).map(|n| call_item(reply, ctx, n)));
    // A scripted `finish_reason` names why the response is incomplete.
    let (status, details) = match &reply.finish_reason {
        Some(reason) if !matches!(reason.as_str(), "stop" | "tool_calls") => ("incomplete", json!({"reason": reason})),
        _ => ("completed", Value::Null),
    };
    let mut response = shell(ctx, status);
    response["output"] = Value::Array(output);
    response["incomplete_details"] = details;
    response["usage"] = usage(reply.usage.unwrap_or_default());
    response
}

pub(crate) fn error_body(kind: &str, message: &str) -> Value {
    json!({"error": {"message": message, "type": kind, "code": kind}})
}

fn shell(ctx: &Ctx<'_>, status: &str) -> Value {
    json!({"id": format!("resp_scripted_{}", ctx.request_no), "object": "response", "created_at": 0,
           "model": ctx.model, "status": status, "output": []})
}

fn reasoning_id(ctx: &Ctx<'_>) -> String {
    format!("rs_scripted_{}", ctx.request_no)
}

/// The reasoning item, with `encrypted_content` `enc_scripted_<request>`.
fn reasoning_item(reply: &Reply, ctx: &Ctx<'_>) -> Value {
    json!({"type": "reasoning", "id": reasoning_id(ctx),
           "summary": [{"type": "summary_text", "text": reply.reasoning}],
           "encrypted_content": format!("enc_scripted_{}", ctx.request_no)})
}

fn message_item(reply: &Reply, ctx: &Ctx<'_>) -> Value {
    json!({"type": "message", "id": format!("msg_scripted_{}", ctx.request_no), "role": "assistant",
           "status": "completed", "content": [{"type": "output_text", "text": reply.text, "annotations": []}]})
}

fn call_item(reply: &Reply, ctx: &Ctx<'_>, n: usize) -> Value {
    let call = &reply.tool_calls[n];
    let call_id = call.id.clone().unwrap_or_else(|| format!("call_{}_{n}", ctx.request_no));
    json!({"type": "function_call", "id": format!("fc_scripted_{}_{n}", ctx.request_no), "call_id": call_id,
           "name": call.name, "arguments": call.arguments, "status": "completed"})
}

fn usage(usage: ScriptedUsage) -> Value {
    json!({
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
        "input_tokens_details": {"cached_tokens": usage.cached_tokens},
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
    })
}

fn event(body: Value) -> String {
    let name = body["type"].as_str().unwrap_or("message").to_owned();
    format!("event: {name}\ndata: {body}\n\n")
}
