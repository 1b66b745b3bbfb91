//! Tool work stops when asked (issue 17): cancelling a turn during an in-flight `tools/call`
//! ends it at once, over HTTP and over stdio inside the sandbox, and the server hears
//! `notifications/cancelled`; a call over its server's `call_timeout_ms` fails naming the limit
//! and the turn goes on; a required server whose `tools/list` fails fails the turn as one that
//! cannot initialize does; and no error text shows rmcp's internal type names.

use super::{
    NodeServer, dead_url, environment_with_servers, http_tool, mcp_calls, run_turn, session_with, setup, tool_result,
    turn_items,
};
use crate::support::TestServer;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use test_support::model_server::{ScriptedToolCall, Step};

fn hang_call(id: &str, server: &str) -> Step {
    Step::tool_calls([
        ScriptedToolCall::new("call_tool", json!({"server": server, "name": "hang", "arguments": {}})).id(id)
    ])
}

/// Polls `ready` every 20 ms until it holds (or 60 s pass: a sandbox and Node start).
async fn until<F: std::future::Future<Output = bool>>(what: &str, mut ready: impl FnMut() -> F) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !ready().await {
        assert!(Instant::now() < deadline, "never happened: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Methods the `timed.mjs` fixture logged, in order.
async fn logged(server: &NodeServer) -> Vec<String> {
    let stats = server.stats().await;
    stats["requests"].as_array().unwrap().iter().map(|r| r["method"].as_str().unwrap().to_owned()).collect()
}

/// Cancels the session's turn; returns how long until the turn was `cancelled`.
async fn cancel(s: &TestServer, sid: &str, turn_id: &str) -> Duration {
    let started = Instant::now();
    let events = format!("/v1/agents/sessions/{sid}/events");
    let (status, body) = s.post(&events, json!({"events": [{"type": "agent.session.input.cancel"}]})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let turn = s.wait_turn(sid, turn_id).await;
    let took = started.elapsed();
    assert_eq!(turn["status"], "cancelled", "{turn}");
    took
}

/// No user-visible text names rmcp's internals.
fn assert_plain(text: &str) {
    assert!(!text.contains("rmcp::") && !text.contains("WorkerTransport"), "internal type names shown: {text}");
}

#[tokio::test]
async fn cancel_during_an_http_tools_call_ends_the_turn_at_once_and_tells_the_server() {
    let timed = NodeServer::timed().await;
    let (model, s) = setup(vec![hang_call("c_hang", "timed"), Step::text("after the cancel")]).await;
    let sid = session_with(&s, json!([http_tool("timed", &timed.url, true)])).await;
    let turn_id = s.send(&sid, "hang").await;
    until("the tools/call reached the server", || async { logged(&timed).await.contains(&"tools/call".into()) }).await;
    let took = cancel(&s, &sid, &turn_id).await;
    assert!(took < Duration::from_secs(1), "cancel took {took:?}");
    // The notification is sent from a task of its own: wait for it as for the abort.
    until("the server heard the cancellation", || async {
        let log = logged(&timed).await;
        log.contains(&"aborted".into()) && log.contains(&"notifications/cancelled".into())
    })
    .await;
    let item = &mcp_calls(&turn_items(&s, &sid, &turn_id).await)[0];
    assert_eq!(item["status"], "incomplete", "{item}");
    // The session takes new input at once.
    let next = s.send(&sid, "again").await;
    assert_eq!(s.wait_turn(&sid, &next).await["status"], "completed");
    assert_eq!(model.request_count(), 2);
}

#[tokio::test]
async fn cancel_during_a_call_to_a_server_that_cannot_even_read_the_cancellation_ends_the_turn_at_once() {
    let timed = NodeServer::timed().await;
    let block = json!({"server": "timed", "name": "block", "arguments": {"ms": 5000}});
    let (_model, s) = setup(vec![Step::tool_calls([ScriptedToolCall::new("call_tool", block).id("c_block")])]).await;
    let sid = session_with(&s, json!([http_tool("timed", &timed.url, true)])).await;
    let turn_id = s.send(&sid, "block").await;
    // Blocked, it does not even answer `GET /stats`.
    let stats = format!("{}/stats", timed.base);
    let probe = reqwest::Client::builder().timeout(Duration::from_millis(300)).build().unwrap();
    until("the server is blocked in the call", || async { probe.get(&stats).send().await.is_err() }).await;
    let took = cancel(&s, &sid, &turn_id).await;
    assert!(took < Duration::from_secs(1), "cancel took {took:?}");
}

#[tokio::test]
async fn cancel_during_a_stdio_tools_call_in_the_sandbox_ends_the_turn_at_once_and_tells_the_server() {
    let (_model, s) = setup(vec![hang_call("c_hang", "hang")]).await;
    let env_id = environment_with_servers(&s, json!({})).await;
    let log = s.dir.path().join("environments").join(&env_id).join("workspace/hang.log");
    let tool = json!({"type": "mcp", "server_label": "hang", "required": true,
        "transport": {"type": "stdio", "command": "node", "cwd": "/workspace", "args": ["hang.mjs"]}});
    let session = s
        .session(json!({"agent": {"model": "m", "tools": [tool]},
                        "environment": {"type": "reference", "environment_id": env_id}}))
        .await;
    let sid = session["id"].as_str().unwrap().to_string();
    let turn_id = s.send(&sid, "hang").await;
    let read = || std::fs::read_to_string(&log).unwrap_or_default();
    until("the tools/call reached the server", || async { read().contains("started") }).await;
    let took = cancel(&s, &sid, &turn_id).await;
    assert!(took < Duration::from_secs(1), "cancel took {took:?}");
    until("the server heard the cancellation", || async { read().contains("aborted") }).await;
    let item = &mcp_calls(&turn_items(&s, &sid, &turn_id).await)[0];
    assert_eq!(item["status"], "incomplete", "{item}");
}

#[tokio::test]
async fn a_call_over_its_call_timeout_fails_naming_the_limit_and_the_turn_goes_on() {
    let timed = NodeServer::timed().await;
    let (model, s) = setup(vec![hang_call("c_hang", "timed"), Step::text("it timed out")]).await;
    let mut tool = http_tool("timed", &timed.url, true);
    tool["call_timeout_ms"] = json!(300);
    let sid = session_with(&s, json!([tool])).await;
    let (_, session) = s.get(&format!("/v1/agents/sessions/{sid}")).await;
    assert_eq!(session["agent"]["tools"][0]["call_timeout_ms"], 300, "shown back: {session}");
    let started = Instant::now();
    let (turn_id, turn) = run_turn(&s, &sid, "hang").await;
    assert_eq!(turn["status"], "completed", "{turn}");
    assert!(started.elapsed() < Duration::from_secs(10), "the call gave up after 300 ms: {:?}", started.elapsed());
    let seen = tool_result(&model.requests()[1].body, "c_hang");
    assert!(seen.contains("'timed'") && seen.contains("tools/call") && seen.contains("300 ms"), "{seen}");
    assert_plain(&seen);
    let item = &mcp_calls(&turn_items(&s, &sid, &turn_id).await)[0];
    assert_eq!(item["status"], "failed", "{item}");
    assert!(item["error"].as_str().unwrap().contains("300 ms"), "{item}");
    until("the server was told to stop", || async { logged(&timed).await.contains(&"aborted".into()) }).await;
}

#[tokio::test]
async fn call_timeout_ms_must_be_a_positive_number_of_milliseconds_within_an_hour() {
    let (_model, s) = setup(vec![]).await;
    let default = http_tool("timed", &dead_url(), false);
    let body = |tool: Value| json!({"agent": {"model": "m", "tools": [tool]}, "environment": {"type": "none"}});
    let session = s.session(body(default.clone())).await;
    assert_eq!(session["agent"]["tools"][0]["call_timeout_ms"], 60_000, "the default is shown: {session}");
    for bad in [json!(0), json!(-5), json!(3_600_001), json!(1.5), json!("300")] {
        let mut tool = default.clone();
        tool["call_timeout_ms"] = bad.clone();
        let (status, answer) = s.post("/v1/agents/sessions", body(tool)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {answer}");
        assert_eq!(answer["error"]["param"], "agent.tools[0].call_timeout_ms", "{bad}: {answer}");
    }
}

#[tokio::test]
async fn a_required_server_whose_tools_list_fails_fails_the_turn_as_one_that_cannot_initialize() {
    let broken = NodeServer::fixture(super::servers_dir(), "timed.mjs", &["fail-list"]).await;
    let (model, s) = setup(vec![Step::text("never sent")]).await;
    let sid = session_with(&s, json!([http_tool("broken", &broken.url, true)])).await;
    let (_, failed) = run_turn(&s, &sid, "hello").await;
    assert_eq!(failed["status"], "failed", "{failed}");
    let message = failed["error"]["message"].as_str().unwrap();
    assert!(message.contains("'broken'") && message.contains("tools/list"), "{message}");
    assert!(message.contains("could not list its tools"), "{message}");
    assert!(message.contains("the tool catalog is broken"), "the server's own words: {message}");
    assert_plain(message);
    assert_eq!(model.request_count(), 0, "no model call was made");

    let dead = session_with(&s, json!([http_tool("dead", &dead_url(), true)])).await;
    let (_, unreachable) = run_turn(&s, &dead, "hello").await;
    assert_eq!(unreachable["status"], "failed", "{unreachable}");
    assert_eq!(failed["error"]["code"], unreachable["error"]["code"], "the same code: {failed} {unreachable}");
    assert_plain(unreachable["error"]["message"].as_str().unwrap());

    // An optional one is left out of the turn, which goes on.
    let optional = session_with(&s, json!([http_tool("broken", &broken.url, false)])).await;
    let (_, turn) = run_turn(&s, &optional, "hello").await;
    assert_eq!(turn["status"], "completed", "{turn}");
}

#[tokio::test]
async fn a_server_that_dies_during_a_call_is_an_error_in_plain_words() {
    let mut timed = NodeServer::timed().await;
    let (model, s) = setup(vec![hang_call("c_hang", "timed"), Step::text("it died")]).await;
    let sid = session_with(&s, json!([http_tool("timed", &timed.url, true)])).await;
    let turn_id = s.send(&sid, "hang").await;
    until("the tools/call reached the server", || async { logged(&timed).await.contains(&"tools/call".into()) }).await;
    timed.kill().await;
    let turn = s.wait_turn(&sid, &turn_id).await;
    assert_eq!(turn["status"], "completed", "{turn}");
    let seen = tool_result(&model.requests()[1].body, "c_hang");
    assert!(seen.contains("'timed'"), "{seen}");
    assert_plain(&seen);
    let item = &mcp_calls(&turn_items(&s, &sid, &turn_id).await)[0];
    assert_eq!(item["status"], "failed", "{item}");
    assert_plain(item["error"].as_str().unwrap());
}

#[tokio::test]
async fn the_openapi_document_describes_call_timeout_ms() {
    let (_model, s) = setup(vec![]).await;
    let doc: Value = s.http.get(s.url("/v1/openapi.json")).send().await.unwrap().json().await.unwrap();
    // The MCP tool as requests give it and as resources show it, wherever the schemas hold it.
    fn collect<'a>(value: &'a Value, out: &mut Vec<&'a Value>) {
        match value {
            Value::Object(map) => {
                if let Some(props) = map.get("properties").filter(|p| p.get("server_label").is_some())
                    && let Some(field) = props.get("call_timeout_ms")
                {
                    out.push(field);
                }
                map.values().for_each(|v| collect(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| collect(v, out)),
            _ => {}
        }
    }
    let mut fields = Vec::new();
    collect(&doc, &mut fields);
    assert!(fields.len() >= 2, "{fields:?}");
    for field in fields {
        assert_eq!((&field["minimum"], &field["maximum"]), (&json!(1), &json!(3_600_000)), "{field}");
        assert!(field["description"].as_str().is_some_and(|d| d.contains("milliseconds")), "{field}");
    }
}
