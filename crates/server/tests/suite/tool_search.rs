//! Tool configuration of Dynamic Workflow and deferred functions (issue 14): which lists are
//! accepted and how they read back; deferred functions found by `tool_search` are offered from
//! the next step on and called as any client function.

use crate::support::{TestServer, assert_error};
use reqwest::StatusCode;
use serde_json::{Value, json};
use test_support::model_server::{ModelServer, ScriptedToolCall, Step};

fn mcp() -> Value {
    json!({"type": "mcp", "server_label": "docs", "transport": {"type": "http", "server_url": "http://127.0.0.1:9/mcp"}})
}

fn function(name: &str, description: &str, deferred: bool) -> Value {
    json!({"type": "function", "name": name, "description": description, "defer_loading": deferred,
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}})
}

#[tokio::test]
async fn workflow_needs_an_mcp_tool_and_reads_back_as_given() {
    let s = TestServer::start().await;
    for tool in [json!({"type": "dynamic_workflow"}), json!({"type": "programmatic_tool_calling", "enabled": true})] {
        let got = s.post("/v1/agents", json!({"name": "a", "model": "m", "tools": [tool.clone()]})).await;
        assert_error(&got, StatusCode::BAD_REQUEST, "invalid_request_error", Some("tools[0].type"));
        let session = json!({"agent": {"model": "m", "tools": [tool.clone()]}, "environment": {"type": "none"}});
        let got = s.post("/v1/agents/sessions", session).await;
        assert_error(&got, StatusCode::BAD_REQUEST, "invalid_request_error", Some("agent.tools[0].type"));
        let agent = s.agent(json!({"name": "a", "model": "m", "tools": [mcp(), tool.clone()]})).await;
        assert_eq!(agent["tools"][1], tool, "{agent}");
    }
    let off = json!({"type": "programmatic_tool_calling", "enabled": false});
    let agent = s.agent(json!({"name": "a", "model": "m", "tools": [off.clone()]})).await;
    assert_eq!(agent["tools"][0], off);
    let got =
        s.post("/v1/agents", json!({"name": "a", "model": "m", "tools": [{"type": "dynamic_workflow", "x": 1}]})).await;
    assert_eq!(got.0, StatusCode::BAD_REQUEST, "{}", got.1);
}

#[tokio::test]
async fn deferred_functions_need_tool_search() {
    let s = TestServer::start().await;
    let got = s.post("/v1/agents", json!({"name": "a", "model": "m", "tools": [function("w", "", true)]})).await;
    assert_error(&got, StatusCode::BAD_REQUEST, "invalid_request_error", Some("tools[0].defer_loading"));
    let tools = json!([function("w", "", true), {"type": "tool_search"}]);
    let agent = s.agent(json!({"name": "a", "model": "m", "tools": tools})).await;
    assert_eq!(agent["tools"][1], json!({"type": "tool_search"}));
    assert_eq!(agent["tools"][0]["defer_loading"], true);
}

#[tokio::test]
async fn tool_search_finds_a_deferred_function_which_is_then_called() {
    let model = ModelServer::with_script(vec![
        Step::tool_calls([ScriptedToolCall::new("tool_search", json!({"query": "weather forecast"})).id("s1")]),
        Step::tool_calls([ScriptedToolCall::new("weather", json!({"city": "Oslo"})).id("w1")]),
        Step::text("Rainy."),
    ])
    .await
    .unwrap();
    let s = TestServer::with_model(&model).await;
    let tools = json!([
        function("weather", "The weather forecast for a city", true),
        function("stocks", "Share prices of a company", true),
        function("now", "The time", false),
        {"type": "tool_search"},
    ]);
    let session = s.session(json!({"agent": {"model": "m", "tools": tools}, "environment": {"type": "none"}})).await;
    let sid = session["id"].as_str().unwrap();
    let turn_id = s.send(sid, "Weather in Oslo?").await;
    s.wait_turn_status(sid, &turn_id, &["waiting"]).await;
    let (_, waiting) = s.get(&format!("/v1/agents/sessions/{sid}")).await;
    assert_eq!(waiting["status"], "requires_action");
    assert_eq!(waiting["required_actions"][0]["name"], "weather");
    let result = json!({"events": [{"type": "agent.session.input.tool_result", "turn_id": turn_id, "call_id": "w1",
                                    "success": true, "output": "rain"}]});
    let (status, body) = s.post(&format!("/v1/agents/sessions/{sid}/events"), result).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let turn = s.wait_turn(sid, &turn_id).await;
    assert_eq!(turn["status"], "completed", "{turn}");

    let requests: Vec<Value> = model.requests().into_iter().map(|r| r.body).collect();
    let names = |r: &Value| -> Vec<String> {
        let mut n: Vec<String> = r["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_string())
            .collect();
        n.sort();
        n
    };
    assert_eq!(names(&requests[0]), ["now", "tool_search"]);
    assert_eq!(names(&requests[1]), ["now", "tool_search", "weather"]);
    assert_eq!(names(&requests[2]), ["now", "tool_search", "weather"], "it stays loaded for the turn");
    let tool_msg = |r: &Value, id: &str| -> String {
        let m = r["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool" && m["tool_call_id"] == id);
        m.and_then(|m| m["content"].as_str()).unwrap().to_string()
    };
    let found: Value = serde_json::from_str(&tool_msg(&requests[1], "s1")).unwrap();
    let first = &found["results"][0];
    assert_eq!(first["name"], "weather");
    assert_eq!(first["description"], "The weather forecast for a city");
    assert_eq!(first["parameters"]["properties"]["city"]["type"], "string");
    assert_eq!(tool_msg(&requests[2], "w1"), "rain");
}
