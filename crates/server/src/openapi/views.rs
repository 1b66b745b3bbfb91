//! Schemas of the answers built as JSON values rather than `protocol` types:
//! the Responses and Conversations views (`protocol::response`), artifacts
//! (a store row shown as is), live file lists, the stream events of a
//! response and the operations endpoints. They follow those builders field
//! by field; the compatibility suite checks real answers against them.

use super::op::of;
use protocol::environment::EnvironmentFile;
use protocol::event::Event;
use schemars::SchemaGenerator;
use serde_json::{Value, json};

/// Registers `schema` as `components.schemas.<name>` and refers to it.
fn define(g: &mut SchemaGenerator, name: &str, schema: Value) -> Value {
    g.definitions_mut().insert(name.to_string(), schema);
    json!({"$ref": format!("#/components/schemas/{name}")})
}

fn string() -> Value {
    json!({"type": "string"})
}

fn nullable(kind: &str) -> Value {
    json!({"type": kind, "nullable": true})
}

fn one_of(values: &[&str]) -> Value {
    json!({"type": "string", "enum": values})
}

/// An object whose every listed property is required.
fn object(properties: Value) -> Value {
    let required: Vec<&String> = properties.as_object().map(|p| p.keys().collect()).unwrap_or_default();
    json!({"type": "object", "properties": properties, "required": required})
}

/// A list envelope of `item` (`first_id`/`last_id` are null on an empty page).
fn list_of(item: Value) -> Value {
    object(json!({
        "object": one_of(&["list"]), "data": {"type": "array", "items": item},
        "first_id": nullable("string"), "last_id": nullable("string"), "has_more": {"type": "boolean"},
    }))
}

fn item_status() -> Value {
    one_of(&["in_progress", "completed", "incomplete"])
}

fn content_part(g: &mut SchemaGenerator) -> Value {
    let schema = json!({"oneOf": [
        object(json!({"type": one_of(&["input_text"]), "text": string()})),
        object(json!({"type": one_of(&["input_image"]), "image_url": string(), "detail": string()})),
        object(json!({"type": one_of(&["output_text"]), "text": string(),
                      "annotations": {"type": "array", "items": {"type": "object"}},
                      "logprobs": {"type": "array", "items": {"type": "object"}}})),
    ]});
    define(g, "ResponseContentPart", schema)
}

/// An item of a response's `output` or of a conversation.
pub(super) fn conversation_item(g: &mut SchemaGenerator) -> Value {
    let part = content_part(g);
    let mut message = object(json!({
        "id": string(), "type": one_of(&["message"]), "role": one_of(&["user", "assistant"]),
        "status": item_status(), "content": {"type": "array", "items": part},
        "phase": {"type": "string", "enum": ["commentary", "final_answer"], "nullable": true},
    }));
    // User messages carry no phase.
    message["required"] = json!(["id", "type", "role", "status", "content"]);
    let schema = json!({"oneOf": [
        message,
        object(json!({"id": string(), "type": one_of(&["function_call"]), "call_id": string(), "name": string(),
                      "arguments": string(), "status": item_status()})),
        object(json!({"id": string(), "type": one_of(&["function_call_output"]), "call_id": string(),
                      "output": string(), "status": item_status()})),
        object(json!({"id": string(), "type": one_of(&["mcp_call"]), "server_label": string(), "name": string(),
                      "arguments": string(), "output": nullable("string"), "error": nullable("string"),
                      "status": item_status()})),
        object(json!({"id": string(), "type": one_of(&["reasoning"]), "status": item_status(),
                      "summary": {"type": "array", "items": object(json!({"type": one_of(&["summary_text"]), "text": string()}))},
                      "encrypted_content": nullable("string")})),
        object(json!({"id": string(), "type": one_of(&["mcp_approval_request"]), "server_label": string(),
                      "name": string(), "arguments": string()})),
        object(json!({"id": string(), "type": one_of(&["program"]), "call_id": string(), "code": string(),
                      "fingerprint": string()})),
        object(json!({"id": string(), "type": one_of(&["program_output"]), "call_id": string(), "result": string(),
                      "status": one_of(&["completed", "incomplete"])})),
    ]});
    define(g, "ConversationItem", schema)
}

/// `GET /v1/conversations/{id}/items` and a response's input items.
/// `{"id": "resp_…", "object": "response", "deleted": true}`.
pub(super) fn response_deleted(_: &mut SchemaGenerator) -> Value {
    serde_json::json!({
        "type": "object",
        "required": ["id", "object", "deleted"],
        "properties": {
            "id": {"type": "string"},
            "object": {"type": "string", "enum": ["response"]},
            "deleted": {"type": "boolean", "enum": [true]}
        }
    })
}

pub(super) fn conversation_item_list(g: &mut SchemaGenerator) -> Value {
    let item = conversation_item(g);
    define(g, "ConversationItemList", list_of(item))
}

/// The Responses API's `response` object of a turn.
pub(super) fn response(g: &mut SchemaGenerator) -> Value {
    let item = conversation_item(g);
    let count = json!({"type": "integer"});
    let usage = json!({
        "type": "object", "nullable": true, "required": ["input_tokens", "output_tokens", "total_tokens"],
        "properties": {"input_tokens": count, "input_tokens_details": {"type": "object"},
                       "output_tokens": count, "output_tokens_details": {"type": "object"}, "total_tokens": count},
    });
    let schema = object(json!({
        "id": string(),
        "object": one_of(&["response"]),
        "created_at": {"type": "integer"},
        "status": one_of(&["queued", "in_progress", "completed", "failed", "cancelled"]),
        "error": {"type": "object", "nullable": true, "required": ["code", "message"],
                  "properties": {"code": string(), "message": string(), "type": string()}},
        "incomplete_details": {"type": "object", "nullable": true},
        "instructions": nullable("string"),
        "metadata": {"type": "object", "additionalProperties": {"type": "string"}},
        "model": string(),
        "output": {"type": "array", "items": item},
        "parallel_tool_calls": {"type": "boolean"},
        "temperature": nullable("number"),
        "tool_choice": string(),
        "tools": {"type": "array", "items": {"type": "object"}},
        "top_p": nullable("number"),
        "max_output_tokens": nullable("integer"),
        "text": {"type": "object", "properties": {"format": {"type": "object"}, "verbosity": string()}},
        "reasoning": {"type": "object"},
        "service_tier": string(),
        "background": {"type": "boolean"},
        "completed_at": nullable("integer"),
        "conversation": object(json!({"id": string()})),
        "usage": usage,
    }));
    define(g, "Response", schema)
}

/// One event of a streamed response (`response.created` … `response.completed`).
pub(super) fn response_stream_event(g: &mut SchemaGenerator) -> Value {
    let mut schema = object(json!({"type": string(), "sequence_number": {"type": "integer"}}));
    schema["description"] = json!(
        "`response.created`, `response.in_progress`, `response.output_item.added`, \
         `response.content_part.added`, `response.output_text.delta`, `response.output_text.done`, \
         `response.content_part.done`, `response.reasoning_summary_part.added`, \
         `response.reasoning_summary_text.delta`, `response.reasoning_summary_text.done`, \
         `response.reasoning_summary_part.done`, `response.output_item.done`, then `response.completed`, \
         `response.failed` or `response.incomplete`; each carries what the `openai` client's \
         event type of that name holds."
    );
    define(g, "ResponseStreamEvent", schema)
}

/// One event of a session's stream, as an SSE `data:` line.
pub(super) fn session_event(g: &mut SchemaGenerator) -> Value {
    of::<Event>(g)
}

fn artifact_fields() -> Value {
    object(json!({
        "id": string(), "object": one_of(&["agent.session.artifact"]), "created_at": {"type": "integer"},
        "environment_id": string(), "session_id": string(), "turn_id": string(),
        "path": string(), "size_bytes": {"type": "integer", "minimum": 0},
    }))
}

/// A file a session published from its output directory.
pub(super) fn artifact(g: &mut SchemaGenerator) -> Value {
    define(g, "Artifact", artifact_fields())
}

pub(super) fn artifact_list(g: &mut SchemaGenerator) -> Value {
    let item = artifact(g);
    define(g, "ArtifactList", list_of(item))
}

/// `DELETE …/artifacts/{artifact_id}`.
pub(super) fn artifact_deleted(g: &mut SchemaGenerator) -> Value {
    let schema = object(json!({"id": string(), "object": one_of(&["agent.session.artifact.deleted"]),
                               "deleted": {"type": "boolean"}}));
    define(g, "ArtifactDeleted", schema)
}

/// An artifact's bytes.
pub(super) fn bytes(_: &mut SchemaGenerator) -> Value {
    json!({"type": "string", "format": "binary"})
}

/// `GET /v1/agents/environments/{id}/files`: a page of live files, `next` the page token.
pub(super) fn environment_file_list(g: &mut SchemaGenerator) -> Value {
    let file = of::<EnvironmentFile>(g);
    let schema = object(json!({
        "object": one_of(&["list"]), "data": {"type": "array", "items": file},
        "has_more": {"type": "boolean"}, "next": nullable("string"),
    }));
    define(g, "EnvironmentFileList", schema)
}

/// `/healthz` and `/readyz`.
pub(super) fn health(g: &mut SchemaGenerator) -> Value {
    define(g, "Health", object(json!({"status": one_of(&["ok", "ready"])})))
}

/// `/readyz`: with PostgreSQL, also this node and every registered node of its cluster.
pub(super) fn readiness(g: &mut SchemaGenerator) -> Value {
    let node = object(json!({
        "id": string(), "slot": {"type": "integer"}, "advertise": string(), "version": string(),
        "alive": {"type": "boolean"}, "heartbeat_age_ms": {"type": "integer"}, "started_at": {"type": "integer"},
        "stopped": {"type": "boolean"},
    }));
    let this = object(json!({"id": string(), "slot": {"type": "integer"}, "advertise": string()}));
    let schema = json!({
        "type": "object", "required": ["status"],
        "properties": {"status": one_of(&["ready"]), "node": this, "nodes": {"type": "array", "items": node}},
    });
    define(g, "Readiness", schema)
}

/// Prometheus text.
pub(super) fn text(_: &mut SchemaGenerator) -> Value {
    string()
}

/// An OpenAPI document (this one).
pub(super) fn document(_: &mut SchemaGenerator) -> Value {
    json!({"type": "object", "required": ["openapi", "info", "paths"]})
}
