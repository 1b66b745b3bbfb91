//! PostgreSQL going away while the server runs: requests fail with 503
//! `database_unavailable` and recover by themselves once it is back; no
//! committed data is lost and a turn that ran across the outage still
//! finishes. These tests stop the shared test cluster, so they run on their
//! own: only with `REBYTE_TEST_OUTAGE=1` (scripts/test runs them last, alone).

use crate::support::TestServer;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::Duration;
use test_support::model_server::{ModelServer, Step};
use test_support::postgres::Cluster;

/// The cluster to stop, when this run may stop it.
fn cluster() -> Option<Cluster> {
    if std::env::var("REBYTE_TEST_OUTAGE").ok().as_deref() != Some("1") {
        eprintln!("skipped: set REBYTE_TEST_OUTAGE=1 (with scripts/postgres) to stop the test cluster");
        return None;
    }
    test_support::postgres::base_url()?;
    Cluster::from_env()
}

/// Polls `path` until it answers 200 (bounded: the database is back within seconds).
async fn until_ok(s: &TestServer, path: &str) -> Value {
    for _ in 0..100 {
        let (status, body) = s.get(path).await;
        if status == StatusCode::OK {
            return body;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{path} never answered 200 after the database came back");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outage_requests_fail_with_503_and_recover_when_postgres_returns() {
    let Some(cluster) = cluster() else { return };
    let _ = tracing_subscriber::fmt().with_env_filter("warn").with_test_writer().try_init();
    // The model answers after the database went away (within the test
    // server's 2 s model timeout): the turn's last writes wait for it.
    let model =
        ModelServer::with_script(vec![Step::text("made it").latency(Duration::from_millis(1500))]).await.unwrap();
    let s = TestServer::with_model(&model).await;
    let session =
        s.session(json!({"agent": {"model": "gpt-6-luna"}, "environment": {"type": "none"}, "input": "hello"})).await;
    let sid = session["id"].as_str().unwrap().to_string();
    // Once the model has the request, the turn has read all it needs: what is
    // left are its writes.
    for _ in 0..200 {
        if model.request_count() > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(model.request_count(), 1, "the turn called its model");

    let outage = cluster.stop();
    let (status, body) = s.get("/v1/agents/sessions?limit=5").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["error"]["code"], "database_unavailable", "{body}");
    assert_eq!(body["error"]["type"], "server_error");
    assert!(!body.to_string().contains("sqlx") && !body.to_string().contains("os error"), "no internals: {body}");
    // The model step ends while the database is still down: its writes wait
    // in the journal, and reads that need them fail at once.
    tokio::time::sleep(Duration::from_millis(1700)).await;
    let (status, body) = s.get(&format!("/v1/agents/sessions/{sid}/turns")).await;
    assert_eq!((status, &body["error"]["code"]), (StatusCode::SERVICE_UNAVAILABLE, &json!("database_unavailable")));
    outage.end();

    let list = until_ok(&s, "/v1/agents/sessions?limit=5").await;
    assert_eq!(list["data"][0]["id"], sid.as_str(), "the session created before the outage is kept");
    let turns = until_ok(&s, &format!("/v1/agents/sessions/{sid}/turns")).await;
    let turn_id = turns["data"][0]["id"].as_str().unwrap().to_string();
    let turn = s.wait_turn(&sid, &turn_id).await;
    assert_eq!(turn["status"], "completed", "the turn finished across the outage: {turn}");
    let items = until_ok(&s, &format!("/v1/agents/sessions/{sid}/turns/{turn_id}/items?order=asc")).await;
    let texts = items["data"].as_array().unwrap().iter().filter_map(|i| i["content"][0]["text"].as_str());
    assert_eq!(texts.collect::<Vec<_>>(), ["hello", "made it"]);
    // And a new write works again.
    s.session(json!({"agent": {"model": "gpt-6-luna"}, "environment": {"type": "none"}})).await;
}
