//! The flow the turn engine runs: check the servers answer (`refresh_all`), then search, then
//! call, over a service-origin HTTP server and an environment-origin stdio broker side by
//! side; a server that stops answering is reported, not fatal to the others.

use super::support::{HttpServer, everything_stdio_config, node, stdio_config, timeouts};
use mcp::{
    BrokerRegistry, CallToolArgs, CatalogCache, Connection, McpCallStatus, McpError, SearchArgs, ServerConfig, Step,
    SystemClock, Timeouts, Toolset, TransportConfig, helper_tools,
};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn search_then_call_across_an_http_server_and_a_stdio_broker() {
    let http = HttpServer::everything().await;
    let http_config = ServerConfig::new("remote", TransportConfig::Http(http.config()));
    let remote = Arc::new(Connection::connect_http("remote", &http.config(), timeouts()).await.unwrap());
    let registry = BrokerRegistry::new();
    let stdio = everything_stdio_config();
    let broker =
        registry.get_or_start("sbx", "local", || Connection::spawn_stdio("local", &stdio, timeouts())).await.unwrap();
    let mut local_config = stdio_config("local", stdio.clone());
    local_config.allowed_tools = Some(vec!["get-sum".into()]);
    let toolset = Toolset::new("org", "session", Arc::new(CatalogCache::new(Arc::new(SystemClock))))
        .with_server(http_config, remote.clone())
        .with_server(local_config, broker.connection().clone());
    let cancel = CancellationToken::new();

    let checked = toolset.refresh_all(&cancel).await;
    assert!(checked.iter().all(|(_, outcome)| outcome.is_ok()), "{checked:?}");

    let found = toolset.search_tools(&SearchArgs::query("sum of two numbers"), &cancel).await.unwrap();
    let servers: Vec<&str> =
        found.results.iter().filter(|hit| hit.name == "get-sum").map(|hit| hit.server.as_str()).collect();
    assert_eq!(servers.len(), 2, "both servers offer get-sum: {found:?}");
    let local =
        toolset.search_tools(&SearchArgs::pattern(".").on_server("local").with_limit(20), &cancel).await.unwrap();
    assert_eq!(local.results.iter().map(|hit| hit.name.as_str()).collect::<Vec<_>>(), ["get-sum"]);

    for server in ["remote", "local"] {
        let record = toolset.call_tool(&CallToolArgs::new(server, "get-sum", json!({"a": 20, "b": 22})), &cancel).await;
        assert_eq!(record.status, McpCallStatus::Completed, "{record:?}");
        assert!(record.output.as_deref().unwrap().contains("42"), "{record:?}");
    }
    remote.terminate().await.unwrap();
}

#[tokio::test]
async fn a_server_that_stops_answering_is_listed_as_unavailable_while_others_are_searched() {
    let good = Arc::new(Connection::spawn_stdio("good", &node("fixture.mjs", &[]), timeouts()).await.unwrap());
    let slow_timeouts = Timeouts { list: Duration::from_millis(300), ..timeouts() };
    let broken = Arc::new(Connection::spawn_stdio("broken", &node("fixture.mjs", &[]), slow_timeouts).await.unwrap());
    broken.call_tool("crash", Default::default(), &Default::default()).await.unwrap_err();
    tokio::time::timeout(Duration::from_secs(5), async {
        while !broken.is_closed() {
            tokio::task::yield_now().await;
        }
    })
    .await
    .unwrap();
    let toolset = Toolset::new("org", "s", Arc::new(CatalogCache::new(Arc::new(SystemClock))))
        .with_server(stdio_config("good", node("fixture.mjs", &[])), good)
        .with_server(stdio_config("broken", node("fixture.mjs", &[])), broken);
    let cancel = CancellationToken::new();

    let found = toolset.search_tools(&SearchArgs::query("echo"), &cancel).await.unwrap();
    assert_eq!(found.results[0].server, "good");
    assert_eq!(found.unavailable.len(), 1);
    assert_eq!(found.unavailable[0].server, "broken");
    assert_eq!(
        found.unavailable[0].error,
        "MCP server 'broken' closed the connection during tools/list (the server exited or crashed)"
    );

    let named = toolset.search_tools(&SearchArgs::query("echo").on_server("broken"), &cancel).await.unwrap_err();
    assert_eq!(named, McpError::Closed { server: "broken".into(), step: Step::ToolsList });

    let checked = toolset.refresh_all(&cancel).await;
    assert!(checked[0].1.is_ok());
    assert!(matches!(&checked[1].1, Err(McpError::Closed { .. })));
}

#[test]
fn the_five_helper_tools_are_defined_for_the_model() {
    let names: Vec<&str> = helper_tools().iter().map(|tool| tool.name).collect();
    assert_eq!(
        names,
        ["search_tools", "call_tool", "list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource"]
    );
    for tool in helper_tools() {
        assert_eq!(tool.parameters["type"], json!("object"), "{}", tool.name);
        assert!(!tool.description.is_empty());
    }
}
