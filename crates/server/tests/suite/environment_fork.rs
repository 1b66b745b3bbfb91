//! `POST /v1/agents/environments/{id}/fork` (issue 16, items 3 and 4): a new
//! ready environment whose files are a copy-on-write copy of the source's at
//! that moment; writes after it stay on their side, the source keeps running,
//! processes are not copied, setup does not run again, and the fork's files
//! survive a server restart. Other organizations' ids are a 404; a source
//! that is not ready is a 409.

use crate::support::{TestServer, assert_error, models_toml};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use test_support::model_server::{ModelServer, Step};

fn shell(cmd: &str) -> Step {
    Step::tool_call("shell", json!({"command": cmd}))
}

/// `running` if a process whose command line starts with `sleep 3018` is
/// alive in the sandbox, else `stopped`.
const PROBE: &str = "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done \
                     | grep -q '^sleep 3018' && echo running || echo stopped";

async fn last_output(s: &TestServer, sid: &str) -> String {
    let (_, items) = s.get(&format!("/v1/agents/sessions/{sid}/items?order=desc&limit=100")).await;
    let items = items["data"].as_array().unwrap();
    let last = items.iter().find(|i| i["type"] == "command_execution").expect("a command ran");
    last["output"].as_str().unwrap().to_string()
}

async fn turn_on(s: &TestServer, env_id: &str, text: &str) -> String {
    let session = s
        .session(json!({"agent": {"model": "m"}, "environment": {"type": "reference", "environment_id": env_id}}))
        .await;
    let sid = session["id"].as_str().unwrap().to_string();
    let t = s.send(&sid, text).await;
    assert_eq!(s.wait_turn(&sid, &t).await["status"], "completed");
    sid
}

async fn again(s: &TestServer, sid: &str, text: &str) -> String {
    let t = s.send(sid, text).await;
    assert_eq!(s.wait_turn(sid, &t).await["status"], "completed");
    last_output(s, sid).await
}

#[tokio::test]
async fn a_fork_copies_the_files_of_the_moment_keeps_each_sides_writes_and_survives_a_restart() {
    let model = ModelServer::with_script(vec![
        shell(&format!("echo one > a.txt; mkdir -p d; echo two > d/b.txt; (sleep 3018 &); {PROBE}")),
        Step::text("started"),
        shell(&format!("cat a.txt d/b.txt setup-marker; {PROBE}; echo fork > a.txt; echo new > f.txt")),
        Step::text("fork checked"),
        shell(&format!("cat a.txt; ls; {PROBE}; echo later > a.txt")),
        Step::text("source checked"),
        shell("cat a.txt f.txt d/b.txt setup-marker; ls"),
        Step::text("after restart"),
    ])
    .await
    .unwrap();
    let s = TestServer::with_model(&model).await;
    let setup = json!({"type": "openai_hosted", "setup_commands": [{"command": "echo once >> setup-marker"}]});
    let (status, env) = s.post("/v1/agents/environments", json!({"environment": setup})).await;
    assert_eq!(status, StatusCode::CREATED, "{env}");
    let src = env["id"].as_str().unwrap().to_string();
    let fork_path = format!("/v1/agents/environments/{src}/fork");

    let (status, pending) = s.post(&fork_path, json!({})).await;
    assert_error(&(status, pending), StatusCode::CONFLICT, "conflict_error", None);

    let source_session = turn_on(&s, &src, "start").await;
    assert!(last_output(&s, &source_session).await.contains("running"));

    let (status, fork) = s.post(&fork_path, json!({"name": "copy", "metadata": {"purpose": "test"}})).await;
    assert_eq!(status, StatusCode::CREATED, "{fork}");
    let fork_id = fork["id"].as_str().unwrap().to_string();
    assert_ne!(fork_id, src);
    assert_eq!(fork["status"], "ready", "{fork}");
    assert_eq!(fork["forked_from"], src.as_str());
    assert_eq!((fork["name"].as_str(), fork["metadata"]["purpose"].as_str()), (Some("copy"), Some("test")));
    assert_eq!(fork["setup_log"], Value::Null, "no setup ran for the fork: {fork}");

    turn_on(&s, &fork_id, "check the fork").await;
    let (_, sessions) = s.get("/v1/agents/sessions?limit=10").await;
    let fork_session = sessions["data"][0]["id"].as_str().unwrap().to_string();
    let out = last_output(&s, &fork_session).await;
    assert_eq!(out.lines().take(3).collect::<Vec<_>>(), ["one", "two", "once"], "the files of the moment: {out}");
    assert!(out.contains("stopped"), "the source's processes are not copied: {out}");

    let out = again(&s, &source_session, "check the source").await;
    assert!(out.starts_with("one\n"), "the fork's write is not the source's: {out}");
    assert!(!out.contains("f.txt"), "the fork's new file is not the source's: {out}");
    assert!(out.contains("running"), "the source keeps running: {out}");
    let (_, fork_now) = s.get(&format!("/v1/agents/environments/{fork_id}")).await;
    assert_eq!(fork_now["setup_log"], Value::Null, "{fork_now}");

    // Across a restart on the same data directory, the fork keeps its own files.
    let key = s.key.clone();
    let dir = s.stop().await;
    let toml = models_toml(&model);
    let s = TestServer::start_in(dir, |c| {
        c.bootstrap_key = Some(key);
        c.models_toml = Some(toml);
    })
    .await;
    let sid = turn_on(&s, &fork_id, "after the restart").await;
    let out = last_output(&s, &sid).await;
    assert_eq!(out.lines().take(4).collect::<Vec<_>>(), ["fork", "new", "two", "once"], "{out}");
    assert_eq!(out.matches("once").count(), 1, "setup ran once, in the source: {out}");
}

#[tokio::test]
async fn forking_another_organizations_or_an_unknown_environment_is_a_404() {
    let s = TestServer::start().await;
    let (status, env) = s.post("/v1/agents/environments", json!({"environment": {"type": "openai_hosted"}})).await;
    assert_eq!(status, StatusCode::CREATED, "{env}");
    let path = format!("/v1/agents/environments/{}/fork", env["id"].as_str().unwrap());
    let (_, stranger) = s.org_with_key("stranger", &["tasks:read", "tasks:write"]).await;
    let theirs = s.call_as(Some(&stranger), Method::POST, &path, None).await;
    assert_error(&theirs, StatusCode::NOT_FOUND, "not_found_error", None);
    let unknown = s.post(&format!("/v1/agents/environments/env_{}/fork", "0".repeat(32)), json!({})).await;
    assert_error(&unknown, StatusCode::NOT_FOUND, "not_found_error", None);
    let bad = s.post(&path, json!({"color": "red"})).await;
    assert_eq!(bad.0, StatusCode::BAD_REQUEST, "{}", bad.1);
}
