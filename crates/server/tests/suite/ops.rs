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

/// The permission bits of `path`.
fn mode_of(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())).permissions().mode() & 0o777
}

/// Starts a server (SQLite) on `data_dir` and checks that the directory is
/// 0700 and the database (with its -wal and -shm) and master.key are 0600.
async fn assert_private_after_start(data_dir: &std::path::Path) {
    let mut config = server::Config::new(data_dir);
    config.bootstrap_key = Some(crate::support::test_key("boot"));
    let state = server::start(&config).await.unwrap();
    assert_eq!(mode_of(data_dir), 0o700, "the data directory");
    for name in ["rebyte.db", "rebyte.db-wal", "rebyte.db-shm", "master.key"] {
        assert_eq!(mode_of(&data_dir.join(name)), 0o600, "{name}");
    }
    drop(state);
}

#[tokio::test]
async fn the_data_directory_and_database_files_are_private_to_their_owner() {
    let tmp = tempfile::tempdir().unwrap();
    // A fresh data directory, created by the server (its parent too).
    assert_private_after_start(&tmp.path().join("new").join("data")).await;
    // One made beforehand with the usual umask, holding an (empty) database file.
    let existing = tmp.path().join("existing");
    std::fs::create_dir(&existing).unwrap();
    std::fs::set_permissions(&existing, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(existing.join("rebyte.db"), b"").unwrap();
    std::fs::set_permissions(existing.join("rebyte.db"), std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_private_after_start(&existing).await;
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

#[tokio::test]
async fn readiness_shows_the_cluster_and_a_second_node_under_a_running_ones_id_is_refused() {
    let s = TestServer::start_with(|c| c.node_id = Some("alpha".into())).await;
    let ready: serde_json::Value = s.http.get(s.url("/readyz")).send().await.unwrap().json().await.unwrap();
    assert_eq!(ready["status"], "ready");
    let Some(url) = crate::support::test_database(s.dir.path()) else {
        assert!(ready.get("nodes").is_none(), "SQLite is one node: {ready}");
        return;
    };
    assert_eq!(ready["node"]["id"], "alpha", "{ready}");
    let other = tempfile::tempdir().unwrap();
    let mut config = server::Config::new(other.path());
    config.database_url = Some(url);
    // Every node has the cluster's master key.
    config.master_key_file = Some(s.dir.path().join("master.key"));
    config.node_id = Some("alpha".into());
    let error = server::start(&config).await.err().expect("the same id is refused").to_string();
    assert!(error.contains("cannot join the cluster: node id 'alpha' is already in use"), "{error}");
    config.node_id = Some("beta".into());
    config.advertise = Some("http://127.0.0.1:9".into());
    let _beta = server::start(&config).await.unwrap();
    let ready: serde_json::Value = s.http.get(s.url("/readyz")).send().await.unwrap().json().await.unwrap();
    let nodes: Vec<(&str, bool)> =
        ready["nodes"].as_array().unwrap().iter().map(|n| (n["id"].as_str().unwrap(), n["alive"] == true)).collect();
    assert_eq!(nodes, [("alpha", true), ("beta", true)], "{ready}");
    assert_eq!(ready["nodes"][1]["advertise"], "http://127.0.0.1:9");
}
