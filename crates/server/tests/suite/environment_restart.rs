//! `POST /v1/agents/environments/{id}/restart` (issue 17, item 4): a runaway
//! environment's way back. Every process in the sandbox stops, the files stay,
//! setup is not repeated; other organizations' ids are a 404.

use crate::support::{TestServer, assert_error};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use test_support::model_server::{ModelServer, Step};

fn shell(cmd: &str) -> Step {
    Step::tool_call("shell", json!({"command": cmd}))
}

/// Prints `running` if a process whose command line starts with `sleep 3017`
/// is alive in the sandbox, `stopped` otherwise (by `/proc`, no pid reuse).
const PROBE: &str = "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done \
                     | grep -q '^sleep 3017' && echo running || echo stopped";

async fn last_output(s: &TestServer, sid: &str) -> String {
    let (_, items) = s.get(&format!("/v1/agents/sessions/{sid}/items?order=desc&limit=100")).await;
    let items = items["data"].as_array().unwrap();
    let last = items.iter().find(|i| i["type"] == "command_execution").expect("a command ran");
    last["output"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn restart_stops_every_process_keeps_the_files_and_does_not_repeat_setup() {
    let model = ModelServer::with_script(vec![
        shell(&format!("(sleep 3017 &) ; echo kept > /workspace/kept.txt; {PROBE}")),
        Step::text("started"),
        shell(&format!("{PROBE}; cat /workspace/kept.txt; cat /workspace/setup-marker")),
        Step::text("checked"),
    ])
    .await
    .unwrap();
    let s = TestServer::with_model(&model).await;
    let setup =
        json!({"type": "openai_hosted", "setup_commands": [{"command": "echo once >> /workspace/setup-marker"}]});
    let session = s.session(json!({"agent": {"model": "m"}, "environment": setup})).await;
    let sid = session["id"].as_str().unwrap();
    let env_id = session["environment"]["id"].as_str().unwrap().to_string();
    let t = s.send(sid, "start").await;
    assert_eq!(s.wait_turn(sid, &t).await["status"], "completed");
    assert!(last_output(&s, sid).await.contains("running"), "the background process runs before the restart");

    let (status, env) = s.post(&format!("/v1/agents/environments/{env_id}/restart"), json!({})).await;
    assert_eq!(status, StatusCode::OK, "{env}");
    assert_eq!((env["id"].as_str(), env["status"].as_str()), (Some(env_id.as_str()), Some("ready")), "{env}");

    let t = s.send(sid, "check").await;
    assert_eq!(s.wait_turn(sid, &t).await["status"], "completed");
    let out = last_output(&s, sid).await;
    assert!(out.starts_with("stopped"), "every process of the old sandbox is gone: {out}");
    assert!(out.contains("kept"), "the files stay: {out}");
    assert_eq!(out.matches("once").count(), 1, "setup ran once in the environment's life: {out}");
}

#[tokio::test]
async fn restart_answers_404_for_unknown_and_other_organizations_ids_and_needs_write() {
    let s = TestServer::start().await;
    let (status, env) = s.post("/v1/agents/environments", json!({"environment": {"type": "openai_hosted"}})).await;
    assert_eq!(status, StatusCode::CREATED, "{env}");
    let env_id = env["id"].as_str().unwrap();
    let path = format!("/v1/agents/environments/{env_id}/restart");

    // Never used: nothing to stop, still pending (setup waits for the first use).
    let (status, again) = s.post(&path, json!({})).await;
    assert_eq!((status, again["status"].clone()), (StatusCode::OK, Value::from("pending")), "{again}");

    let (stranger_org, stranger) = s.org_with_key("stranger", &["tasks:read", "tasks:write"]).await;
    let theirs = s.call_as(Some(&stranger), Method::POST, &path, Some(json!({}))).await;
    assert_error(&theirs, StatusCode::NOT_FOUND, "not_found_error", None);
    let unknown_id = format!("env_{}", "0".repeat(32));
    let unknown = s.post(&format!("/v1/agents/environments/{unknown_id}/restart"), json!({})).await;
    assert_error(&unknown, StatusCode::NOT_FOUND, "not_found_error", None);
    let message = |got: &(StatusCode, Value), id: &str| got.1["error"]["message"].as_str().map(|m| m.replace(id, "X"));
    assert_eq!(
        message(&theirs, env_id),
        message(&unknown, &unknown_id),
        "another organization's environment is answered like an unknown one"
    );

    // A key that may only read cannot restart its own organization's environment.
    let body = json!({"environment": {"type": "openai_hosted"}});
    let own = s.call_as(Some(&stranger), Method::POST, "/v1/agents/environments", Some(body)).await;
    assert_eq!(own.0, StatusCode::CREATED, "{}", own.1);
    let reader = s.key_for(&stranger_org, &["tasks:read"]).await;
    let own_path = format!("/v1/agents/environments/{}/restart", own.1["id"].as_str().unwrap());
    let refused = s.call_as(Some(&reader), Method::POST, &own_path, Some(json!({}))).await;
    assert_eq!(refused.0, StatusCode::FORBIDDEN, "{}", refused.1);
}
