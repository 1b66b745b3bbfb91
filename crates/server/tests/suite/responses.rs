//! The Responses and Conversations views of sessions and turns.

use crate::support::TestServer;
use reqwest::StatusCode;
use serde_json::{Value, json};
use test_support::model_server::{ModelServer, Step};

async fn setup(steps: Vec<Step>) -> (ModelServer, TestServer) {
    let model = ModelServer::with_script(steps).await.unwrap();
    let server = TestServer::with_model(&model).await;
    (model, server)
}

fn sse_events(text: &str) -> Vec<Value> {
    text.lines().filter_map(|l| l.strip_prefix("data: ")).filter_map(|d| serde_json::from_str(d).ok()).collect()
}

#[tokio::test]
async fn a_response_in_a_conversation_runs_the_sessions_agent_and_answers_with_its_output() {
    let (model, s) = setup(vec![Step::text("Oslo, then Paris.")]).await;
    let agent = s.agent(json!({"model": "gpt-6-luna", "instructions": "Be terse."})).await;
    let session = s.session(json!({"agent_id": agent["id"], "environment": {"type": "none"}})).await;
    let conv = format!("conv_{}", session["id"].as_str().unwrap());
    let (status, resp) = s
        .post("/v1/responses", json!({"model": "ignored-model", "conversation": conv, "input": "List the cities"}))
        .await;
    assert_eq!(status, StatusCode::OK, "{resp}");
    assert!(resp["id"].as_str().unwrap().starts_with("resp_"));
    assert_eq!(resp["object"], "response");
    assert_eq!(resp["status"], "completed");
    assert_eq!(resp["model"], "gpt-6-luna", "the conversation's agent snapshot runs");
    assert_eq!(resp["conversation"]["id"], conv);
    assert_eq!(resp["output"][0]["type"], "message");
    assert_eq!(resp["output"][0]["content"][0]["text"], "Oslo, then Paris.");
    assert_eq!(model.last_request().unwrap()["model"], "gpt-6-luna");

    let turn_id = resp["id"].as_str().unwrap().strip_prefix("resp_").unwrap();
    let (status, turn) =
        s.get(&format!("/v1/agents/sessions/{}/turns/{turn_id}", session["id"].as_str().unwrap())).await;
    assert_eq!(status, StatusCode::OK, "resp_<uuid> is turn <uuid>");
    assert_eq!(turn["status"], "completed");
    let (_, again) = s.get(&format!("/v1/responses/{}", resp["id"].as_str().unwrap())).await;
    assert_eq!(again, resp);
    let (_, inputs) = s.get(&format!("/v1/responses/{}/input_items", resp["id"].as_str().unwrap())).await;
    assert_eq!(inputs["data"][0]["content"][0]["text"], "List the cities");
    let (_, items) = s.get(&format!("/v1/conversations/{conv}/items?order=asc")).await;
    let roles: Vec<&str> = items["data"].as_array().unwrap().iter().map(|i| i["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant"]);
}

#[tokio::test]
async fn a_response_without_a_conversation_starts_one_with_the_request_model() {
    let (model, s) = setup(vec![Step::text("hi"), Step::text("again")]).await;
    let (status, resp) = s
        .post(
            "/v1/responses",
            json!({"model": "m-1", "input": "hello", "instructions": "Be kind.", "temperature": 0.2}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{resp}");
    assert_eq!(resp["model"], "m-1");
    assert_eq!(resp["instructions"], "Be kind.");
    let conv = resp["conversation"]["id"].as_str().unwrap().to_string();
    let (_, second) = s
        .post("/v1/responses", json!({"conversation": {"id": conv}, "input": [{"role": "user", "content": "more"}]}))
        .await;
    assert_eq!(second["status"], "completed", "{second}");
    let history = model.last_request().unwrap()["messages"].clone();
    let texts: Vec<&str> = history.as_array().unwrap().iter().filter_map(|m| m["content"].as_str()).collect();
    assert_eq!(texts, ["Be kind.", "hello", "hi", "more"]);
    let (status, bad) = s.post("/v1/responses", json!({"model": "m", "input": "x", "frobnicate": 1})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}");
}

#[tokio::test]
async fn streaming_a_response_yields_the_responses_event_sequence() {
    let (_model, s) = setup(vec![Step::text("abc def").chunks(2)]).await;
    let resp = s
        .http
        .post(s.url("/v1/responses"))
        .bearer_auth(&s.key)
        .json(&json!({"model": "m", "input": "go", "stream": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let events = sse_events(&resp.text().await.unwrap());
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed"
        ]
    );
    let seq: Vec<u64> = events.iter().map(|e| e["sequence_number"].as_u64().unwrap()).collect();
    assert_eq!(seq, (0..seq.len() as u64).collect::<Vec<_>>());
    assert_eq!(events.last().unwrap()["response"]["output"][0]["content"][0]["text"], "abc def");
}

#[tokio::test]
async fn function_calls_complete_the_response_and_function_call_output_continues_it() {
    let (model, s) = setup(vec![Step::tool_call("now", json!({})), Step::text("It is noon.")]).await;
    let tools = [
        json!({"type": "function", "name": "now", "description": "time", "parameters": {"type": "object", "properties": {}}}),
    ];
    let (_, first) = s.post("/v1/responses", json!({"model": "m", "input": "time?", "tools": tools})).await;
    assert_eq!(first["status"], "completed", "{first}");
    let call = &first["output"][0];
    assert_eq!(call["type"], "function_call");
    assert_eq!(call["name"], "now");
    assert_eq!(call["arguments"], "{}");
    let conv = first["conversation"]["id"].as_str().unwrap();
    let (status, second) = s
        .post("/v1/responses", json!({"conversation": conv, "input": [{"type": "function_call_output", "call_id": call["call_id"], "output": "12:00"}]}))
        .await;
    assert_eq!(status, StatusCode::OK, "{second}");
    assert_eq!(second["status"], "completed");
    let last = second["output"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["content"][0]["text"], "It is noon.");
    let sent = model.last_request().unwrap();
    assert!(sent["messages"].as_array().unwrap().iter().any(|m| m["role"] == "tool" && m["content"] == "12:00"));
}

#[tokio::test]
async fn background_responses_return_at_once_and_can_be_cancelled() {
    let (_model, s) = setup(vec![Step::stall()]).await;
    let (status, resp) = s.post("/v1/responses", json!({"model": "m", "input": "wait", "background": true})).await;
    assert_eq!(status, StatusCode::OK, "{resp}");
    assert!(matches!(resp["status"].as_str(), Some("queued" | "in_progress")), "{resp}");
    assert_eq!(resp["background"], true);
    let id = resp["id"].as_str().unwrap();
    let (status, cancelled) = s.post(&format!("/v1/responses/{id}/cancel"), json!({})).await;
    assert_eq!(status, StatusCode::OK, "{cancelled}");
    assert_eq!(cancelled["status"], "cancelled");
    let (status, _) = s.get("/v1/responses/resp_00000000-0000-4000-8000-000000000000").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = s.get("/v1/responses/nope").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn conversation_items_can_be_added_and_the_model_sees_them() {
    let (model, s) = setup(vec![Step::text("noted")]).await;
    let (_, conv) = s
        .post(
            "/v1/conversations",
            json!({"items": [{"type": "message", "role": "user", "content": "My name is Ada."}]}),
        )
        .await;
    let id = conv["id"].as_str().unwrap();
    let (status, added) = s
        .post(
            &format!("/v1/conversations/{id}/items"),
            json!({"items": [
        {"role": "assistant", "content": [{"type": "input_text", "text": "Hello Ada."}]}]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{added}");
    assert_eq!(added["data"][0]["role"], "assistant");
    let (_, resp) = s.post("/v1/responses", json!({"model": "m", "conversation": id, "input": "Who am I?"})).await;
    assert_eq!(resp["status"], "completed", "{resp}");
    let texts: Vec<String> = model.last_request().unwrap()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .collect();
    assert_eq!(texts, ["My name is Ada.", "Hello Ada.", "Who am I?"]);
}

#[tokio::test]
async fn items_added_between_turns_reach_the_next_turns_history() {
    let (model, s) = setup(vec![Step::text("first"), Step::text("second")]).await;
    let (_, r1) = s.post("/v1/responses", json!({"model": "m", "input": "one"})).await;
    let conv = r1["conversation"]["id"].as_str().unwrap().to_string();
    let (status, _) = s
        .post(&format!("/v1/conversations/{conv}/items"), json!({"items": [{"role": "user", "content": "an aside"}]}))
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, r2) = s.post("/v1/responses", json!({"conversation": conv, "input": "two"})).await;
    assert_eq!(r2["status"], "completed", "{r2}");
    let texts: Vec<String> = model.last_request().unwrap()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .collect();
    assert_eq!(texts, ["one", "first", "an aside", "two"], "the kept history was refreshed after the aside");
}
