//! A node cut off longer than a lease lasts (here: stopped with SIGSTOP)
//! while it runs a turn: another node takes the session over and fails the
//! turn; when the first node runs again, nothing it then does for that turn
//! (the model's answer it receives, or the failure of its timed-out call) is
//! written — its lease's epoch is gone, the store refuses its writes to that
//! session, and it stops the turn instead.

use super::{first_node, spawn_node};
use crate::support::{models_toml, types};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use test_support::model_server::{ModelServer, Step};

/// Sends `signal` (`STOP`, `CONT`) to process `pid`.
fn signal(pid: u32, signal: &str) {
    let status = std::process::Command::new("kill").arg(format!("-{signal}")).arg(pid.to_string()).status().unwrap();
    assert!(status.success(), "kill -{signal} {pid}");
}

/// The value of `rebyte_session_leases_lost_total` on the node at `url`.
async fn leases_lost(http: &reqwest::Client, url: &str) -> f64 {
    let text = http.get(format!("{url}/metrics")).send().await.unwrap().text().await.unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("rebyte_session_leases_lost_total "))
        .and_then(|v| v.trim().parse().ok())
        .expect("the lost-leases counter")
}

#[tokio::test]
async fn a_node_cut_off_past_its_lease_writes_nothing_more_to_the_session_taken_over() {
    // The first answer comes while the node is stopped; it reads it once it runs again.
    let late = Step::text("a late answer nobody may see").latency(Duration::from_secs(3));
    let model = ModelServer::with_script([late, Step::text("after the takeover")]).await.unwrap();
    let toml = models_toml(&model);
    let Some(a) = first_node("taker", &toml).await else { return };
    let dir = tempfile::tempdir().unwrap();
    let (mut cut_off, url) = spawn_node(&a, "cut-off", &toml, dir.path());
    let http = reqwest::Client::new();
    assert_eq!(leases_lost(&http, &url).await, 0.0);
    let session: Value = http
        .post(format!("{url}/v1/agents/sessions"))
        .bearer_auth(&a.key)
        .json(&json!({"agent": {"model": "m"}, "environment": {"type": "none"}, "input": "hello"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let sid = session["id"].as_str().expect("a session").to_string();
    let (_, turns) = a.get(&format!("/v1/agents/sessions/{sid}/turns")).await;
    let turn_id = turns["data"][0]["id"].as_str().unwrap().to_string();
    a.wait_turn_status(&sid, &turn_id, &["in_progress"]).await;
    while model.request_count() == 0 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    signal(cut_off.id(), "STOP");

    // The lease expires; the other node fails the turn and takes new input.
    let deadline = Instant::now() + Duration::from_secs(20);
    let failed = loop {
        let (_, turn) = a.get(&format!("/v1/agents/sessions/{sid}/turns/{turn_id}")).await;
        if turn["status"] != "in_progress" {
            break turn;
        }
        assert!(Instant::now() < deadline, "the turn stayed in progress while its node was stopped");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(failed["status"], "failed", "{failed}");
    assert!(failed["error"]["message"].as_str().unwrap().contains("'cut-off'"), "{failed}");
    let next = a.send(&sid, "again").await;
    assert_eq!(a.wait_turn(&sid, &next).await["status"], "completed");
    let settled = a.events(&sid).await;

    // The node runs again and gets the late answer: it finds its lease gone and writes nothing.
    signal(cut_off.id(), "CONT");
    // Either it notices, or (unfenced) what it does next lands: whichever comes first.
    let deadline = Instant::now() + Duration::from_secs(20);
    let events = loop {
        let events = a.events(&sid).await;
        if leases_lost(&http, &url).await >= 1.0 || events.len() != settled.len() {
            break events;
        }
        assert!(Instant::now() < deadline, "the node neither noticed that it lost the session nor wrote to it");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let text = serde_json::to_string(&events).unwrap();
    assert!(!text.contains("a late answer"), "the late answer was written: {text}");
    assert_eq!(types(&events), types(&settled), "no event of the cut-off node after the takeover");
    let (_, turn) = a.get(&format!("/v1/agents/sessions/{sid}/turns/{turn_id}")).await;
    assert_eq!(turn, failed, "the failed turn stays as the new holder settled it");
    let (_, items) = a.get(&format!("/v1/agents/sessions/{sid}/items")).await;
    assert!(!items.to_string().contains("a late answer"), "{items}");

    // The session still works, on either node.
    let body = json!({"events": [{"type": "agent.session.input.message",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "once more"}]}]}]});
    model.push(Step::text("once more, answered"));
    let sent = http
        .post(format!("{url}/v1/agents/sessions/{sid}/events"))
        .bearer_auth(&a.key)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(sent.status(), reqwest::StatusCode::ACCEPTED, "{}", sent.text().await.unwrap());
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, turns) = a.get(&format!("/v1/agents/sessions/{sid}/turns")).await;
        let done = turns["data"].as_array().unwrap().iter().filter(|t| t["status"] == "completed").count();
        if done == 2 {
            break;
        }
        assert!(Instant::now() < deadline, "the input sent to the cut-off node never ran: {turns}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    cut_off.kill().unwrap();
    cut_off.wait().unwrap();
}
