//! Sessions: creation from a saved agent and/or inline config, the version pin,
//! update, list filters, delete.

use crate::support::{TestServer, assert_error};
use reqwest::StatusCode;
use serde_json::json;

#[tokio::test]
async fn a_session_pins_the_agent_version_current_at_its_creation() {
    let s = TestServer::start().await;
    let agent = s.agent(json!({"model": "m1", "instructions": "v1"})).await;
    let id = agent["id"].as_str().unwrap();
    let old = s.session(json!({"agent_id": id, "environment": {"type": "none"}})).await;
    s.post(&format!("/v1/agents/{id}"), json!({"instructions": "v2", "model": "m2"})).await;
    let new = s.session(json!({"agent_id": id, "environment": {"type": "none"}})).await;

    let (_, old_now) = s.get(&format!("/v1/agents/sessions/{}", old["id"].as_str().unwrap())).await;
    assert_eq!(old_now["agent"]["instructions"], "v1", "Existing Conversations keep their creation-time snapshot.");
    assert_eq!(old_now["agent"]["model"], "m1");
    assert_eq!(old_now["agent"]["version"], 1);
    assert_eq!(new["agent"]["instructions"], "v2", "Updating the Agent affects new Conversations.");
    assert_eq!(new["agent"]["version"], 2);
}

#[tokio::test]
async fn create_returns_the_whole_session_resource() {
    let s = TestServer::start().await;
    let session = s
        .session(json!({"agent": {"model": "gpt-6-luna", "instructions": "hi"}, "environment": {"type": "none"},
                        "metadata": {"user": "42"}}))
        .await;
    let id = session["id"].as_str().unwrap();
    assert!(protocol::ids::SessionId::parse(id).is_some(), "session ids are bare UUIDs: {id}");
    let expected = json!({
        "id": id, "object": "agent.session",
        "agent": {"id": "agent_inline", "version": null, "instructions": "hi", "model": "gpt-6-luna",
                  "multi_agent": {"enabled": false, "max_concurrent_subagents": null}, "name": null,
                  "reasoning": {"effort": null, "summary": null}, "service_tier": "auto",
                  "text": {"format": {"type": "text"}, "verbosity": "medium"}, "tools": [],
                  "compaction": null, "experimental": null, "max_steps": 50},
        "created_at": session["created_at"], "environment": {"type": "none"}, "error": null,
        "last_active_at": session["created_at"], "metadata": {"user": "42"}, "required_actions": [],
        "status": "idle", "usage": null, "vault_ids": [], "prompt_cache_options": null, "review": "none"
    });
    assert_eq!(session, expected);
}

#[tokio::test]
async fn inline_agent_fields_override_the_saved_agent_and_tools_replace_the_whole_list() {
    let s = TestServer::start().await;
    let agent = s
        .agent(json!({"model": "m", "instructions": "saved", "name": "n",
            "tools": [{"type": "function", "name": "a", "description": "", "parameters": {}},
                      {"type": "function", "name": "b", "description": "", "parameters": {}}]}))
        .await;
    let session = s
        .session(json!({"agent_id": agent["id"], "environment": {"type": "none"},
            "agent": {"instructions": "override", "tools": [{"type": "function", "name": "c", "description": "", "parameters": {}}]}}))
        .await;
    assert_eq!(session["agent"]["instructions"], "override");
    assert_eq!(session["agent"]["model"], "m");
    assert_eq!(session["agent"]["name"], "n");
    let names: Vec<&str> =
        session["agent"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, vec!["c"], "Supplying Session agent.tools replaces the entire saved list");
}

#[tokio::test]
async fn a_session_needs_a_model_or_an_agent_id() {
    let s = TestServer::start().await;
    let got = s.post("/v1/agents/sessions", json!({"environment": {"type": "none"}})).await;
    assert_error(&got, StatusCode::BAD_REQUEST, "invalid_request_error", Some("agent.model"));
    let got = s
        .post(
            "/v1/agents/sessions",
            json!({"agent_id": "agent_00000000000000000000000000000000", "environment": {"type": "none"}}),
        )
        .await;
    assert_error(&got, StatusCode::NOT_FOUND, "not_found_error", None);
    let got = s.post("/v1/agents/sessions", json!({"agent": {"model": "m"}})).await;
    assert_error(&got, StatusCode::BAD_REQUEST, "invalid_request_error", Some("environment"));
    assert_eq!(s.get("/v1/agents/sessions").await.1["data"], json!([]), "nothing written on a rejected request");
}

#[tokio::test]
async fn update_changes_metadata_and_future_agent_settings() {
    let s = TestServer::start().await;
    let session =
        s.session(json!({"agent": {"model": "m"}, "environment": {"type": "none"}, "metadata": {"a": "1"}})).await;
    let path = format!("/v1/agents/sessions/{}", session["id"].as_str().unwrap());
    let (status, updated) = s
        .post(&path, json!({"metadata": {"b": "2"}, "agent": {"model": "m2", "reasoning": {"effort": "high"}}, "review": "auto_review"}))
        .await;
    assert_eq!(status, StatusCode::OK, "{updated}");
    assert_eq!(updated["metadata"], json!({"b": "2"}), "metadata is replaced whole");
    assert_eq!(updated["agent"]["model"], "m2");
    assert_eq!(updated["agent"]["reasoning"]["effort"], "high");
    assert_eq!(updated["review"], "auto_review");
    let (_, cleared) = s.post(&path, json!({"metadata": null})).await;
    assert_eq!(cleared["metadata"], json!({}));
    assert_eq!(s.get(&path).await.1, cleared);
}

#[tokio::test]
async fn list_filters_by_agent_id_and_metadata() {
    let s = TestServer::start().await;
    let a = s.agent(json!({"model": "m"})).await;
    let b = s.agent(json!({"model": "m"})).await;
    let s1 = s
        .session(json!({"agent_id": a["id"], "environment": {"type": "none"}, "metadata": {"tier": "gold", "x": "1"}}))
        .await;
    let s2 =
        s.session(json!({"agent_id": b["id"], "environment": {"type": "none"}, "metadata": {"tier": "gold"}})).await;
    s.session(json!({"agent_id": a["id"], "environment": {"type": "none"}, "metadata": {"tier": "tin"}})).await;

    let ids = |v: &serde_json::Value| -> Vec<String> {
        v["data"].as_array().unwrap().iter().map(|x| x["id"].as_str().unwrap().to_string()).collect()
    };
    let (_, gold) = s.get("/v1/agents/sessions?metadata%5Btier%5D=gold").await;
    assert_eq!(ids(&gold), vec![s2["id"].as_str().unwrap(), s1["id"].as_str().unwrap()]);
    let (_, gold_a) =
        s.get(&format!("/v1/agents/sessions?metadata[tier]=gold&agent_id={}", a["id"].as_str().unwrap())).await;
    assert_eq!(ids(&gold_a), vec![s1["id"].as_str().unwrap()]);
    let (_, both) = s.get("/v1/agents/sessions?metadata[tier]=gold&metadata[x]=1").await;
    assert_eq!(ids(&both), vec![s1["id"].as_str().unwrap()], "All supplied pairs must match.");
}

#[tokio::test]
async fn delete_answers_the_deleted_shape_then_404() {
    let s = TestServer::start().await;
    let session = s.session(json!({"agent": {"model": "m"}, "environment": {"type": "none"}})).await;
    let id = session["id"].as_str().unwrap();
    let (status, body) = s.delete(&format!("/v1/agents/sessions/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, json!({"id": id, "object": "agent.session.deleted", "deleted": true}));
    assert_eq!(s.get(&format!("/v1/agents/sessions/{id}")).await.0, StatusCode::NOT_FOUND);
    assert_eq!(s.delete(&format!("/v1/agents/sessions/{id}")).await.0, StatusCode::NOT_FOUND);
}
