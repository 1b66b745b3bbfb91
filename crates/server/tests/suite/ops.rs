//! Operations: health, readiness, metrics, bootstrap and durability across
//! a restart (the OpenAPI document has a suite of its own).

use crate::support::TestServer;
use reqwest::StatusCode;
use serde_json::json;
use std::os::unix::fs::PermissionsExt;

#[tokio::test]
async fn health_readiness_and_metrics_answer() {
    let s = TestServer::start().await;
    assert_eq!(s.http.get(s.url("/healthz")).send().await.unwrap().status(), StatusCode::OK);
    assert_eq!(s.http.get(s.url("/readyz")).send().await.unwrap().status(), StatusCode::OK);
    s.agent(json!({"model": "m"})).await;
    s.get("/v1/agents/nope").await;
    let text = s.http.get(s.url("/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(text.contains(r#"rebyte_http_requests_total{route="/v1/agents",method="POST",status="200"} 1"#), "{text}");
    assert!(
        text.contains(r#"route="/v1/agents/{agent_id}",method="GET",status="404""#),
        "routes are templates, not raw paths"
    );
    assert!(text.contains("rebyte_http_request_duration_seconds_bucket"), "{text}");
}

#[tokio::test]
async fn first_start_writes_the_bootstrap_key_with_mode_0600() {
    let dir = tempfile::tempdir().unwrap();
    let config = server::Config::new(dir.path());
    let store = server::open_store(&config).await.unwrap();
    server::bootstrap::run(store.as_ref(), &config).await.unwrap();
    let path = dir.path().join("bootstrap-key");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let key = std::fs::read_to_string(&path).unwrap();
    let record = store.find_api_key(&server::keys::hash_secret(key.trim())).await.unwrap().unwrap();
    assert_eq!(record.scopes.len(), 5, "the bootstrap key has every scope");
    // A second start makes no new organization or key.
    server::bootstrap::run(store.as_ref(), &config).await.unwrap();
    assert_eq!(store.count_organizations().await.unwrap(), 1);
    assert_eq!(store.list_api_keys(None).await.unwrap().len(), 1);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), key, "the key is not replaced");
}

#[tokio::test]
async fn everything_survives_a_restart() {
    let s = TestServer::start().await;
    let agent = s.agent(json!({"model": "m"})).await;
    let session = s.session(json!({"agent_id": agent["id"], "environment": {"type": "none"}})).await;
    let key = s.key.clone();
    let dir = s.stop().await;
    let s2 = TestServer::start_in(dir, |c| c.bootstrap_key = Some(key.clone())).await;
    assert_eq!(s2.get(&format!("/v1/agents/{}", agent["id"].as_str().unwrap())).await.1, agent);
    assert_eq!(s2.get(&format!("/v1/agents/sessions/{}", session["id"].as_str().unwrap())).await.1, session);
}
