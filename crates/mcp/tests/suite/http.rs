//! Streamable HTTP connections: server-everything (`streamableHttp` mode) and the auth fixture
//! (`tests/servers/http.mjs`): POST with SSE answers, the GET SSE notification stream, headers
//! injected per connection, and `DELETE` on termination (404 and 405 mean already gone).

use super::support::{HttpServer, timeouts};
use mcp::{CallContext, Connection, HttpConfig, McpError, Secret, Step, Termination};
use serde_json::{Value, json};
use std::time::Duration;

fn authorized(server: &HttpServer) -> HttpConfig {
    let mut config = server.config();
    config.authorization = Some(Secret::new("Bearer s3cret-token"));
    config.headers.insert("X-Tenant".into(), Secret::new("acme"));
    config
}

#[tokio::test]
async fn http_initializes_lists_and_calls_server_everything() {
    let server = HttpServer::everything().await;
    let connection = Connection::connect_http("everything-http", &server.config(), timeouts()).await.unwrap();
    assert_eq!(connection.protocol_version().as_deref(), Some("2025-11-25"));
    let tools = connection.list_tools(&CallContext::default()).await.unwrap();
    assert!(tools.iter().any(|tool| tool.name == "echo"));
    let args = json!({"message": "over http"}).as_object().unwrap().clone();
    let output = connection.call_tool("echo", args, &CallContext::default()).await.unwrap();
    assert_eq!(output.text, "Echo: over http");
}

#[tokio::test]
async fn http_get_sse_stream_delivers_the_tools_list_changed_notification() {
    // A tool registered during a call makes the server send tools/list_changed; it answers no
    // POST, so it can only arrive on the GET SSE stream. The stream opens right after
    // `initialize`, so the first change might precede it: keep changing until one arrives.
    let server = HttpServer::auth_fixture("default").await;
    let connection = Connection::connect_http("auth", &authorized(&server), timeouts()).await.unwrap();
    let mut changes = 0;
    let arrived = tokio::time::timeout(Duration::from_secs(15), async {
        while connection.tools_generation() == 0 {
            changes += 1;
            let args = json!({"name": format!("added_{changes}")}).as_object().unwrap().clone();
            connection.call_tool("add_tool", args, &CallContext::default()).await.unwrap();
            for _ in 0..50 {
                if connection.tools_generation() > 0 {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    })
    .await;
    assert!(arrived.is_ok(), "no tools/list_changed arrived on the GET SSE stream");
    let tools = connection.list_tools(&CallContext::default()).await.unwrap();
    assert!(tools.iter().any(|tool| tool.name == "added_1"));
}

#[tokio::test]
async fn http_sends_the_configured_authorization_and_headers_with_every_request() {
    let server = HttpServer::auth_fixture("default").await;
    let connection = Connection::connect_http("auth", &authorized(&server), timeouts()).await.unwrap();
    let output = connection.call_tool("whoami", Default::default(), &CallContext::default()).await.unwrap();
    let seen: Value = serde_json::from_str(&output.text).unwrap();
    assert_eq!(seen, json!({"authorization": "Bearer s3cret-token", "tenant": "acme"}));
}

#[tokio::test]
async fn http_without_credentials_fails_initialize_naming_the_server() {
    let server = HttpServer::auth_fixture("default").await;
    let error = Connection::connect_http("auth", &server.config(), timeouts()).await.unwrap_err();
    assert_eq!(error.server(), Some("auth"));
    assert_eq!(error.step(), Some(Step::Initialize));
    assert!(error.to_string().contains("'auth'") && error.to_string().contains("initialize"), "{error}");
}

#[tokio::test]
async fn terminating_an_http_session_sends_delete_with_the_credentials() {
    let server = HttpServer::auth_fixture("default").await;
    let connection = Connection::connect_http("auth", &authorized(&server), timeouts()).await.unwrap();
    assert_eq!(connection.terminate().await.unwrap(), Termination::Deleted);
    let stats = server.stats().await;
    assert_eq!(stats["deletes"], json!(1));
    assert_eq!(stats["lastDelete"]["authorization"], json!("Bearer s3cret-token"));
    assert_eq!(stats["lastDelete"]["tenant"], json!("acme"));
    assert!(stats["lastDelete"]["session"].is_string());
    assert!(connection.is_closed());
}

#[tokio::test]
async fn a_404_answer_to_delete_counts_as_already_gone() {
    let server = HttpServer::auth_fixture("delete-404").await;
    let connection = Connection::connect_http("auth", &authorized(&server), timeouts()).await.unwrap();
    assert_eq!(connection.terminate().await.unwrap(), Termination::AlreadyGone(404));
}

#[tokio::test]
async fn a_405_answer_to_delete_counts_as_already_gone() {
    let server = HttpServer::auth_fixture("delete-405").await;
    let connection = Connection::connect_http("auth", &authorized(&server), timeouts()).await.unwrap();
    assert_eq!(connection.terminate().await.unwrap(), Termination::AlreadyGone(405));
}

#[tokio::test]
async fn server_everything_accepts_delete_of_its_session() {
    let server = HttpServer::everything().await;
    let connection = Connection::connect_http("everything-http", &server.config(), timeouts()).await.unwrap();
    assert_eq!(connection.terminate().await.unwrap(), Termination::Deleted);
}

#[tokio::test]
async fn an_unreachable_http_server_fails_initialize_with_a_transport_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let config = HttpConfig::new(format!("http://127.0.0.1:{port}/mcp"));
    let error = Connection::connect_http("gone", &config, timeouts()).await.unwrap_err();
    assert!(
        matches!(error, McpError::Transport { ref server, step: Step::Initialize, .. } if server == "gone"),
        "{error:?}"
    );
}

#[test]
fn http_credentials_never_show_in_debug_output() {
    let mut config = HttpConfig::new("https://mcp.example.com/mcp");
    config.authorization = Some(Secret::new("Bearer top-secret"));
    config.headers.insert("X-Api-Key".into(), Secret::new("key-123"));
    let printed = format!("{config:?} {}", Secret::new("x"));
    assert!(!printed.contains("top-secret") && !printed.contains("key-123"), "{printed}");
    assert!(printed.contains("[redacted]"));
}
