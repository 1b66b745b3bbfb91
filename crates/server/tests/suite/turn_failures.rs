//! Turns that do not complete: cancellation, step limits, model failures.
//! Each ends with a clear error and leaves the session ready for more input.

use crate::support::{TestServer, types};
use reqwest::StatusCode;
use serde_json::json;
use std::time::{Duration, Instant};
use test_support::model_server::{ModelServer, Step};

async fn setup(steps: Vec<Step>) -> (ModelServer, TestServer) {
    let model = ModelServer::with_script(steps).await.unwrap();
    let server = TestServer::with_model(&model).await;
    (model, server)
}

async fn new_session(s: &TestServer, agent: serde_json::Value) -> String {
    s.session(json!({"agent": agent, "environment": {"type": "none"}})).await["id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn cancel_stops_the_model_stream_at_once_and_the_session_takes_new_input() {
    let (model, s) =
        setup(vec![Step::text("never finished").chunks(2).stall_after(2), Step::text("after cancel")]).await;
    let sid = new_session(&s, json!({"model": "m"})).await;
    let turn_id = s.send(sid.as_str(), "go").await;
    s.wait_turn_status(&sid, &turn_id, &["in_progress"]).await;
    // Wait until the first delta arrived, so that the stream is really open.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !types(&s.events(&sid).await).contains(&"agent.session.turn.output_text.delta".to_string()) {
        assert!(Instant::now() < deadline);
    }
    let started = Instant::now();
    let (status, body) = s
        .post(&format!("/v1/agents/sessions/{sid}/events"), json!({"events": [{"type": "agent.session.input.cancel"}]}))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let turn = s.wait_turn(&sid, &turn_id).await;
    assert_eq!(turn["status"], "cancelled");
    assert!(started.elapsed() < Duration::from_secs(1), "cancel is immediate, not a timeout");
    let (_, items) = s.get(&format!("/v1/agents/sessions/{sid}/turns/{turn_id}/items?order=asc")).await;
    assert_eq!(items["data"][1]["status"], "incomplete", "the partial answer is kept as incomplete");
    let next = s.send(&sid, "again").await;
    assert_eq!(s.wait_turn(&sid, &next).await["status"], "completed");
    assert_eq!(model.request_count(), 2);
}

#[tokio::test]
async fn cancel_with_no_active_turn_is_a_clear_400() {
    let (_model, s) = setup(vec![]).await;
    let sid = new_session(&s, json!({"model": "m"})).await;
    let (status, body) = s
        .post(&format!("/v1/agents/sessions/{sid}/events"), json!({"events": [{"type": "agent.session.input.cancel"}]}))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["code"], "no_active_turn");
}

#[tokio::test]
async fn a_turn_that_reaches_max_steps_fails_with_max_steps_exceeded() {
    let call = || Step::tool_call("now", json!({}));
    let (_model, s) = setup(vec![call(), call(), call()]).await;
    let tool = json!({"type": "function", "name": "lookup", "description": "", "parameters": {"type": "object"}});
    let sid = new_session(&s, json!({"model": "m", "tools": [tool], "max_steps": 2})).await;
    let turn_id = s.send(&sid, "loop forever").await;
    let turn = s.wait_turn(&sid, &turn_id).await;
    assert_eq!(turn["status"], "failed");
    assert_eq!(turn["error"]["code"], "invalid_request", "the client's category");
    let message = turn["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("max_steps_exceeded: ") && message.contains('2'), "{message}");
    let (_, session) = s.get(&format!("/v1/agents/sessions/{sid}")).await;
    assert_eq!(session["status"], "idle", "a failed turn leaves the session ready");
}

#[tokio::test]
async fn an_upstream_error_fails_the_turn_naming_the_provider_and_status() {
    let (_model, s) = setup(vec![Step::error(400, r#"{"error":{"message":"bad things"}}"#)]).await;
    let sid = new_session(&s, json!({"model": "gpt-x"})).await;
    let turn_id = s.send(&sid, "hi").await;
    let turn = s.wait_turn(&sid, &turn_id).await;
    assert_eq!(turn["status"], "failed");
    let message = turn["error"]["message"].as_str().unwrap();
    assert!(message.contains("gpt-x") && message.contains("openai") && message.contains("400"), "{message}");
    let events = s.events(&sid).await;
    let error = events.iter().find(|e| e["type"] == "error").expect("an error event");
    assert_eq!(error["error"]["message"], message);
}

#[tokio::test]
async fn a_stream_that_stops_midway_fails_the_turn_instead_of_hanging() {
    let (_model, s) =
        setup(vec![Step::text("half an ans").chunks(4).cut_after(2), Step::text("x").stall_after(1)]).await;
    let sid = new_session(&s, json!({"model": "m"})).await;
    let t1 = s.send(&sid, "one").await;
    let turn = s.wait_turn(&sid, &t1).await;
    assert_eq!(turn["status"], "failed");
    assert!(turn["error"]["message"].as_str().unwrap().contains("stream"), "{turn}");
    let started = Instant::now();
    let t2 = s.send(&sid, "two").await;
    let turn = s.wait_turn(&sid, &t2).await;
    assert_eq!(turn["status"], "failed", "a stalled stream times out");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(turn["error"]["message"].as_str().unwrap().contains("timed out"), "{turn}");
}

#[tokio::test]
async fn an_unknown_model_with_no_provider_fails_the_turn_naming_the_model() {
    let s = TestServer::start_with(|c| c.models_toml = Some(String::new())).await;
    let sid = new_session(&s, json!({"model": "mystery-model-9"})).await;
    let turn_id = s.send(&sid, "hi").await;
    let turn = s.wait_turn(&sid, &turn_id).await;
    assert_eq!(turn["status"], "failed");
    assert!(turn["error"]["message"].as_str().unwrap().contains("mystery-model-9"), "{turn}");
}

#[tokio::test]
async fn unknown_input_types_and_bad_tool_results_are_rejected() {
    let (_model, s) = setup(vec![]).await;
    let sid = new_session(&s, json!({"model": "m"})).await;
    let path = format!("/v1/agents/sessions/{sid}/events");
    let (status, body) = s.post(&path, json!({"events": [{"type": "agent.session.input.teleport"}]})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["error"]["param"].as_str().unwrap().starts_with("events[0]"), "{body}");
    let (status, body) = s.post(&path, json!({"events": []})).await;
    assert_eq!((status, body["error"]["param"].as_str()), (StatusCode::BAD_REQUEST, Some("events")));
    let stray = json!({"events": [{"type": "agent.session.input.tool_result", "turn_id": "00000000-0000-4000-8000-000000000000",
                                   "call_id": "call_nope", "success": true, "output": "x"}]});
    let (status, body) = s.post(&path, stray).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["message"], "Unknown pending tool call: call_nope");
    let (status, _) = s.post(&path, json!({"events": [{"type": "agent.session.input.message", "input": []}]})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (_, turns) = s.get(&format!("/v1/agents/sessions/{sid}/turns")).await;
    assert_eq!(turns["data"], json!([]), "nothing was submitted");
}
