//! OpenAI Chat Completions: streaming text, tool calls, usage, and what is
//! sent upstream.

use super::{KEY, drain, openai};
use futures::StreamExt;
use models::{
    FinishReason, Message, ModelEvent, ModelRequest, ModelResponse, Provider, ReasoningEffort, ToolCall, ToolSpec,
    Usage,
};
use serde_json::json;
use std::time::{Duration, Instant};
use test_support::model_server::{ModelServer, ScriptedToolCall, ScriptedUsage, Step};

fn usage() -> ScriptedUsage {
    ScriptedUsage { input_tokens: 120, output_tokens: 7, cached_tokens: 100, reasoning_tokens: 3 }
}

#[tokio::test]
async fn streamed_text_arrives_as_deltas_then_usage_then_finish() {
    let server = ModelServer::with_script([Step::text("Hello, world!").chunks(3).usage(usage())]).await.unwrap();
    let (events, error) =
        drain(openai(&server).stream(&ModelRequest::new("gpt-test").message(Message::user("hi")))).await;
    assert_eq!(error, None);
    assert_eq!(
        events,
        vec![
            ModelEvent::TextDelta("Hell".into()),
            ModelEvent::TextDelta("o, w".into()),
            ModelEvent::TextDelta("orld!".into()),
            ModelEvent::Usage(Usage { input_tokens: 120, output_tokens: 7, cached_tokens: 100, reasoning_tokens: 3 }),
            ModelEvent::Finish(FinishReason::Stop),
        ]
    );
}

#[tokio::test]
async fn the_request_is_streamed_with_usage_and_carries_the_whole_context() {
    let server = ModelServer::with_script([Step::text("ok")]).await.unwrap();
    let request = ModelRequest {
        model: "upstream-name".into(),
        instructions: Some("You are terse.".into()),
        messages: vec![
            Message::user("list files"),
            Message::ToolCall(ToolCall::new("call_1", "shell", r#"{"command":"ls"}"#)),
            Message::tool_result("call_1", "a.txt"),
        ],
        tools: vec![ToolSpec::new("shell", "Run a command", json!({"type": "object"}))],
        reasoning_effort: Some(ReasoningEffort::High),
        ..ModelRequest::default()
    };
    ModelResponse::collect(openai(&server).stream(&request)).await.unwrap();
    let recorded = &server.requests()[0];
    assert_eq!(recorded.path, "/v1/chat/completions");
    assert_eq!(recorded.headers["authorization"], format!("Bearer {KEY}"));
    assert_eq!(
        recorded.body,
        json!({
            "model": "upstream-name",
            "messages": [
                {"role": "system", "content": "You are terse."},
                {"role": "user", "content": "list files"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "shell", "arguments": "{\"command\":\"ls\"}"}}
                ]},
                {"role": "tool", "content": "a.txt", "tool_call_id": "call_1"}
            ],
            "tools": [{"type": "function", "function": {"name": "shell", "description": "Run a command", "parameters": {"type": "object"}}}],
            "stream": true,
            "stream_options": {"include_usage": true},
            "reasoning_effort": "high"
        })
    );
}

#[tokio::test]
async fn several_tool_calls_are_assembled_from_their_fragments() {
    let server = ModelServer::with_script([Step::tool_calls([
        ScriptedToolCall::new("shell", json!({"command": "ls -la /workspace"})).id("call_a"),
        ScriptedToolCall::new("read_file", json!({"path": "notes.md"})).id("call_b"),
    ])
    .with_text("Looking.")
    .chunks(4)])
    .await
    .unwrap();
    let answer = ModelResponse::collect(openai(&server).stream(&ModelRequest::new("m"))).await.unwrap();
    assert_eq!(
        answer,
        ModelResponse {
            text: "Looking.".into(),
            tool_calls: vec![
                ToolCall::new("call_a", "shell", r#"{"command":"ls -la /workspace"}"#),
                ToolCall::new("call_b", "read_file", r#"{"path":"notes.md"}"#),
            ],
            usage: Some(Usage::default()),
            finish: Some(FinishReason::ToolCalls),
            ..ModelResponse::default()
        }
    );
    assert_eq!(
        answer.to_messages(),
        vec![
            Message::assistant("Looking."),
            Message::ToolCall(answer.tool_calls[0].clone()),
            Message::ToolCall(answer.tool_calls[1].clone())
        ]
    );
}

#[tokio::test]
async fn invalid_tool_call_arguments_are_passed_through_as_the_raw_string() {
    let server =
        ModelServer::with_script([Step::tool_calls([ScriptedToolCall::raw("shell", r#"{"command": "ls"#)]).chunks(3)])
            .await
            .unwrap();
    let answer = ModelResponse::collect(openai(&server).stream(&ModelRequest::new("m"))).await.unwrap();
    assert_eq!(answer.tool_calls.len(), 1);
    assert_eq!(answer.tool_calls[0].arguments, r#"{"command": "ls"#);
    assert!(answer.tool_calls[0].parse_arguments().is_err());
}

#[tokio::test]
async fn the_tool_result_is_sent_back_on_the_next_step() {
    let server = ModelServer::with_script([Step::tool_call("shell", json!({"command": "pwd"})), Step::text("done")])
        .await
        .unwrap();
    let provider = openai(&server);
    let mut request = ModelRequest::new("m").message(Message::user("where am I?"));
    let first = ModelResponse::collect(provider.stream(&request)).await.unwrap();
    request.messages.extend(first.to_messages());
    request.messages.push(Message::tool_result(first.tool_calls[0].id.clone(), "/workspace"));
    let second = ModelResponse::collect(provider.stream(&request)).await.unwrap();
    assert_eq!(second.text, "done");
    let sent = server.last_request().unwrap();
    assert_eq!(
        sent["messages"][2],
        json!({"role": "tool", "content": "/workspace", "tool_call_id": first.tool_calls[0].id})
    );
}

#[tokio::test]
async fn each_delta_is_forwarded_before_the_upstream_finishes() {
    let delay = Duration::from_millis(200); // below the idle timeout
    let server = ModelServer::with_script([Step::text("abc").chunks(3).chunk_delay(delay)]).await.unwrap();
    let started = Instant::now();
    let mut stream = openai(&server).stream(&ModelRequest::new("m"));
    let first = stream.next().await.unwrap().unwrap();
    assert_eq!(first, ModelEvent::TextDelta("a".into()));
    // The first delta is the second of seven SSE events: it comes after one
    // chunk delay, long before the stream ends (six delays).
    assert!(started.elapsed() < delay * 3, "first delta after {:?}", started.elapsed());
}

#[tokio::test]
async fn text_and_finish_reason_length_are_reported() {
    let server = ModelServer::with_script([Step::text("trunc").finish_reason("length")]).await.unwrap();
    let answer = ModelResponse::collect(openai(&server).stream(&ModelRequest::new("m"))).await.unwrap();
    assert_eq!((answer.text.as_str(), answer.finish), ("trunc", Some(FinishReason::Length)));
}
