//! The script: the steps the scripted model plays, one per request, with a
//! builder API for Rust tests and a JSON form for `POST /_script`.
//!
//! JSON form of a step (every field but `type` optional):
//! ```json
//! {"type": "text", "text": "Hello", "reasoning": "Thinking first.", "chunks": 3, "chunk_delay_ms": 5, "latency_ms": 20,
//!  "usage": {"input_tokens": 10, "output_tokens": 3, "cached_tokens": 0, "reasoning_tokens": 0},
//!  "cut_after": 2, "stall_after": 2, "abort_after": 2, "finish_reason": "length", "repeat": 10}
//! {"type": "tool_calls", "text": "optional text first",
//!  "tool_calls": [{"id": "call_1", "name": "shell", "arguments": {"command": "ls"}},
//!                 {"name": "broken", "arguments": "{not json"}]}
//! {"type": "error", "status": 429, "body": "{\"error\": …}", "latency_ms": 0}
//! {"type": "stall"}
//! ```
//! `text` and `tool_calls` are the same kind of step (a reply); `arguments`
//! is a JSON value, or a string sent verbatim (so it can be invalid JSON).

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use std::time::Duration;

/// What the scripted model does with one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Step {
    /// Answer: text and/or tool calls, in the request's wire format.
    #[serde(alias = "text", alias = "tool_calls")]
    Reply(Reply),
    /// Answer with this HTTP status and body.
    Error(ErrorReply),
    /// Accept the request and never answer (until the server shuts down).
    Stall,
}

/// A successful answer and how to deliver it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Reply {
    /// Reasoning streamed before the answer (`reasoning_content` deltas,
    /// a signed `thinking` block, a `reasoning` item with a summary).
    pub reasoning: String,
    pub text: String,
    pub tool_calls: Vec<ScriptedToolCall>,
    /// Split the text, and each call's arguments, into this many deltas.
    pub chunks: usize,
    /// Pause before each stream event after the first.
    pub chunk_delay_ms: u64,
    /// Pause before the response headers.
    pub latency_ms: u64,
    pub usage: Option<ScriptedUsage>,
    /// Overrides the finish reason (`stop` / `tool_calls`, `end_turn` / `tool_use`).
    pub finish_reason: Option<String>,
    /// End the body cleanly after this many stream events, without the end
    /// marker (`[DONE]` / `message_stop`).
    pub cut_after: Option<usize>,
    /// Stop sending after this many stream events, keeping the connection open.
    pub stall_after: Option<usize>,
    /// Break the connection (no clean end of body) after this many events.
    pub abort_after: Option<usize>,
}

/// An HTTP error answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ErrorReply {
    pub status: u16,
    /// Sent verbatim; a generic JSON error when empty.
    pub body: String,
    pub latency_ms: u64,
}

/// A tool call the scripted model makes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedToolCall {
    /// Generated (`call_<request>_<n>` / `toolu_<request>_<n>`) when absent.
    #[serde(default)]
    pub id: Option<String>,
    pub name: String,
    /// The arguments text exactly as streamed.
    #[serde(default = "empty_object", deserialize_with = "arguments_text")]
    pub arguments: String,
}

impl ScriptedToolCall {
    pub fn new(name: impl Into<String>, arguments: Value) -> Self {
        Self { id: None, name: name.into(), arguments: arguments.to_string() }
    }

    /// Arguments sent verbatim, e.g. invalid JSON.
    pub fn raw(name: impl Into<String>, arguments: impl Into<String>) -> Self {
        Self { id: None, name: name.into(), arguments: arguments.into() }
    }

    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }
}

fn empty_object() -> String {
    "{}".to_owned()
}

fn arguments_text<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Ok(match Value::deserialize(deserializer)? {
        Value::String(text) => text,
        other => other.to_string(),
    })
}

/// Token counts to report, in the request's wire format.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScriptedUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_tokens: u64,
    pub reasoning_tokens: u64,
}

impl Step {
    /// A text answer, in one delta unless [`Self::chunks`] says otherwise.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Reply(Reply { text: text.into(), ..Reply::default() })
    }

    /// One tool call with these JSON arguments.
    pub fn tool_call(name: impl Into<String>, arguments: Value) -> Self {
        Self::tool_calls([ScriptedToolCall::new(name, arguments)])
    }

    pub fn tool_calls(calls: impl IntoIterator<Item = ScriptedToolCall>) -> Self {
        Self::Reply(Reply { tool_calls: calls.into_iter().collect(), ..Reply::default() })
    }

    pub fn error(status: u16, body: impl Into<String>) -> Self {
        Self::Error(ErrorReply { status, body: body.into(), latency_ms: 0 })
    }

    pub fn stall() -> Self {
        Self::Stall
    }

    /// Adds text before the tool calls of a reply.
    pub fn with_text(self, text: impl Into<String>) -> Self {
        self.map_reply(|r| r.text = text.into())
    }

    /// Adds reasoning before the reply's text and tool calls.
    pub fn with_reasoning(self, reasoning: impl Into<String>) -> Self {
        self.map_reply(|r| r.reasoning = reasoning.into())
    }

    /// Adds a tool call to a reply.
    pub fn and_tool_call(self, call: ScriptedToolCall) -> Self {
        self.map_reply(|r| r.tool_calls.push(call))
    }

    pub fn chunks(self, chunks: usize) -> Self {
        self.map_reply(|r| r.chunks = chunks)
    }

    pub fn chunk_delay(self, delay: Duration) -> Self {
        self.map_reply(|r| r.chunk_delay_ms = millis(delay))
    }

    /// Pause before the response headers (replies and errors).
    pub fn latency(self, latency: Duration) -> Self {
        match self {
            Self::Error(mut e) => {
                e.latency_ms = millis(latency);
                Self::Error(e)
            }
            other => other.map_reply(|r| r.latency_ms = millis(latency)),
        }
    }

    pub fn usage(self, usage: ScriptedUsage) -> Self {
        self.map_reply(|r| r.usage = Some(usage))
    }

    pub fn finish_reason(self, reason: impl Into<String>) -> Self {
        self.map_reply(|r| r.finish_reason = Some(reason.into()))
    }

    pub fn cut_after(self, events: usize) -> Self {
        self.map_reply(|r| r.cut_after = Some(events))
    }

    pub fn stall_after(self, events: usize) -> Self {
        self.map_reply(|r| r.stall_after = Some(events))
    }

    pub fn abort_after(self, events: usize) -> Self {
        self.map_reply(|r| r.abort_after = Some(events))
    }

    fn map_reply(mut self, change: impl FnOnce(&mut Reply)) -> Self {
        if let Self::Reply(reply) = &mut self {
            change(reply);
        }
        self
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// Parses the body of `POST /_script`: a list of steps, or `{"steps": […]}`;
/// each step may carry `"repeat": n` to be queued n times.
pub fn parse_steps(body: Value) -> Result<Vec<Step>, String> {
    let list = match body {
        Value::Array(list) => list,
        Value::Object(mut object) => match object.remove("steps") {
            Some(Value::Array(list)) => list,
            _ => return Err("expected a JSON list of steps, or {\"steps\": [...]}".to_owned()),
        },
        _ => return Err("expected a JSON list of steps".to_owned()),
    };
    let mut steps = Vec::with_capacity(list.len());
    for (index, mut value) in list.into_iter().enumerate() {
        let repeat = match value.as_object_mut().and_then(|o| o.remove("repeat")) {
            None => 1,
            Some(n) => n.as_u64().ok_or_else(|| format!("step {index}: `repeat` must be a count"))?,
        };
        let step: Step = serde_json::from_value(value).map_err(|e| format!("step {index}: {e}"))?;
        for _ in 0..repeat {
            steps.push(step.clone());
        }
    }
    Ok(steps)
}

/// Splits `text` into at most `parts` pieces of about equal length, on
/// character boundaries; an empty text gives no piece.
pub(crate) fn split(text: &str, parts: usize) -> Vec<&str> {
    let chars = text.chars().count();
    let parts = parts.clamp(1, chars.max(1));
    let mut pieces = Vec::with_capacity(parts);
    let mut rest = text;
    for i in 0..parts {
        let take = (chars * (i + 1)) / parts - (chars * i) / parts;
        let cut = rest.char_indices().nth(take).map_or(rest.len(), |(at, _)| at);
        let (piece, tail) = rest.split_at(cut);
        if !piece.is_empty() {
            pieces.push(piece);
        }
        rest = tail;
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_steps_parse_with_aliases_and_repeat() {
        let steps = parse_steps(json!([
            {"type": "text", "text": "hi", "chunks": 2, "repeat": 2},
            {"type": "tool_calls", "tool_calls": [{"name": "f", "arguments": {"a": 1}}, {"name": "g", "arguments": "{bad"}]},
            {"type": "error", "status": 429},
            {"type": "stall"}
        ]))
        .unwrap();
        assert_eq!(steps.len(), 5);
        assert_eq!(steps[0], Step::text("hi").chunks(2));
        assert_eq!(
            steps[2],
            Step::tool_calls([ScriptedToolCall::new("f", json!({"a": 1})), ScriptedToolCall::raw("g", "{bad")])
        );
        assert_eq!(steps[3], Step::error(429, ""));
        assert_eq!(steps[4], Step::stall());
    }

    #[test]
    fn split_keeps_every_character() {
        assert_eq!(split("héllo wörld", 3), vec!["hél", "lo w", "örld"]);
        assert_eq!(split("ab", 5), vec!["a", "b"]);
        assert!(split("", 3).is_empty());
    }
}
