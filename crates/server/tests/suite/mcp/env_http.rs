//! Environment-origin Streamable HTTP: the connection originates inside the environment's
//! sandbox, so it reaches a server listening on the sandbox's own loopback (network disabled)
//! and follows the sandbox's network policy; the same URL from the service origin does not.

use super::{environment_with_servers, mcp_calls, run_turn, setup, tool_result, turn_items};
use serde_json::{Value, json};
use test_support::model_server::{ScriptedToolCall, Step};

/// A port on the sandbox's loopback; nothing of the test listens on it on the host.
const INSIDE_PORT: u16 = 47411;

fn inside_tool(origin: &str) -> Value {
    json!({"type": "mcp", "server_label": "inside", "required": true, "connection_origin": origin,
           "transport": {"type": "http", "server_url": format!("http://localhost:{INSIDE_PORT}/mcp"),
                         "authorization": "Bearer tok-inside"}})
}

/// An environment whose setup starts the bearer-checking MCP server on its loopback.
async fn environment_serving_inside(s: &crate::support::TestServer) -> String {
    let start = format!(
        "cd /workspace && (PORT={INSIDE_PORT} nohup node bearer.mjs tok- > bearer.log 2>&1 &) && \
         for i in $(seq 200); do grep -q listening bearer.log && exit 0; sleep 0.05; done; cat bearer.log; exit 1"
    );
    environment_with_servers(s, json!({"setup_commands": [{"command": start}]})).await
}

#[tokio::test]
async fn an_environment_origin_http_server_on_the_sandboxs_loopback_is_reached_from_inside() {
    let (model, s) = setup(vec![
        Step::tool_calls([ScriptedToolCall::new(
            "call_tool",
            json!({"server": "inside", "name": "whoami", "arguments": {}}),
        )
        .id("c_who")]),
        Step::text("done"),
    ])
    .await;
    let env_id = environment_serving_inside(&s).await;
    assert!(std::net::TcpStream::connect(("127.0.0.1", INSIDE_PORT)).is_err(), "the port is free on the host");
    let sid = session_on(&s, &env_id, inside_tool("environment")).await;
    let (turn_id, turn) = run_turn(&s, &sid, "Who am I to the server inside?").await;
    assert_eq!(turn["status"], "completed", "{turn}");
    let requests: Vec<Value> = model.requests().into_iter().map(|r| r.body).collect();
    assert!(tool_result(&requests[1], "c_who").contains("Bearer tok-inside"), "{}", tool_result(&requests[1], "c_who"));
    let item = &mcp_calls(&turn_items(&s, &sid, &turn_id).await)[0];
    assert_eq!((&item["server_label"], &item["status"]), (&json!("inside"), &json!("completed")));
}

#[tokio::test]
async fn the_same_url_from_the_service_origin_is_the_hosts_loopback_and_fails() {
    let (_model, s) = setup(vec![Step::text("unused")]).await;
    let env_id = environment_serving_inside(&s).await;
    let sid = session_on(&s, &env_id, inside_tool("service")).await;
    let (_, turn) = run_turn(&s, &sid, "hello").await;
    assert_eq!(turn["status"], "failed", "{turn}");
    let message = turn["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("inside"), "{turn}");
}

/// This machine's address on its default route (not loopback).
pub(super) fn host_ip() -> String {
    let probe = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
    probe.connect("192.0.2.1:9").expect("a default route");
    probe.local_addr().unwrap().ip().to_string()
}

/// A session on a new environment with `network`, whose one server is `url` from inside.
async fn restricted_session(s: &crate::support::TestServer, network: Value, url: &str) -> String {
    let (status, env) =
        s.post("/v1/agents/environments", json!({"environment": {"type": "openai_hosted", "network": network}})).await;
    assert!(status.is_success(), "{env}");
    let tool = json!({"type": "mcp", "server_label": "outside", "required": true, "connection_origin": "environment",
                      "transport": {"type": "http", "server_url": url}});
    session_on(s, env["id"].as_str().unwrap(), tool).await
}

/// A session on `env_id` whose one tool is `tool`.
async fn session_on(s: &crate::support::TestServer, env_id: &str, tool: Value) -> String {
    let body = json!({"agent": {"model": "m", "tools": [tool]},
                      "environment": {"type": "reference", "environment_id": env_id}});
    let (status, session) = s.post("/v1/agents/sessions", body).await;
    assert!(status.is_success(), "{session}");
    session["id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn an_environment_origin_http_server_follows_the_environments_network_policy() {
    let everything = super::NodeServer::everything().await;
    let ip = host_ip();
    let url = everything.url.replace("127.0.0.1", &ip);
    let echo = || {
        Step::tool_calls([ScriptedToolCall::new(
            "call_tool",
            json!({"server": "outside", "name": "echo", "arguments": {"message": "through the policy"}}),
        )
        .id("c_echo")])
    };
    let (model, s) = setup(vec![echo(), Step::text("done")]).await;

    // Allowed: the connection leaves the sandbox through its proxy.
    let sid = restricted_session(&s, json!({"access": "restricted", "allowed_domains": [ip]}), &url).await;
    let (_, turn) = run_turn(&s, &sid, "echo").await;
    assert_eq!(turn["status"], "completed", "{turn}");
    let requests: Vec<Value> = model.requests().into_iter().map(|r| r.body).collect();
    assert!(tool_result(&requests[1], "c_echo").contains("through the policy"));

    // Not allowed: the required server cannot connect, and the error says why.
    let sid = restricted_session(&s, json!({"access": "restricted", "allowed_domains": ["example.com"]}), &url).await;
    let (_, turn) = run_turn(&s, &sid, "echo").await;
    assert_eq!(turn["status"], "failed", "{turn}");
    let message = turn["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("outside") && message.contains("allowed_domains"), "{message}");

    // Disabled: nothing leaves the sandbox.
    let sid = restricted_session(&s, json!({"access": "disabled"}), &url).await;
    let (_, turn) = run_turn(&s, &sid, "echo").await;
    assert_eq!(turn["status"], "failed", "{turn}");
    let message = turn["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("disabled"), "{message}");
}
