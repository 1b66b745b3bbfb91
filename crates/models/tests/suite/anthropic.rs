//! Anthropic Messages: streaming text and tool use, and what is sent upstream.

use super::{KEY, anthropic, drain};
use models::{FinishReason, Message, ModelEvent, ModelRequest, ModelResponse, Provider, ToolCall, ToolSpec, Usage};
use serde_json::json;
use test_support::model_server::{ModelServer, ScriptedToolCall, ScriptedUsage, Step};

#[tokio::test]
async fn anthropic_streamed_text_arrives_as_deltas_with_usage() {
    let usage = ScriptedUsage { input_tokens: 50, output_tokens: 4, cached_tokens: 20, reasoning_tokens: 0 };
    let server = ModelServer::with_script([Step::text("Bonjour!").chunks(2).usage(usage)]).await.unwrap();
    let (events, error) = drain(anthropic(&server).stream(&ModelRequest::new("claude-test"))).await;
    assert_eq!(error, None);
    assert_eq!(
        events,
        vec![
            ModelEvent::TextDelta("Bonj".into()),
            ModelEvent::TextDelta("our!".into()),
            ModelEvent::Usage(Usage { input_tokens: 50, output_tokens: 4, cached_tokens: 20, reasoning_tokens: 0 }),
            ModelEvent::Finish(FinishReason::Stop),
        ]
    );
}

#[tokio::test]
async fn anthropic_tool_use_blocks_become_tool_calls() {
    let server = ModelServer::with_script([Step::tool_calls([
        ScriptedToolCall::new("shell", json!({"command": "echo hi"})).id("toolu_1"),
        ScriptedToolCall::raw("write_file", "{\"path\": ").id("toolu_2"),
    ])
    .with_text("Running it.")
    .chunks(3)])
    .await
    .unwrap();
    let answer = ModelResponse::collect(anthropic(&server).stream(&ModelRequest::new("claude-test"))).await.unwrap();
    assert_eq!(answer.text, "Running it.");
    assert_eq!(
        answer.tool_calls,
        vec![
            ToolCall::new("toolu_1", "shell", r#"{"command":"echo hi"}"#),
            ToolCall::new("toolu_2", "write_file", "{\"path\": "),
        ]
    );
    assert_eq!(answer.finish, Some(FinishReason::ToolCalls));
}

#[tokio::test]
async fn anthropic_requests_carry_headers_system_tools_and_tool_results_in_user_turns() {
    let server = ModelServer::with_script([Step::text("ok")]).await.unwrap();
    let request = ModelRequest {
        model: "claude-upstream".into(),
        instructions: Some("Be kind.".into()),
        messages: vec![
            Message::user("run it"),
            Message::ToolCall(ToolCall::new("toolu_1", "shell", r#"{"command":"ls"}"#)),
            Message::tool_result("toolu_1", "a.txt"),
        ],
        tools: vec![ToolSpec::new("shell", "Run", json!({"type": "object"}))],
        max_output_tokens: Some(1000),
        ..ModelRequest::default()
    };
    ModelResponse::collect(anthropic(&server).stream(&request)).await.unwrap();
    let recorded = &server.requests()[0];
    assert_eq!(recorded.path, "/v1/messages");
    assert_eq!(recorded.headers["x-api-key"], KEY);
    assert_eq!(recorded.headers["anthropic-version"], models::anthropic::API_VERSION);
    assert!(!recorded.headers.contains_key("authorization"));
    assert_eq!(
        recorded.body,
        json!({
            "model": "claude-upstream",
            "max_tokens": 1000,
            "system": "Be kind.",
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "run it"}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "shell", "input": {"command": "ls"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.txt"}]}
            ],
            "tools": [{"name": "shell", "description": "Run", "input_schema": {"type": "object"}}],
            "stream": true
        })
    );
}

#[tokio::test]
async fn anthropic_stream_cut_before_message_stop_is_an_error() {
    let server = ModelServer::with_script([Step::text("partial answer").chunks(4).cut_after(4)]).await.unwrap();
    let (events, error) = drain(anthropic(&server).stream(&ModelRequest::new("claude-test"))).await;
    assert!(events.iter().all(|e| matches!(e, ModelEvent::TextDelta(_))), "{events:?}");
    let error = error.unwrap();
    assert_eq!(error.to_string(), "model provider `anthropic`: stream ended before `message_stop`");
}

#[tokio::test]
async fn anthropic_overloaded_529_is_retried() {
    let overloaded = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let server = ModelServer::with_script([Step::error(529, overloaded), Step::text("there")]).await.unwrap();
    let answer = ModelResponse::collect(anthropic(&server).stream(&ModelRequest::new("claude-test"))).await.unwrap();
    assert_eq!(answer.text, "there");
    assert_eq!(server.request_count(), 2);
}

/// Joined per call id, the deltas of a stream are the calls' complete arguments, and each call's
/// first delta comes before any of its argument bytes is complete.
fn joined_deltas(events: &[ModelEvent]) -> Vec<(String, String, String)> {
    let mut joined: Vec<(String, String, String)> = Vec::new();
    for event in events {
        if let ModelEvent::ToolCallDelta(delta) = event {
            match joined.iter_mut().find(|(id, _, _)| *id == delta.id) {
                Some(entry) => entry.2.push_str(&delta.arguments),
                None => joined.push((delta.id.clone(), delta.name.clone(), delta.arguments.clone())),
            }
        }
    }
    joined
}

#[tokio::test]
async fn tool_call_deltas_come_only_when_asked_in_both_wire_formats() {
    let arguments = r#"{"server":"company","name":"get_inventory","arguments":{"sku":"SKU42"}}"#;
    let step = || Step::tool_calls([ScriptedToolCall::raw("call_tool", arguments).id("c1")]).chunks(5);
    let server = ModelServer::with_script([step(), step(), step()]).await.unwrap();
    let mut request = ModelRequest::new("m");
    let (plain, _) = drain(anthropic(&server).stream(&request)).await;
    assert!(!plain.iter().any(|e| matches!(e, ModelEvent::ToolCallDelta(_))), "{plain:?}");
    request.tool_call_deltas = true;
    let expected = vec![("c1".to_owned(), "call_tool".to_owned(), arguments.to_owned())];
    for stream in [anthropic(&server).stream(&request), super::openai(&server).stream(&request)] {
        let (events, error) = drain(stream).await;
        assert_eq!(error, None);
        assert_eq!(joined_deltas(&events), expected, "{events:?}");
        let deltas = events.iter().filter(|e| matches!(e, ModelEvent::ToolCallDelta(_))).count();
        assert!(deltas >= 5, "one delta per streamed fragment: {events:?}");
        let call = events.iter().position(|e| matches!(e, ModelEvent::ToolCall(_))).unwrap();
        assert!(events[..call].iter().all(|e| matches!(e, ModelEvent::ToolCallDelta(_))), "{events:?}");
    }
}
