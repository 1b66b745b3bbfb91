//! Saved agents: create, retrieve, update (a new version), list, delete.

use crate::support::{TestServer, assert_error};
use reqwest::StatusCode;
use serde_json::json;

#[tokio::test]
async fn create_returns_the_whole_resolved_agent() {
    let s = TestServer::start().await;
    let agent = s
        .agent(json!({
            "model": "gpt-6-luna",
            "name": "Réviseur 📚",
            "instructions": "Be careful.",
            "metadata": {"team": "données"},
            "tools": [
                {"type": "function", "name": "now", "description": "The time", "parameters": {"type": "object", "properties": {}}},
                {"type": "mcp", "server_label": "files", "required": true,
                 "transport": {"type": "stdio", "command": "npx", "cwd": "/workspace", "args": ["-y", "x"], "env": {"A": "secret-env"}}}
            ]
        }))
        .await;
    let id = agent["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("agent_"));
    let expected = json!({
        "id": id, "object": "agent", "created_at": agent["created_at"], "updated_at": agent["created_at"], "version": 1,
        "name": "Réviseur 📚", "instructions": "Be careful.", "metadata": {"team": "données"}, "model": "gpt-6-luna",
        "multi_agent": {"enabled": false, "max_concurrent_subagents": null},
        "reasoning": {"effort": null, "summary": null}, "service_tier": "auto",
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tools": [
            {"type": "function", "name": "now", "description": "The time", "parameters": {"type": "object", "properties": {}}, "defer_loading": false},
            {"type": "mcp", "server_label": "files", "required": true, "allowed_tools": null, "call_timeout_ms": 60000, "connection_origin": "environment",
             "credential_id": null, "request_metadata": {}, "require_approval": "never",
             "transport": {"type": "stdio", "command": "npx", "cwd": "/workspace", "args": ["-y", "x"], "env_vars": []}}
        ],
        "compaction": null, "experimental": null, "max_steps": 50
    });
    assert_eq!(agent, expected);
    let (status, fetched) = s.get(&format!("/v1/agents/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(fetched, expected, "retrieve answers what create answered");
    assert!(!fetched.to_string().contains("secret-env"), "inline stdio env is never returned");
}

#[tokio::test]
async fn update_makes_a_new_version_and_keeps_omitted_fields() {
    let s = TestServer::start().await;
    let agent = s.agent(json!({"model": "m1", "name": "a", "instructions": "one", "metadata": {"k": "v"}})).await;
    let id = agent["id"].as_str().unwrap();
    let (status, updated) = s.post(&format!("/v1/agents/{id}"), json!({"instructions": "two", "name": null})).await;
    assert_eq!(status, StatusCode::OK, "{updated}");
    assert_eq!(updated["version"], 2);
    assert_eq!(updated["instructions"], "two");
    assert_eq!(updated["name"], json!(null), "null clears");
    assert_eq!(updated["model"], "m1", "omitted keeps");
    assert_eq!(updated["metadata"], json!({"k": "v"}));
    assert_eq!(updated["created_at"], agent["created_at"]);
    let (_, cleared) = s.post(&format!("/v1/agents/{id}"), json!({"metadata": null, "tools": null})).await;
    assert_eq!(cleared["metadata"], json!({}));
    assert_eq!(cleared["tools"], json!([]));
    assert_eq!(cleared["version"], 3);
    let (status, body) = s.post(&format!("/v1/agents/{id}"), json!({"model": null})).await;
    assert_error(&(status, body), StatusCode::BAD_REQUEST, "invalid_request_error", Some("model"));
}

#[tokio::test]
async fn list_pages_with_limit_after_before_and_order() {
    let s = TestServer::start().await;
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(s.agent(json!({"model": format!("m{i}")})).await["id"].as_str().unwrap().to_string());
    }
    let (_, page) = s.get("/v1/agents?limit=2").await;
    assert_eq!(page["object"], "list");
    let got: Vec<&str> = page["data"].as_array().unwrap().iter().map(|a| a["id"].as_str().unwrap()).collect();
    assert_eq!(got, vec![ids[4].as_str(), ids[3].as_str()], "newest first by default");
    assert_eq!(page["has_more"], true);
    assert_eq!(page["first_id"], ids[4]);
    assert_eq!(page["last_id"], ids[3]);

    let (_, next) = s.get(&format!("/v1/agents?limit=2&after={}", ids[3])).await;
    let got: Vec<&str> = next["data"].as_array().unwrap().iter().map(|a| a["id"].as_str().unwrap()).collect();
    assert_eq!(got, vec![ids[2].as_str(), ids[1].as_str()]);

    let (_, asc) = s.get(&format!("/v1/agents?order=asc&after={}", ids[2])).await;
    let got: Vec<&str> = asc["data"].as_array().unwrap().iter().map(|a| a["id"].as_str().unwrap()).collect();
    assert_eq!(got, vec![ids[3].as_str(), ids[4].as_str()]);
    assert_eq!(asc["has_more"], false);

    let (_, before) = s.get(&format!("/v1/agents?limit=2&before={}", ids[1])).await;
    let got: Vec<&str> = before["data"].as_array().unwrap().iter().map(|a| a["id"].as_str().unwrap()).collect();
    assert_eq!(got, vec![ids[3].as_str(), ids[2].as_str()], "before gives the page just ahead, in list order");
}

#[tokio::test]
async fn deleting_an_agent_deletes_no_session() {
    let s = TestServer::start().await;
    let agent = s.agent(json!({"model": "m"})).await;
    let id = agent["id"].as_str().unwrap();
    let session = s.session(json!({"agent_id": id, "environment": {"type": "none"}})).await;
    let (status, deleted) = s.delete(&format!("/v1/agents/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(deleted, json!({"id": id, "object": "agent.deleted", "deleted": true}));
    assert_eq!(s.get(&format!("/v1/agents/{id}")).await.0, StatusCode::NOT_FOUND);
    let (status, kept) = s.get(&format!("/v1/agents/sessions/{}", session["id"].as_str().unwrap())).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(kept["agent"]["id"], id);
    assert_eq!(s.delete(&format!("/v1/agents/{id}")).await.0, StatusCode::NOT_FOUND, "a second delete finds nothing");
}

#[tokio::test]
async fn saved_agents_refuse_inline_http_secrets() {
    let s = TestServer::start().await;
    let got = s
        .post(
            "/v1/agents",
            json!({"model": "m", "tools": [{"type": "mcp", "server_label": "company",
                "transport": {"type": "http", "server_url": "https://mcp.example.com/mcp", "authorization": "Bearer t0ken"}}]}),
        )
        .await;
    assert_error(&got, StatusCode::BAD_REQUEST, "invalid_request_error", Some("tools[0].transport.authorization"));
    assert!(!got.1.to_string().contains("t0ken"), "the error does not echo the secret");
    assert_eq!(s.get("/v1/agents").await.1["data"], json!([]), "nothing written on a rejected request");
}
