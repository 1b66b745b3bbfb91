//! Servers that hang, crash, answer garbage or refuse: every case is a clear error naming the
//! server and the step, within the timeout, never a hang or a panic.

use super::support::{self, fixture, fixture_stats, node, timeouts};
use mcp::{CallContext, Connection, McpError, StdioConfig, Step, Timeouts};
use serde_json::json;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

fn short() -> Timeouts {
    Timeouts::all(Duration::from_millis(800))
}

async fn raw(mode: &str) -> Connection {
    Connection::spawn_stdio(format!("raw-{mode}"), &node("raw.mjs", &[mode]), timeouts()).await.unwrap()
}

#[tokio::test]
async fn a_server_that_never_answers_initialize_times_out_naming_the_step() {
    let started = Instant::now();
    let error = Connection::spawn_stdio("hung", &node("raw.mjs", &["hang"]), short()).await.unwrap_err();
    assert_eq!(
        error,
        McpError::Timeout { server: "hung".into(), step: Step::Initialize, after: Duration::from_millis(800) }
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(error.to_string(), "MCP server 'hung' did not answer initialize within 800 ms");
}

#[tokio::test]
async fn a_server_that_exits_at_once_fails_initialize_as_closed() {
    let error = Connection::spawn_stdio("quitter", &node("raw.mjs", &["exit"]), timeouts()).await.unwrap_err();
    assert_eq!(error, McpError::Closed { server: "quitter".into(), step: Step::Initialize });
}

#[tokio::test]
async fn a_command_that_does_not_exist_fails_to_spawn() {
    let config = StdioConfig { command: "/nonexistent/mcp-server".into(), ..StdioConfig::default() };
    let error = Connection::spawn_stdio("ghost", &config, timeouts()).await.unwrap_err();
    assert!(matches!(error, McpError::Spawn { ref server, .. } if server == "ghost"), "{error:?}");
}

#[tokio::test]
async fn a_hung_tool_call_times_out_and_sends_mcp_cancellation() {
    support::ensure_npm();
    let connection = Connection::spawn_stdio(
        "slowpoke",
        &node("fixture.mjs", &[]),
        Timeouts { call: Duration::from_millis(300), ..timeouts() },
    )
    .await
    .unwrap();
    let args = json!({"ms": 60_000}).as_object().unwrap().clone();
    let error = connection.call_tool("slow", args, &CallContext::default()).await.unwrap_err();
    assert_eq!(
        error,
        McpError::Timeout { server: "slowpoke".into(), step: Step::ToolsCall, after: Duration::from_millis(300) }
    );
    let stats = support::stats_after_a_cancellation(&connection).await;
    assert_eq!(stats["cancelled"].as_array().unwrap().len(), 1, "{stats}");
    assert_eq!(stats["cancelled"][0]["reason"], json!("request timed out"));
}

#[tokio::test]
async fn cancelling_an_in_flight_call_sends_mcp_cancellation() {
    let connection = fixture("slowpoke").await;
    let cancel = CancellationToken::new();
    let ctx = CallContext::new(None, cancel.clone());
    let args = json!({"ms": 60_000}).as_object().unwrap().clone();
    let call = connection.call_tool("slow", args, &ctx);
    let canceller = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        cancel.cancel();
    };
    let (error, ()) = tokio::join!(call, canceller);
    assert_eq!(error.unwrap_err(), McpError::Cancelled { server: "slowpoke".into(), step: Step::ToolsCall });
    let stats = support::stats_after_a_cancellation(&connection).await;
    assert_eq!(stats["cancelled"][0]["reason"], json!("cancelled by the caller"), "{stats}");
    // The connection stays usable.
    let args = json!({"message": "still here"}).as_object().unwrap().clone();
    assert_eq!(connection.call_tool("echo", args, &CallContext::default()).await.unwrap().text, "still here");
}

#[tokio::test]
async fn dropping_an_in_flight_call_sends_mcp_cancellation() {
    let connection = fixture("slowpoke").await;
    let args = json!({"ms": 60_000}).as_object().unwrap().clone();
    let abandoned =
        tokio::time::timeout(Duration::from_millis(200), connection.call_tool("slow", args, &CallContext::default()))
            .await;
    assert!(abandoned.is_err());
    let stats = loop {
        let stats = fixture_stats(&connection).await;
        if !stats["cancelled"].as_array().unwrap().is_empty() {
            break stats;
        }
        tokio::task::yield_now().await;
    };
    assert_eq!(stats["cancelled"][0]["reason"], json!("abandoned by the caller"));
}

#[tokio::test]
async fn a_server_that_crashes_during_a_call_fails_it_as_closed() {
    let connection = fixture("crashy").await;
    let error = connection.call_tool("crash", Default::default(), &CallContext::default()).await.unwrap_err();
    assert_eq!(error, McpError::Closed { server: "crashy".into(), step: Step::ToolsCall });
    assert!(error.is_connection_lost());
    // Later requests fail at once, naming their own step.
    tokio::time::timeout(Duration::from_secs(5), async {
        while !connection.is_closed() {
            tokio::task::yield_now().await;
        }
    })
    .await
    .unwrap();
    let error = connection.list_tools(&CallContext::default()).await.unwrap_err();
    assert_eq!(error, McpError::Closed { server: "crashy".into(), step: Step::ToolsList });
}

#[tokio::test]
async fn a_tools_list_that_does_not_conform_is_a_protocol_error() {
    let connection = raw("malformed").await;
    let error = connection.list_tools(&CallContext::default()).await.unwrap_err();
    let McpError::Protocol { server, step, message } = &error else { panic!("{error:?}") };
    assert_eq!((server.as_str(), *step), ("raw-malformed", Step::ToolsList));
    assert!(message.contains("invalid type"), "{message}");
    assert!(
        error.to_string().starts_with("MCP server 'raw-malformed' sent an answer to tools/list that does not conform")
    );
}

#[tokio::test]
async fn a_tool_without_input_schema_is_a_protocol_error() {
    let connection = raw("malformed-tool").await;
    let error = connection.list_tools(&CallContext::default()).await.unwrap_err();
    assert!(
        matches!(&error, McpError::Protocol { step: Step::ToolsList, message, .. } if message.contains("inputSchema")),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_cursor_that_never_advances_is_a_protocol_error() {
    let connection = raw("loop-cursor").await;
    let error = connection.list_tools(&CallContext::default()).await.unwrap_err();
    assert!(
        matches!(&error, McpError::Protocol { step: Step::ToolsList, message, .. } if message.contains("repeats")),
        "{error:?}"
    );
}

#[tokio::test]
async fn error_answers_carry_the_server_code_and_message() {
    let connection = raw("error").await;
    let error = connection.list_tools(&CallContext::default()).await.unwrap_err();
    assert_eq!(
        error,
        McpError::Server {
            server: "raw-error".into(),
            step: Step::ToolsList,
            code: -32603,
            message: "database is down".into()
        }
    );
    let error = connection.call_tool("anything", Default::default(), &CallContext::default()).await.unwrap_err();
    assert_eq!(error.to_string(), "MCP server 'raw-error' answered tools/call with error -32000: tool exploded");
}
