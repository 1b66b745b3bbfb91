//! Bad input: each case answers the right 4xx naming the field, never a 5xx,
//! and writes nothing.

use crate::support::{TestServer, assert_error};
use reqwest::StatusCode;
use serde_json::json;

#[tokio::test]
async fn malformed_json_and_wrong_types_name_the_field() {
    let s = TestServer::start().await;
    let got = s.post_raw("/v1/agents", "{\"model\": \"m\",").await;
    assert_error(&got, StatusCode::BAD_REQUEST, "invalid_request_error", None);
    assert_eq!(got.1["error"]["code"], "invalid_json");
    let got = s.post_raw("/v1/agents", "{\"model\": \"m\"} trailing").await;
    assert_eq!(got.1["error"]["code"], "invalid_json");
    let got = s.post("/v1/agents", json!({"model": 7})).await;
    assert_error(&got, StatusCode::BAD_REQUEST, "invalid_request_error", Some("model"));
    let got = s.post("/v1/agents", json!({"model": "m", "metadata": {"k": 1}})).await;
    assert_error(&got, StatusCode::BAD_REQUEST, "invalid_request_error", Some("metadata.k"));
    let got = s.post_raw("/v1/agents", r#"["m"]"#).await;
    assert_error(&got, StatusCode::BAD_REQUEST, "invalid_request_error", None);
    let tool = json!({"type": "function", "name": "f", "description": 5, "parameters": {}});
    let got = s.post("/v1/agents", json!({"model": "m", "tools": [tool]})).await;
    assert_error(&got, StatusCode::BAD_REQUEST, "invalid_request_error", Some("tools[0].description"));
    let mcp = json!({"type": "mcp", "server_label": "x", "transport": {"type": "http", "server_url": 7}});
    let got = s.post("/v1/agents", json!({"model": "m", "tools": [mcp]})).await;
    assert_error(&got, StatusCode::BAD_REQUEST, "invalid_request_error", Some("tools[0].transport.server_url"));
    let got = s.post("/v1/agents", json!({"model": "m", "unknown_field": true})).await;
    assert_error(&got, StatusCode::BAD_REQUEST, "invalid_request_error", None);
    assert!(got.1["error"]["message"].as_str().unwrap().contains("unknown_field"));
    assert_eq!(s.get("/v1/agents").await.1["data"], json!([]));
}

#[tokio::test]
async fn unknown_enum_values_name_the_field() {
    let s = TestServer::start().await;
    let got = s.post("/v1/agents", json!({"model": "m", "service_tier": "turbo"})).await;
    assert_error(&got, StatusCode::BAD_REQUEST, "invalid_request_error", Some("service_tier"));
    let got = s.post("/v1/agents", json!({"model": "m", "reasoning": {"effort": "extreme"}})).await;
    assert_error(&got, StatusCode::BAD_REQUEST, "invalid_request_error", Some("reasoning.effort"));
    let got = s.post("/v1/agents", json!({"model": "m", "tools": [{"type": "teleport"}]})).await;
    assert_eq!(got.0, StatusCode::BAD_REQUEST);
    assert!(got.1["error"]["param"].as_str().unwrap().starts_with("tools[0]"), "{}", got.1);
    let got = s.post("/v1/agents/sessions", json!({"agent": {"model": "m"}, "environment": {"type": "cloud"}})).await;
    assert_eq!(got.0, StatusCode::BAD_REQUEST);
    assert!(got.1["error"]["param"].as_str().unwrap().starts_with("environment"), "{}", got.1);
    let got = s.get("/v1/agents?order=sideways").await;
    assert_error(&got, StatusCode::BAD_REQUEST, "invalid_request_error", Some("order"));
    for limit in ["0", "101", "ten"] {
        let got = s.get(&format!("/v1/agents?limit={limit}")).await;
        assert_error(&got, StatusCode::BAD_REQUEST, "invalid_request_error", Some("limit"));
    }
}

#[tokio::test]
async fn metadata_over_its_limits_is_rejected() {
    let s = TestServer::start().await;
    let seventeen: serde_json::Map<String, serde_json::Value> =
        (0..17).map(|i| (format!("k{i}"), json!("v"))).collect();
    let got = s.post("/v1/agents", json!({"model": "m", "metadata": seventeen})).await;
    assert_error(&got, StatusCode::BAD_REQUEST, "invalid_request_error", Some("metadata"));
    let long_key = "k".repeat(65);
    let got = s
        .post(
            "/v1/agents/sessions",
            json!({"agent": {"model": "m"}, "environment": {"type": "none"}, "metadata": {long_key.clone(): "v"}}),
        )
        .await;
    assert_error(&got, StatusCode::BAD_REQUEST, "invalid_request_error", Some(&format!("metadata.{long_key}")));
    let got = s.post("/v1/conversations", json!({"metadata": {"k": "é".repeat(513)}})).await;
    assert_error(&got, StatusCode::BAD_REQUEST, "invalid_request_error", Some("metadata.k"));
    let ok = s.post("/v1/conversations", json!({"metadata": {"ключ": "é".repeat(512)}})).await;
    assert_eq!(ok.0, StatusCode::OK, "512 two-byte characters are within the limit");
}

#[tokio::test]
async fn oversized_bodies_answer_413() {
    let s = TestServer::start_with(|c| c.body_limit = 64 * 1024).await;
    let big = json!({"model": "m", "instructions": "x".repeat(100 * 1024)}).to_string();
    let got = s.post_raw("/v1/agents", big).await;
    assert_error(&got, StatusCode::PAYLOAD_TOO_LARGE, "invalid_request_error", None);
    assert_eq!(s.get("/v1/agents").await.1["data"], json!([]));
}

#[tokio::test]
async fn malformed_and_unknown_ids_answer_4xx() {
    let s = TestServer::start().await;
    let got = s.get("/v1/agents/sessions/12345").await;
    assert_error(&got, StatusCode::BAD_REQUEST, "invalid_request_error", Some("session_id"));
    let got = s.get("/v1/agents/not-an-agent").await;
    assert_error(&got, StatusCode::NOT_FOUND, "not_found_error", None);
    let got = s.get("/v1/agents/sessions/00000000-0000-4000-8000-000000000000").await;
    assert_error(&got, StatusCode::NOT_FOUND, "not_found_error", None);
    let got = s.get("/v1/agents?after=agent_ffffffffffffffffffffffffffffffff").await;
    assert_error(&got, StatusCode::BAD_REQUEST, "invalid_request_error", Some("after"));
    let got = s.get("/v1/nothing-here").await;
    assert_error(&got, StatusCode::NOT_FOUND, "not_found_error", None);
    let got = s.call(reqwest::Method::PUT, "/v1/agents", None).await;
    assert_error(&got, StatusCode::METHOD_NOT_ALLOWED, "invalid_request_error", None);
}

#[tokio::test]
async fn tool_definitions_are_checked() {
    let s = TestServer::start().await;
    let f = |name: &str| json!({"type": "function", "name": name, "description": "", "parameters": {}});
    let got = s.post("/v1/agents", json!({"model": "m", "tools": [f("a"), f("a")]})).await;
    assert_error(&got, StatusCode::BAD_REQUEST, "invalid_request_error", Some("tools[1].name"));
    let got = s.post("/v1/agents", json!({"model": "m", "tools": [f("call_tool")]})).await;
    assert_error(&got, StatusCode::BAD_REQUEST, "invalid_request_error", Some("tools[0].name"));
    let got = s.post("/v1/agents", json!({"model": "m", "tools": [f("has space")]})).await;
    assert_error(&got, StatusCode::BAD_REQUEST, "invalid_request_error", Some("tools[0].name"));
    let stdio = json!({"type": "mcp", "server_label": "x", "connection_origin": "service",
        "transport": {"type": "stdio", "command": "x", "cwd": "/workspace"}});
    let got = s.post("/v1/agents", json!({"model": "m", "tools": [stdio]})).await;
    assert_error(&got, StatusCode::BAD_REQUEST, "invalid_request_error", Some("tools[0].connection_origin"));
    let http = json!({"type": "mcp", "server_label": "x", "transport": {"type": "http", "server_url": "ftp://x"}});
    let got = s.post("/v1/agents", json!({"model": "m", "tools": [http]})).await;
    assert_error(&got, StatusCode::BAD_REQUEST, "invalid_request_error", Some("tools[0].transport.server_url"));
    let got = s.post("/v1/agents", json!({"model": "m", "multi_agent": {"enabled": true}})).await;
    assert_error(&got, StatusCode::BAD_REQUEST, "invalid_request_error", Some("multi_agent.enabled"));
    assert_eq!(s.get("/v1/agents").await.1["data"], json!([]));
}
