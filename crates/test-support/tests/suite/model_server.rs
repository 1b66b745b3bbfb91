//! The scripted model server, seen from outside: its wire formats, its HTTP
//! control endpoints and its standalone binary.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use test_support::model_server::{ModelServer, ScriptedToolCall, ScriptedUsage, Step};

async fn post(url: &str, body: Value) -> (u16, String) {
    let response = reqwest::Client::new().post(url).json(&body).send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

async fn get(url: &str) -> Value {
    reqwest::get(url).await.unwrap().json().await.unwrap()
}

#[tokio::test]
async fn a_non_streaming_request_gets_one_chat_completion_with_tool_calls() {
    let usage = ScriptedUsage { input_tokens: 9, output_tokens: 4, cached_tokens: 0, reasoning_tokens: 0 };
    let step = Step::tool_calls([ScriptedToolCall::new("shell", json!({"command": "ls"})).id("call_x")]).usage(usage);
    let server = ModelServer::with_script([step]).await.unwrap();
    let (status, body) =
        post(&format!("{}/chat/completions", server.base_url()), json!({"model": "m", "messages": []})).await;
    assert_eq!(status, 200);
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        body,
        json!({
            "id": "chatcmpl-scripted-1", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null,
                "tool_calls": [{"id": "call_x", "type": "function", "function": {"name": "shell", "arguments": "{\"command\":\"ls\"}"}}]
            }}],
            "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13,
                      "prompt_tokens_details": {"cached_tokens": 0}, "completion_tokens_details": {"reasoning_tokens": 0}}
        })
    );
}

#[tokio::test]
async fn a_streaming_request_gets_sse_chunks_ending_with_done() {
    let server = ModelServer::with_script([Step::text("hi there").chunks(2)]).await.unwrap();
    let request = json!({"model": "m", "stream": true, "stream_options": {"include_usage": true}});
    let (status, body) = post(&format!("{}/chat/completions", server.base_url()), request).await;
    assert_eq!(status, 200);
    let events: Vec<&str> = body.split("\n\n").filter(|e| !e.is_empty()).collect();
    assert_eq!(events.len(), 6, "role, two deltas, finish, usage, [DONE]: {body}");
    assert_eq!(*events.last().unwrap(), "data: [DONE]");
    let second: Value = serde_json::from_str(events[1].strip_prefix("data: ").unwrap()).unwrap();
    assert_eq!(second["choices"][0]["delta"], json!({"content": "hi t"}));
}

#[tokio::test]
async fn anthropic_requests_get_a_message_or_named_sse_events() {
    let server = ModelServer::with_script([Step::text("bonjour"), Step::text("salut")]).await.unwrap();
    let url = format!("{}/v1/messages", server.anthropic_base_url());
    let (_, body) = post(&url, json!({"model": "claude-x", "max_tokens": 10, "messages": []})).await;
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!((body["type"].clone(), body["content"][0]["text"].clone()), (json!("message"), json!("bonjour")));
    let (_, body) = post(&url, json!({"model": "claude-x", "max_tokens": 10, "messages": [], "stream": true})).await;
    let names: Vec<&str> = body.lines().filter_map(|l| l.strip_prefix("event: ")).collect();
    assert_eq!(
        names,
        [
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
}

#[tokio::test]
async fn the_control_endpoints_script_the_server_and_report_what_it_received() {
    let server = ModelServer::start().await.unwrap();
    let root = server.anthropic_base_url();
    let script = json!([
        {"type": "error", "status": 429, "body": "{\"error\":{\"message\":\"slow down\"}}"},
        {"type": "text", "text": "again", "repeat": 2}
    ]);
    let (status, body) = post(&format!("{root}/_script"), script).await;
    assert_eq!((status, serde_json::from_str::<Value>(&body).unwrap()), (200, json!({"queued": 3, "pending": 3})));

    let chat = format!("{root}/v1/chat/completions");
    let (status, body) = post(&chat, json!({"model": "m", "n": 1})).await;
    assert_eq!((status, body.as_str()), (429, "{\"error\":{\"message\":\"slow down\"}}"));
    for _ in 0..2 {
        assert_eq!(post(&chat, json!({"model": "m"})).await.0, 200);
    }
    let (status, body) = post(&chat, json!({"model": "m"})).await;
    assert_eq!(status, 500);
    assert!(body.contains("script exhausted: no step is queued for request #4"), "{body}");

    let requests = get(&format!("{root}/_requests")).await;
    assert_eq!(requests.as_array().unwrap().len(), 4);
    assert_eq!(requests[0]["path"], "/v1/chat/completions");
    assert_eq!(requests[0]["body"], json!({"model": "m", "n": 1}));
    assert_eq!(get(&format!("{root}/_stats")).await, json!({"requests": 4, "pending": 0, "aborted": 0}));

    assert_eq!(post(&format!("{root}/_reset"), json!({})).await.0, 200);
    assert_eq!(get(&format!("{root}/_stats")).await, json!({"requests": 0, "pending": 0, "aborted": 0}));
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn a_malformed_script_is_rejected_naming_the_step() {
    let server = ModelServer::start().await.unwrap();
    let (status, body) =
        post(&format!("{}/_script", server.anthropic_base_url()), json!([{"type": "text"}, {"type": "dance"}])).await;
    assert_eq!(status, 400);
    assert!(body.contains("step 1"), "{body}");
    assert_eq!(server.pending(), 0, "nothing is queued from a rejected script");
}

#[tokio::test]
async fn the_scripted_model_binary_prints_its_address_and_serves() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_scripted-model")).stdout(Stdio::piped()).kill_on_drop_guard();
    let mut line = String::new();
    BufReader::new(child.0.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let url = line.trim().strip_prefix("scripted model listening on ").unwrap().to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{line}");
    post(&format!("{url}/_script"), json!([{"type": "text", "text": "from the binary"}])).await;
    let (_, body) = post(&format!("{url}/v1/chat/completions"), json!({"model": "m"})).await;
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["choices"][0]["message"]["content"], "from the binary");
}

/// Kills the child process when the test ends, pass or fail.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

trait SpawnKilled {
    fn kill_on_drop_guard(&mut self) -> Killed;
}

impl SpawnKilled for Command {
    fn kill_on_drop_guard(&mut self) -> Killed {
        Killed(self.spawn().unwrap())
    }
}
