//! Keys and organizations: 401 for bad keys, 403 naming the scope, 404 for
//! another organization's ids (never 403, never a hint that it exists).

use crate::support::{TestServer, assert_error, test_key};
use reqwest::{Method, StatusCode};
use serde_json::json;

#[tokio::test]
async fn missing_unknown_and_revoked_keys_answer_401() {
    let s = TestServer::start().await;
    let missing = s.call_as(None, Method::GET, "/v1/agents", None).await;
    assert_error(&missing, StatusCode::UNAUTHORIZED, "authentication_error", None);
    let unknown = s.call_as(Some(&test_key("nope")), Method::GET, "/v1/agents", None).await;
    assert_error(&unknown, StatusCode::UNAUTHORIZED, "authentication_error", None);
    let garbage = s.call_as(Some("not a key at all"), Method::GET, "/v1/agents", None).await;
    assert_error(&garbage, StatusCode::UNAUTHORIZED, "authentication_error", None);

    let (org, key) = s.org_with_key("acme", &["tasks:read"]).await;
    assert_eq!(s.call_as(Some(&key), Method::GET, "/v1/agents", None).await.0, StatusCode::OK);
    let (_, keys) = s.get("/v1/admin/keys").await;
    let key_id = keys["data"].as_array().unwrap().iter().find(|k| k["organization_id"] == org.as_str()).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!keys.to_string().contains(&key), "listing keys never shows a secret");
    let (status, revoked) = s.delete(&format!("/v1/admin/keys/{key_id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(revoked["revoked_at"].is_i64());
    let after = s.call_as(Some(&key), Method::GET, "/v1/agents", None).await;
    assert_error(&after, StatusCode::UNAUTHORIZED, "authentication_error", None);
    assert!(after.1["error"]["message"].as_str().unwrap().contains("revoked"));
}

#[tokio::test]
async fn a_missing_scope_answers_403_naming_it() {
    let s = TestServer::start().await;
    let (_, reader) = s.org_with_key("readers", &["tasks:read"]).await;
    let got = s.call_as(Some(&reader), Method::POST, "/v1/agents", Some(json!({"model": "m"}))).await;
    assert_error(&got, StatusCode::FORBIDDEN, "permission_error", None);
    assert_eq!(got.1["error"]["code"], "missing_scope");
    assert!(got.1["error"]["message"].as_str().unwrap().contains("tasks:write"));
    let got = s.call_as(Some(&reader), Method::POST, "/v1/admin/organizations", Some(json!({"name": "x"}))).await;
    assert!(got.1["error"]["message"].as_str().unwrap().contains("admin"), "{}", got.1);
    let (_, writer) = s.org_with_key("writers", &["tasks:write"]).await;
    let got = s.call_as(Some(&writer), Method::GET, "/v1/agents", None).await;
    assert!(got.1["error"]["message"].as_str().unwrap().contains("tasks:read"), "{}", got.1);
}

#[tokio::test]
async fn another_organizations_ids_answer_404_on_every_endpoint() {
    let s = TestServer::start().await;
    let agent = s.agent(json!({"model": "m"})).await;
    let agent_id = agent["id"].as_str().unwrap();
    let session = s.session(json!({"agent_id": agent_id, "environment": {"type": "none"}})).await;
    let sid = session["id"].as_str().unwrap();
    let (_, other) = s.org_with_key("other", &["tasks:read", "tasks:write"]).await;
    let o = Some(other.as_str());
    let cases = [
        (Method::GET, format!("/v1/agents/{agent_id}"), None),
        (Method::POST, format!("/v1/agents/{agent_id}"), Some(json!({"name": "x"}))),
        (Method::DELETE, format!("/v1/agents/{agent_id}"), None),
        (Method::GET, format!("/v1/agents/sessions/{sid}"), None),
        (Method::POST, format!("/v1/agents/sessions/{sid}"), Some(json!({"metadata": {}}))),
        (Method::DELETE, format!("/v1/agents/sessions/{sid}"), None),
        (Method::GET, format!("/v1/conversations/conv_{sid}"), None),
        (Method::POST, format!("/v1/conversations/conv_{sid}"), Some(json!({"metadata": {}}))),
        (Method::DELETE, format!("/v1/conversations/conv_{sid}"), None),
    ];
    for (method, path, body) in cases {
        let got = s.call_as(o, method.clone(), &path, body).await;
        assert_error(&got, StatusCode::NOT_FOUND, "not_found_error", None);
    }
    let got = s
        .call_as(
            o,
            Method::POST,
            "/v1/agents/sessions",
            Some(json!({"agent_id": agent_id, "environment": {"type": "none"}})),
        )
        .await;
    assert_error(&got, StatusCode::NOT_FOUND, "not_found_error", None);
    let (_, list) = s.call_as(o, Method::GET, "/v1/agents/sessions", None).await;
    assert_eq!(list["data"], json!([]), "lists show only the caller's organization");
    let (_, list) = s.call_as(o, Method::GET, "/v1/agents", None).await;
    assert_eq!(list["data"], json!([]));
    let (_, list) = s.call_as(o, Method::GET, &format!("/v1/agents?after={agent_id}"), None).await;
    assert!(list.get("error").is_some(), "a foreign cursor is unknown: {list}");

    // Nothing was changed by the foreign calls.
    let (status, still) = s.get(&format!("/v1/agents/sessions/{sid}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(still, session);
}

#[tokio::test]
async fn keys_are_stored_hashed() {
    let s = TestServer::start().await;
    let (_, key) = s.org_with_key("hashes", &["tasks:read"]).await;
    let dir = s.stop().await;
    let db = std::fs::read(dir.path().join("rebyte.db")).unwrap_or_default();
    let wal = std::fs::read(dir.path().join("rebyte.db-wal")).unwrap_or_default();
    let needle = key.as_bytes();
    for bytes in [db, wal] {
        assert!(!bytes.windows(needle.len()).any(|w| w == needle), "the secret is not stored");
    }
}
