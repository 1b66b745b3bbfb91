//! Setup progress you can watch: while an environment's setup runs it stays
//! `pending`, its `setup` extension says which step runs, its `setup_log`
//! grows as the commands print, and a turn waiting for it gets the output as
//! `agent.session.environment.pending` events.

use crate::support::{TestServer, open_stream, read_until};
use base64::Engine as _;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::Duration;
use test_support::model_server::{ModelServer, Step};

/// Prints, waits, prints, waits: two moments at which setup is half done.
const SLOW_SETUP: &str = "echo one; sleep 1; echo two; sleep 1";

async fn slow_environment(s: &TestServer) -> String {
    let body = json!({"environment": {"type": "openai_hosted", "setup_commands": [{"command": SLOW_SETUP}]}});
    let (status, env) = s.post("/v1/agents/environments", body).await;
    assert_eq!(status, StatusCode::CREATED, "{env}");
    assert_eq!(env["setup"], Value::Null, "nothing runs before first use: {env}");
    env["id"].as_str().unwrap().to_string()
}

fn log_of(env: &Value) -> &str {
    env["setup_log"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn while_setup_runs_the_environment_shows_its_step_and_a_growing_log() {
    let s = TestServer::start().await;
    let id = slow_environment(&s).await;
    // A direct file write is a first use: it initializes the sandbox and answers when setup is done.
    let write = s.http.post(s.url(&format!("/v1/agents/environments/{id}/files"))).bearer_auth(&s.key).json(
        &json!({"type": "inline", "path": "/workspace/a.txt", "data": base64::engine::general_purpose::STANDARD.encode("a")}),
    );
    let write = tokio::spawn(write.send());
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let done = loop {
        let (status, env) = s.get(&format!("/v1/agents/environments/{id}")).await;
        assert_eq!(status, StatusCode::OK);
        if env["status"] != "pending" {
            break env;
        }
        seen.push(env);
        assert!(tokio::time::Instant::now() < deadline, "setup never ended: {}", seen[seen.len() - 1]);
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    let running = |e: &&Value| e["setup"]["state"] == "running" && e["setup"]["step"] == "setup_commands[0]";
    let progress: Vec<(&Value, &str)> = seen.iter().map(|e| (&e["setup"], log_of(e))).collect();
    let with_log = |log: String| seen.iter().filter(running).find(move |e| log_of(e) == log);
    let half = with_log(format!("$ {SLOW_SETUP}\none\n"));
    let half = half.unwrap_or_else(|| panic!("never saw the log after `one` only: {progress:?}"));
    assert_eq!(half["setup"]["command"], SLOW_SETUP);
    assert_eq!((&half["setup"]["steps_completed"], &half["setup"]["steps_total"]), (&json!(0), &json!(1)));
    assert!(half["setup"]["started_at"].is_i64() && half["setup"]["completed_at"].is_null(), "{half}");
    let later = with_log(format!("$ {SLOW_SETUP}\none\ntwo\n"));
    assert!(later.is_some(), "the log grew while setup still ran: {progress:?}");

    assert_eq!(done["status"], "ready", "{done}");
    assert_eq!(log_of(&done), format!("$ {SLOW_SETUP}\none\ntwo\n"));
    let setup = &done["setup"];
    assert_eq!((&setup["state"], &setup["step"], &setup["command"]), (&json!("completed"), &Value::Null, &Value::Null));
    assert_eq!((&setup["steps_completed"], &setup["steps_total"]), (&json!(1), &json!(1)));
    assert!(setup["completed_at"].as_i64().unwrap() >= setup["started_at"].as_i64().unwrap());
    assert_eq!(write.await.unwrap().unwrap().status(), StatusCode::OK);
}

#[tokio::test]
async fn a_turn_waiting_for_setup_gets_its_output_as_pending_events() {
    let model = ModelServer::with_script([
        Step::tool_call("shell", json!({"command": "echo after-setup"})),
        Step::text("Done."),
    ])
    .await
    .unwrap();
    let s = TestServer::with_model(&model).await;
    let id = slow_environment(&s).await;
    let session = s
        .session(json!({"agent": {"model": "gpt-6-luna"}, "environment": {"type": "reference", "environment_id": id}}))
        .await;
    let sid = session["id"].as_str().unwrap().to_string();
    let stream = open_stream(&s, &sid).await;
    let turn_id = s.send(&sid, "go").await;
    let first = read_until(stream, |e| {
        e["type"] == "agent.session.environment.pending"
            && e["setup_output"].as_str().is_some_and(|o| o.contains("one\n"))
    })
    .await;
    let (_, env) = s.get(&format!("/v1/agents/environments/{id}")).await;
    assert_eq!(env["status"], "pending", "the output came while setup still ran: {env}");

    let turn = s.wait_turn(&sid, &turn_id).await;
    assert_eq!(turn["status"], "completed", "{turn}");
    let events = s.events(&sid).await;
    assert!(first.iter().all(|e| events.contains(e)), "the live events are the stored ones");
    let position = |kind: &str| events.iter().position(|e| e["type"] == kind);
    let ready = position("agent.session.environment.ready").expect("the turn saw the environment ready");
    let pending: Vec<&Value> = events.iter().filter(|e| e["type"] == "agent.session.environment.pending").collect();
    assert!(pending.len() >= 2, "one when the turn starts waiting, then the output: {pending:?}");
    assert!(position("agent.session.environment.pending").unwrap() < ready);
    assert!(events.iter().rposition(|e| e["type"] == "agent.session.environment.pending").unwrap() < ready);
    for e in &pending {
        assert_eq!((&e["turn_id"], &e["environment"]["id"]), (&json!(turn_id), &json!(id)));
        assert_eq!(e["environment"]["status"], "pending");
        // The first may come before setup started, without either extension field.
        if e.get("setup_output").is_some() {
            assert_eq!(e["environment"]["setup"]["state"], "running", "{e}");
        }
    }
    let two = pending.iter().find(|e| e["setup_output"].as_str().is_some_and(|o| o.contains("two")));
    assert_eq!(two.expect("`two` came as an event")["environment"]["setup"]["step"], "setup_commands[0]");
    let (_, env) = s.get(&format!("/v1/agents/environments/{id}")).await;
    let streamed: String = pending.iter().filter_map(|e| e["setup_output"].as_str()).collect();
    assert_eq!(streamed, log_of(&env), "the events carry the whole log, nothing lost or twice");
}
