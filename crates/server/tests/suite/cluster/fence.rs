//! A node cut off longer than a lease lasts (here: stopped with SIGSTOP)
//! while it runs a turn: another node takes the session over and fails the
//! turn; when the first node runs again, nothing it then writes for that
//! session lands — its lease's epoch is gone, the store refuses the writes,
//! and it stops the turn. An input it took meanwhile is run (202, and its
//! turn written, on whichever node holds the session then) or answered 503
//! (send it again): never 202 for a turn that was not written.

use super::{first_node, running_turn, settled_turn, spawn_node};
use crate::support::{Scratch, models_toml, types};
use serde_json::json;
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

/// A message input's request body.
fn input(text: &str) -> serde_json::Value {
    json!({"events": [{"type": "agent.session.input.message",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": text}]}]}]})
}

/// The events of one turn.
fn of_turn(events: &[serde_json::Value], turn_id: &str) -> Vec<serde_json::Value> {
    events.iter().filter(|e| e["turn_id"] == turn_id).cloned().collect()
}

#[tokio::test]
async fn a_node_cut_off_past_its_lease_writes_nothing_more_to_the_session_taken_over() {
    // The cut-off node's model call never answers.
    let model = ModelServer::with_script([Step::stall(), Step::text("after the takeover")]).await.unwrap();
    let toml = models_toml(&model);
    let Some(a) = first_node("taker", &toml).await else { return };
    let dir = Scratch::new();
    let (mut cut_off, url) = spawn_node(&a, "cut-off", &toml, dir.path());
    let http = reqwest::Client::new();
    assert_eq!(leases_lost(&http, &url).await, 0.0);
    let (sid, turn_id) = running_turn(&a, &url, "hello").await;
    while model.request_count() == 0 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    signal(cut_off.id(), "STOP");

    // The lease expires; the other node fails the turn and takes new input.
    let failed = settled_turn(&a, &sid, &turn_id, Duration::from_secs(20)).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert!(failed["error"]["message"].as_str().unwrap().contains("'cut-off'"), "{failed}");
    let next = a.send(&sid, "again").await;
    assert_eq!(a.wait_turn(&sid, &next).await["status"], "completed");
    let settled = of_turn(&a.events(&sid).await, &turn_id);

    // An input reaches the stopped node meanwhile (it answers once it runs again).
    model.push(Step::text("answer to the input sent while stopped"));
    let sent_while_stopped = tokio::spawn({
        let (request, body) =
            (http.post(format!("{url}/v1/agents/sessions/{sid}/events")), input("sent while stopped"));
        let key = a.key.clone();
        async move { request.bearer_auth(key).json(&body).send().await.unwrap().status() }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;

    // The node runs again: it finds its lease gone and writes nothing.
    signal(cut_off.id(), "CONT");
    // Either it notices, or (unfenced) what it does next lands: whichever comes first.
    let deadline = Instant::now() + Duration::from_secs(20);
    let events = loop {
        let events = a.events(&sid).await;
        if leases_lost(&http, &url).await >= 1.0 || of_turn(&events, &turn_id) != settled {
            break events;
        }
        assert!(Instant::now() < deadline, "the node neither noticed that it lost the session nor wrote to it");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(types(&of_turn(&events, &turn_id)), types(&settled), "no event of the cut-off node for its turn");
    let (_, turn) = a.get(&format!("/v1/agents/sessions/{sid}/turns/{turn_id}")).await;
    assert_eq!(turn, failed, "the failed turn stays as the new holder settled it");

    // The input sent while it was stopped is accepted only if it was written: a 503 asks
    // for it again, never a 202 for an input nobody will see.
    let status = sent_while_stopped.await.unwrap();
    let mut completed = 2;
    match status {
        reqwest::StatusCode::ACCEPTED => {
            completed += 1;
            let deadline = Instant::now() + Duration::from_secs(30);
            while !a.get(&format!("/v1/agents/sessions/{sid}/items")).await.1.to_string().contains("sent while stopped")
            {
                assert!(Instant::now() < deadline, "an input answered 202 was never written");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        reqwest::StatusCode::SERVICE_UNAVAILABLE => {}
        other => panic!("an input to the node that lost the session got {other}"),
    }

    // The session still works, on either node.
    let body = input("once more");
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
        if done == completed {
            break;
        }
        assert!(Instant::now() < deadline, "the input sent to the cut-off node never ran: {turns}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    cut_off.kill().unwrap();
    cut_off.wait().unwrap();
}
