//! `call_tool`: a fresh catalog on every call (which refreshes the cache), the allowlist,
//! validation against the current inputSchema, and the `mcp_call` record: output, error and
//! status, with images serialized as text and `request_metadata` sent as `_meta`.

use super::support::{cache, fixture, fixture_stats, node, stdio_config, timeouts};
use mcp::{CallToolArgs, Connection, McpCall, McpCallStatus, McpError, SearchArgs, ServerConfig, Step, Toolset};
use serde_json::{Value, json};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

fn config() -> ServerConfig {
    stdio_config("company", node("fixture.mjs", &[]))
}

async fn setup(config: ServerConfig) -> (Arc<Connection>, Toolset) {
    let connection = fixture("company").await;
    let toolset = Toolset::new("org", "session", cache()).with_server(config, connection.clone());
    (connection, toolset)
}

async fn call(toolset: &Toolset, name: &str, arguments: Value) -> McpCall {
    toolset.call_tool(&CallToolArgs::new("company", name, arguments), &CancellationToken::new()).await
}

#[tokio::test]
async fn a_call_returns_the_mcp_call_record_with_its_output() {
    let (_connection, toolset) = setup(config()).await;
    let record = call(&toolset, "get_inventory", json!({"sku": "SKU42"})).await;
    assert_eq!(
        serde_json::to_value(&record).unwrap(),
        json!({
            "server_label": "company",
            "name": "get_inventory",
            "arguments": "{\"sku\":\"SKU42\"}",
            "output": "SKU42: 42 in stock",
            "error": null,
            "status": "completed"
        })
    );
    assert_eq!(record.model_text(), "SKU42: 42 in stock");
}

#[tokio::test]
async fn every_call_fetches_the_catalog_fresh_even_with_a_warm_cache_and_refreshes_it() {
    let (connection, toolset) = setup(config()).await;
    toolset.search_tools(&SearchArgs::query("inventory"), &CancellationToken::new()).await.unwrap();
    let before = fixture_stats(&connection).await["toolsList"].as_u64().unwrap();
    for _ in 0..3 {
        assert_eq!(call(&toolset, "echo", json!({"message": "hi"})).await.status, McpCallStatus::Completed);
    }
    assert_eq!(fixture_stats(&connection).await["toolsList"].as_u64().unwrap(), before + 3);
    // The refreshed entry serves the next search.
    toolset.search_tools(&SearchArgs::query("inventory"), &CancellationToken::new()).await.unwrap();
    assert_eq!(fixture_stats(&connection).await["toolsList"].as_u64().unwrap(), before + 3);
}

#[tokio::test]
async fn a_tool_outside_allowed_tools_fails_explicitly_without_being_called() {
    let mut config = config();
    config.allowed_tools = Some(vec!["echo".into()]);
    let (connection, toolset) = setup(config).await;
    let record = call(&toolset, "get_inventory", json!({"sku": "SKU1"})).await;
    assert_eq!(record.status, McpCallStatus::Failed);
    assert_eq!(
        record.failure,
        Some(McpError::ToolNotAllowed { server: "company".into(), tool: "get_inventory".into() })
    );
    assert_eq!(
        record.error.as_deref(),
        Some("tool 'get_inventory' on MCP server 'company' is not allowed by this agent's allowed_tools")
    );
    assert_eq!(fixture_stats(&connection).await["calls"], json!(1), "only the stats call reached the server");
}

#[tokio::test]
async fn a_removed_tool_fails_explicitly_even_when_search_still_showed_it() {
    let (connection, toolset) = setup(config()).await;
    let found = toolset.search_tools(&SearchArgs::query("echo"), &CancellationToken::new()).await.unwrap();
    assert_eq!(found.results[0].name, "echo");
    let args = json!({"name": "echo"}).as_object().unwrap().clone();
    connection.call_tool("remove_tool", args, &mcp::CallContext::default()).await.unwrap();
    let record = call(&toolset, "echo", json!({"message": "hi"})).await;
    assert_eq!(record.failure, Some(McpError::UnknownTool { server: "company".into(), tool: "echo".into() }));
    assert_eq!(
        record.error.as_deref(),
        Some("tool 'echo' is not offered by MCP server 'company' (it may have been removed); search again")
    );
}

#[tokio::test]
async fn arguments_that_violate_the_input_schema_fail_before_the_server_is_called() {
    let (connection, toolset) = setup(config()).await;
    let record = call(&toolset, "get_inventory", json!({"sku": "nope", "quantity": 0})).await;
    assert_eq!(record.status, McpCallStatus::Failed);
    let Some(McpError::InvalidArguments { server, tool, errors }) = &record.failure else { panic!("{record:?}") };
    assert_eq!((server.as_str(), tool.as_str()), ("company", "get_inventory"));
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(errors.iter().any(|e| e.starts_with("at /sku")), "{errors:?}");
    assert!(errors.iter().any(|e| e.starts_with("at /quantity")), "{errors:?}");

    let missing = call(&toolset, "get_inventory", json!({})).await;
    assert!(missing.error.as_deref().unwrap().contains("\"sku\" is a required property"), "{missing:?}");
    let not_object = call(&toolset, "get_inventory", json!([1])).await;
    assert!(not_object.error.as_deref().unwrap().contains("must be a JSON object"), "{not_object:?}");
    assert_eq!(fixture_stats(&connection).await["calls"], json!(1), "no invalid call reached the server");
}

#[tokio::test]
async fn arguments_given_as_a_json_string_are_accepted() {
    let (_connection, toolset) = setup(config()).await;
    let record = toolset
        .call_tool_json(
            r#"{"server":"company","name":"echo","arguments":"{\"message\":\"x\"}"}"#,
            &CancellationToken::new(),
        )
        .await;
    assert_eq!(record.output.as_deref(), Some("x"));
}

#[tokio::test]
async fn a_tool_error_result_is_recorded_as_failed_with_its_text() {
    let (_connection, toolset) = setup(config()).await;
    let record = call(&toolset, "fail", json!({})).await;
    assert_eq!(
        (record.status, record.output, record.error.as_deref()),
        (McpCallStatus::Failed, None, Some("the warehouse is closed"))
    );
}

#[tokio::test]
async fn image_content_is_serialized_as_text() {
    let (_connection, toolset) = setup(config()).await;
    let record = call(&toolset, "image", json!({})).await;
    let output = record.output.unwrap();
    let mut lines = output.lines();
    assert_eq!(lines.next(), Some("here is a pixel"));
    let image: Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    assert_eq!(image, json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}));
}

#[tokio::test]
async fn request_metadata_is_sent_as_meta() {
    let mut config = config();
    config.request_metadata = Some(json!({"tenant": "acme", "trace": 7}).as_object().unwrap().clone());
    let (_connection, toolset) = setup(config).await;
    let record = call(&toolset, "echo_meta", json!({})).await;
    let meta: Value = serde_json::from_str(record.output.as_deref().unwrap()).unwrap();
    assert_eq!(meta["tenant"], json!("acme"));
    assert_eq!(meta["trace"], json!(7));
}

#[tokio::test]
async fn a_server_error_answer_becomes_a_failed_call_naming_the_step() {
    let connection = Arc::new(Connection::spawn_stdio("raw", &node("raw.mjs", &["error"]), timeouts()).await.unwrap());
    let toolset =
        Toolset::new("org", "s", cache()).with_server(stdio_config("raw", node("raw.mjs", &["error"])), connection);
    let record = toolset.call_tool(&CallToolArgs::new("raw", "x", json!({})), &CancellationToken::new()).await;
    assert_eq!(
        record.error.as_deref(),
        Some("MCP server 'raw' answered tools/list with error -32603: database is down")
    );
    assert_eq!(record.failure.as_ref().and_then(McpError::step), Some(Step::ToolsList));
}

#[tokio::test]
async fn call_tool_only_reaches_configured_mcp_servers() {
    let (_connection, toolset) = setup(config()).await;
    let record = toolset.call_tool(&CallToolArgs::new("shell", "exec", json!({})), &CancellationToken::new()).await;
    assert_eq!(record.failure, Some(McpError::UnknownServer { server: "shell".into(), known: vec!["company".into()] }));
    let garbled = toolset.call_tool_json("{\"server\":", &CancellationToken::new()).await;
    assert_eq!(garbled.status, McpCallStatus::Failed);
    assert!(matches!(garbled.failure, Some(McpError::InvalidRequest(_))));
}

#[tokio::test]
async fn concurrent_calls_share_catalog_fetches_and_each_answer_reaches_its_caller() {
    let (connection, toolset) = setup(config()).await;
    let calls = (0..50).map(|i| call(&toolset, "echo", json!({"message": format!("message {i}")})));
    let records = futures::future::join_all(calls).await;
    for (i, record) in records.iter().enumerate() {
        assert_eq!(record.output, Some(format!("message {i}")), "{record:?}");
    }
    let lists = fixture_stats(&connection).await["toolsList"].as_u64().unwrap();
    assert!((1..50).contains(&lists), "50 concurrent calls made {lists} tools/list requests");
}

#[tokio::test]
async fn a_call_never_uses_a_catalog_fetch_sent_before_it_arrived() {
    // The fixture answers tools/list 400 ms after computing it, so the first call's fetch is in
    // flight, already stale, when the tool is added and the second call arrives.
    let connection = Arc::new(
        Connection::spawn_stdio("company", &node("fixture.mjs", &["--list-delay-ms=400"]), timeouts()).await.unwrap(),
    );
    let toolset = Toolset::new("org", "session", cache()).with_server(config(), connection.clone());
    let first = call(&toolset, "echo", json!({"message": "first"}));
    let second = async {
        tokio::time::sleep(std::time::Duration::from_millis(150)).await;
        let args = json!({"name": "late_tool"}).as_object().unwrap().clone();
        connection.call_tool("add_tool", args, &mcp::CallContext::default()).await.unwrap();
        call(&toolset, "late_tool", json!({})).await
    };
    let (first, second) = tokio::join!(first, second);
    assert_eq!(first.status, McpCallStatus::Completed, "{first:?}");
    assert_eq!(second.output.as_deref(), Some("late_tool ran"), "{second:?}");
}
