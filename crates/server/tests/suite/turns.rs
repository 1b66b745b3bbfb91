//! Turns: input becomes a turn, the engine runs the agent loop against the
//! scripted model over real HTTP, and every step is stored and streamed.

use crate::support::{TestServer, types};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::Duration;
use test_support::model_server::{ModelServer, ScriptedToolCall, Step};

async fn setup(steps: Vec<Step>) -> (ModelServer, TestServer) {
    let model = ModelServer::with_script(steps).await.unwrap();
    let server = TestServer::with_model(&model).await;
    (model, server)
}

fn now_tool() -> Value {
    json!({"type": "function", "name": "now", "description": "The current time",
           "parameters": {"type": "object", "properties": {}}})
}

#[tokio::test]
async fn input_on_create_runs_a_turn_and_streams_every_step() {
    let (model, s) = setup(vec![Step::text("Hello there, friend").chunks(3)]).await;
    let session = s
        .session(json!({"agent": {"model": "gpt-6-luna", "instructions": "Be brief."},
                        "environment": {"type": "none"}, "input": "Say hello"}))
        .await;
    let sid = session["id"].as_str().unwrap();
    let (_, turns) = s.get(&format!("/v1/agents/sessions/{sid}/turns")).await;
    let turn_id = turns["data"][0]["id"].as_str().unwrap().to_string();
    let turn = s.wait_turn(sid, &turn_id).await;
    assert_eq!(turn["status"], "completed", "{turn}");
    assert_eq!(turn["object"], "agent.session.turn");
    assert_eq!(turn["session_id"], sid);
    assert!(turn["started_at"].is_i64() && turn["completed_at"].is_i64());

    let (_, items) = s.get(&format!("/v1/agents/sessions/{sid}/turns/{turn_id}/items?order=asc")).await;
    let items = items["data"].as_array().unwrap().clone();
    assert_eq!(items.len(), 2, "{items:?}");
    assert_eq!(items[0]["role"], "user");
    assert_eq!(items[0]["content"], json!([{"type": "input_text", "text": "Say hello"}]));
    assert_eq!(items[1]["role"], "assistant");
    assert_eq!(items[1]["status"], "completed");
    assert_eq!(items[1]["phase"], "final_answer");
    assert_eq!(items[1]["content"], json!([{"type": "output_text", "text": "Hello there, friend"}]));

    let sent = model.last_request().unwrap();
    assert_eq!(sent["model"], "gpt-6-luna");
    assert_eq!(sent["messages"][0], json!({"role": "system", "content": "Be brief."}));
    assert_eq!(sent["messages"][1]["role"], "user");

    let events = s.events(sid).await;
    let kinds = types(&events);
    let expected = [
        "agent.session.created",
        "agent.session.turn.created",
        "agent.session.turn.item.added",
        "agent.session.turn.in_progress",
        "agent.session.in_progress",
        "agent.session.turn.item.added",
        "agent.session.turn.content_part.added",
        "agent.session.turn.output_text.delta",
        "agent.session.turn.output_text.delta",
        "agent.session.turn.output_text.delta",
        "agent.session.turn.output_text.done",
        "agent.session.turn.content_part.done",
        "agent.session.turn.item.done",
        "agent.session.turn.completed",
        "agent.session.idle",
    ];
    assert_eq!(kinds, expected);
    let deltas: String = events.iter().filter_map(|e| e["delta"].as_str()).collect();
    assert_eq!(deltas, "Hello there, friend");
    let ids: Vec<&str> = events.iter().map(|e| e["event_id"].as_str().unwrap()).collect();
    let mut sorted = ids.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(ids, sorted, "event ids are unique and ordered");
    let (_, session) = s.get(&format!("/v1/agents/sessions/{sid}")).await;
    assert_eq!(session["status"], "idle");
}

#[tokio::test]
async fn the_stream_resumes_after_last_event_id_without_gaps_or_repeats() {
    let (_model, s) = setup(vec![Step::text("one"), Step::text("two")]).await;
    let session = s.session(json!({"agent": {"model": "m"}, "environment": {"type": "none"}})).await;
    let sid = session["id"].as_str().unwrap();
    let t1 = s.send(sid, "first").await;
    s.wait_turn(sid, &t1).await;
    let all = s.events(sid).await;
    let cut = &all[3]["event_id"];
    let t2 = s.send(sid, "second").await;
    s.wait_turn(sid, &t2).await;
    let resp = s
        .http
        .get(s.url(&format!("/v1/agents/sessions/{sid}/events")))
        .bearer_auth(&s.key)
        .header("Last-Event-ID", cut.as_str().unwrap())
        .send()
        .await
        .unwrap();
    let mut body = resp.bytes_stream();
    let mut text = String::new();
    use futures::StreamExt;
    while let Ok(Some(Ok(chunk))) = tokio::time::timeout(Duration::from_millis(300), body.next()).await {
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    let resumed: Vec<Value> =
        text.lines().filter_map(|l| l.strip_prefix("data: ")).map(|d| serde_json::from_str(d).unwrap()).collect();
    let everything = s.events(sid).await;
    assert_eq!(resumed, everything[4..].to_vec(), "exactly the events after the cut, in order");
    assert!(types(&resumed).contains(&"agent.session.turn.completed".to_string()));
}

#[tokio::test]
async fn a_client_function_makes_the_turn_wait_and_its_result_resumes_it() {
    let (model, s) =
        setup(vec![Step::tool_call("now", json!({})).with_text("Let me check."), Step::text("It is noon.")]).await;
    let session =
        s.session(json!({"agent": {"model": "m", "tools": [now_tool()]}, "environment": {"type": "none"}})).await;
    let sid = session["id"].as_str().unwrap();
    let turn_id = s.send(sid, "What time is it?").await;
    let turn = s.wait_turn_status(sid, &turn_id, &["waiting"]).await;
    assert_eq!(turn["status"], "waiting");
    let (_, waiting) = s.get(&format!("/v1/agents/sessions/{sid}")).await;
    assert_eq!(waiting["status"], "requires_action");
    let action = &waiting["required_actions"][0];
    assert_eq!(action["type"], "function_call");
    assert_eq!(action["name"], "now");
    assert_eq!(action["turn_id"], turn_id);
    let call_id = action["call_id"].as_str().unwrap().to_string();

    let result = json!({"events": [{"type": "agent.session.input.tool_result", "turn_id": turn_id, "call_id": call_id,
                                    "success": true, "output": "2026-11-30T12:00:00Z"}]});
    let (status, body) = s.post(&format!("/v1/agents/sessions/{sid}/events"), result.clone()).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let turn = s.wait_turn(sid, &turn_id).await;
    assert_eq!(turn["status"], "completed", "{turn}");

    let sent = model.last_request().unwrap();
    let messages = sent["messages"].as_array().unwrap();
    let tool_msg = messages.iter().find(|m| m["role"] == "tool").expect("the result went back to the model");
    assert_eq!(tool_msg["tool_call_id"], call_id.as_str());
    assert_eq!(tool_msg["content"], "2026-11-30T12:00:00Z");

    let (_, items) = s.get(&format!("/v1/agents/sessions/{sid}/items?order=asc")).await;
    let kinds: Vec<&str> = items["data"].as_array().unwrap().iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["message", "message", "function_call", "function_call_output", "message"]);
    assert_eq!(items["data"][1]["phase"], "commentary");
    assert_eq!(items["data"][2]["status"], "completed");
    assert_eq!(items["data"][3]["output"], "2026-11-30T12:00:00Z");

    // A second answer to the same call is refused in the shape the client recognises.
    let (status, again) = s.post(&format!("/v1/agents/sessions/{sid}/events"), result).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(again["error"]["code"], "invalid_request_error");
    assert_eq!(again["error"]["message"], format!("Unknown pending tool call: {call_id}"));
    let events = s.events(sid).await;
    let kinds = types(&events);
    assert!(kinds.contains(&"agent.session.requires_action".to_string()));
    // The result is a session item (listed above), not an output item of the turn: no item events.
    let item_events: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "agent.session.turn.item.added" || e["type"] == "agent.session.turn.item.done")
        .filter_map(|e| e["item"]["type"].as_str())
        .collect();
    assert!(item_events.contains(&"function_call"), "{item_events:?}");
    assert!(!item_events.contains(&"function_call_output"), "{item_events:?}");
}

#[tokio::test]
async fn input_during_a_turn_is_queued_as_the_next_turn() {
    let (model, s) =
        setup(vec![Step::text("first answer").latency(Duration::from_millis(300)), Step::text("second answer")]).await;
    let session = s.session(json!({"agent": {"model": "m"}, "environment": {"type": "none"}})).await;
    let sid = session["id"].as_str().unwrap();
    let t1 = s.send(sid, "one").await;
    let t2 = s.send(sid, "two").await;
    let (_, second) = s.get(&format!("/v1/agents/sessions/{sid}/turns/{t2}")).await;
    assert_eq!(second["status"], "queued", "never two turns of one session at once");
    let first = s.wait_turn(sid, &t1).await;
    let second = s.wait_turn(sid, &t2).await;
    assert_eq!((first["status"].as_str(), second["status"].as_str()), (Some("completed"), Some("completed")));
    assert!(second["started_at"].as_i64() >= first["completed_at"].as_i64());
    let history = model.last_request().unwrap()["messages"].clone();
    let texts: Vec<&str> = history.as_array().unwrap().iter().filter_map(|m| m["content"].as_str()).collect();
    assert_eq!(texts, ["one", "first answer", "two"], "the second turn sees the first");
}

#[tokio::test]
async fn idempotency_keys_apply_an_input_once() {
    let (model, s) = setup(vec![Step::text("once")]).await;
    let session = s.session(json!({"agent": {"model": "m"}, "environment": {"type": "none"}})).await;
    let sid = session["id"].as_str().unwrap();
    let body = json!({"events": [{"type": "agent.session.input.message", "input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]}]});
    for _ in 0..3 {
        let resp = s
            .http
            .post(s.url(&format!("/v1/agents/sessions/{sid}/events")))
            .bearer_auth(&s.key)
            .header("Idempotency-Key", "abc-123")
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::ACCEPTED);
    }
    let (_, turns) = s.get(&format!("/v1/agents/sessions/{sid}/turns")).await;
    assert_eq!(turns["data"].as_array().unwrap().len(), 1, "{turns}");
    s.wait_turn(sid, turns["data"][0]["id"].as_str().unwrap()).await;
    assert_eq!(model.request_count(), 1);
}

#[tokio::test]
async fn invalid_tool_arguments_go_back_to_the_model_as_the_tool_result() {
    let (model, s) = setup(vec![
        Step::tool_calls([ScriptedToolCall::raw("now", "{not json")]),
        Step::tool_calls([ScriptedToolCall::new("teleport", json!({}))]),
        Step::text("Sorry."),
    ])
    .await;
    let session =
        s.session(json!({"agent": {"model": "m", "tools": [now_tool()]}, "environment": {"type": "none"}})).await;
    let sid = session["id"].as_str().unwrap();
    let turn_id = s.send(sid, "go").await;
    let turn = s.wait_turn(sid, &turn_id).await;
    assert_eq!(turn["status"], "completed", "{turn}");
    let requests = model.requests();
    let second: Vec<Value> = requests[1].body["messages"].as_array().unwrap().clone();
    let tool = second.iter().find(|m| m["role"] == "tool").unwrap();
    assert!(tool["content"].as_str().unwrap().contains("not valid JSON"), "{tool}");
    let third = requests[2].body["messages"].as_array().unwrap().clone();
    let last_tool = third.iter().rev().find(|m| m["role"] == "tool").unwrap();
    assert!(last_tool["content"].as_str().unwrap().contains("unknown tool 'teleport'"), "{last_tool}");
    let (_, items) = s.get(&format!("/v1/agents/sessions/{sid}/items?order=asc")).await;
    let failed: Vec<&Value> = items["data"].as_array().unwrap().iter().filter(|i| i["status"] == "failed").collect();
    assert_eq!(failed.len(), 4, "both calls and both outputs are recorded as failed: {items}");
    assert_eq!(failed[0]["arguments"], "{not json", "the raw arguments are kept");
}
