//! Conversations: the same rows as sessions, with `conv_<uuid>` ids.

use crate::support::{TestServer, assert_error};
use reqwest::StatusCode;
use serde_json::json;

#[tokio::test]
async fn a_conversation_is_the_session_with_the_same_uuid() {
    let s = TestServer::start().await;
    let (status, conv) = s.post("/v1/conversations", json!({"metadata": {"topic": "天気"}})).await;
    assert_eq!(status, StatusCode::OK, "{conv}");
    let id = conv["id"].as_str().unwrap();
    assert_eq!(
        conv,
        json!({"id": id, "object": "conversation", "created_at": conv["created_at"], "metadata": {"topic": "天気"}})
    );
    let uuid = id.strip_prefix("conv_").unwrap();
    let (status, session) = s.get(&format!("/v1/agents/sessions/{uuid}")).await;
    assert_eq!(status, StatusCode::OK, "the Session API shows the same row without conv_");
    assert_eq!(session["metadata"], json!({"topic": "天気"}));

    let agent_session = s.session(json!({"agent": {"model": "m"}, "environment": {"type": "none"}})).await;
    let (status, as_conv) = s.get(&format!("/v1/conversations/conv_{}", agent_session["id"].as_str().unwrap())).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(as_conv["id"], format!("conv_{}", agent_session["id"].as_str().unwrap()));
}

#[tokio::test]
async fn update_replaces_metadata_and_delete_removes_the_session() {
    let s = TestServer::start().await;
    let (_, conv) = s.post("/v1/conversations", json!({})).await;
    let id = conv["id"].as_str().unwrap();
    let (status, updated) = s.post(&format!("/v1/conversations/{id}"), json!({"metadata": {"a": "b"}})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(updated["metadata"], json!({"a": "b"}));
    let got = s.post(&format!("/v1/conversations/{id}"), json!({})).await;
    assert_error(&got, StatusCode::BAD_REQUEST, "invalid_request_error", Some("metadata"));
    let (status, deleted) = s.delete(&format!("/v1/conversations/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(deleted, json!({"id": id, "object": "conversation.deleted", "deleted": true}));
    let uuid = id.strip_prefix("conv_").unwrap();
    assert_eq!(s.get(&format!("/v1/agents/sessions/{uuid}")).await.0, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn malformed_conversation_ids_are_rejected_naming_the_id() {
    let s = TestServer::start().await;
    let got = s.get("/v1/conversations/not-a-conversation").await;
    assert_error(&got, StatusCode::BAD_REQUEST, "invalid_request_error", Some("conversation_id"));
    let got = s.get("/v1/agents/sessions/conv_123").await;
    assert_error(&got, StatusCode::BAD_REQUEST, "invalid_request_error", Some("session_id"));
}
