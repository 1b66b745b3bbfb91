//! Stdio connections: to server-everything spawned on the host, and over a bare byte-stream pair
//! (how a sandboxed process is attached).

use super::support::{self, everything_stdio, timeouts};
use mcp::{CallContext, Connection, Termination};
use serde_json::json;
use std::process::Stdio;

#[tokio::test]
async fn stdio_handshake_with_server_everything_settles_on_2025_11_25() {
    let connection = everything_stdio("everything").await;
    assert_eq!(connection.protocol_version().as_deref(), Some("2025-11-25"));
    assert_eq!(connection.server_name().as_deref(), Some("mcp-servers/everything"));
}

#[tokio::test]
async fn stdio_lists_every_tool_and_calls_echo_on_server_everything() {
    let connection = everything_stdio("everything").await;
    let tools = connection.list_tools(&CallContext::default()).await.unwrap();
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
    assert!(names.contains(&"echo"), "{names:?}");
    assert!(names.contains(&"get-sum"), "{names:?}");
    let echo = tools.iter().find(|tool| tool.name == "echo").unwrap();
    assert_eq!(echo.input_schema["type"], json!("object"));

    let args = json!({"message": "hello"}).as_object().unwrap().clone();
    let output = connection.call_tool("echo", args, &CallContext::default()).await.unwrap();
    assert_eq!(output.text, "Echo: hello");
    assert!(!output.is_error);
}

#[tokio::test]
async fn a_byte_stream_pair_is_enough_to_connect_as_a_sandbox_hands_it_over() {
    support::ensure_npm();
    let mut child = tokio::process::Command::new("node")
        .arg(support::everything_entry())
        .arg("stdio")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let connection = Connection::connect_stdio("paired", stdout, stdin, timeouts()).await.unwrap().keep_alive(child);
    let args = json!({"a": 2, "b": 40}).as_object().unwrap().clone();
    let output = connection.call_tool("get-sum", args, &CallContext::default()).await.unwrap();
    assert!(output.text.contains("42"), "{}", output.text);

    assert_eq!(connection.terminate().await.unwrap(), Termination::Closed);
    assert!(connection.is_closed());
    assert_eq!(connection.terminate().await.unwrap(), Termination::AlreadyClosed);
}
