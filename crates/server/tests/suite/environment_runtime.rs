//! Environments at run time: exactly-once setup under concurrent first use,
//! pausing and resuming (announced to every session on the environment),
//! cancellation of in-flight commands, setup timeouts and oversized command
//! output.

use crate::support::TestServer;
use base64::Engine as _;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::Duration;
use test_support::model_server::{ModelServer, Step};

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn shell(cmd: &str) -> Step {
    Step::tool_call("shell", json!({"command": cmd}))
}

async fn environment(s: &TestServer, config: Value) -> String {
    let (status, env) = s.post("/v1/agents/environments", json!({"environment": config})).await;
    assert_eq!(status, StatusCode::CREATED, "{env}");
    env["id"].as_str().unwrap().to_string()
}

async fn command_items(s: &TestServer, sid: &str) -> Vec<Value> {
    let (_, items) = s.get(&format!("/v1/agents/sessions/{sid}/items?order=asc&limit=100")).await;
    items["data"].as_array().unwrap().iter().filter(|i| i["type"] == "command_execution").cloned().collect()
}

#[tokio::test]
async fn setup_runs_exactly_once_under_100_concurrent_first_uses() {
    let s = TestServer::start().await;
    let id = environment(
        &s,
        json!({"type": "openai_hosted",
        "setup_commands": [{"command": "sleep 0.3; echo once >> /workspace/setup-marker"}]}),
    )
    .await;
    let mut calls = Vec::new();
    for i in 0..100 {
        let body = json!({"type": "inline", "path": format!("/workspace/f{i}"), "data": b64("x")});
        let http = s.http.clone();
        let url = s.url(&format!("/v1/agents/environments/{id}/files"));
        let key = s.key.clone();
        calls.push(tokio::spawn(
            async move { http.post(url).bearer_auth(key).json(&body).send().await.unwrap().status() },
        ));
    }
    for c in calls {
        assert_eq!(c.await.unwrap(), StatusCode::OK);
    }
    let marker =
        std::fs::read_to_string(s.dir.path().join("environments").join(&id).join("workspace/setup-marker")).unwrap();
    assert_eq!(marker, "once\n", "The first environment operation initializes the Sandbox once");
    let (_, env) = s.get(&format!("/v1/agents/environments/{id}")).await;
    assert_eq!(env["status"], "ready");
    assert_eq!(env["files"].as_array().unwrap().len(), 100);
}

#[tokio::test]
async fn an_idle_sandbox_is_paused_and_resumes_with_its_processes_and_files() {
    let model = ModelServer::with_script(vec![
        shell("sleep 300 & echo $! > /workspace/bg.pid; echo kept > /workspace/kept.txt"),
        Step::text("started"),
        shell("kill -0 $(cat /workspace/bg.pid) && echo still-running; cat /workspace/kept.txt"),
        Step::text("checked"),
    ])
    .await
    .unwrap();
    let toml = crate::support::models_toml(&model);
    let s = TestServer::start_with(|c| {
        c.models_toml = Some(toml);
        c.idle_pause = Duration::from_millis(300);
    })
    .await;
    let session = s.session(json!({"agent": {"model": "m"}, "environment": {"type": "openai_hosted"}})).await;
    let sid = session["id"].as_str().unwrap();
    let env_id = session["environment"]["id"].as_str().unwrap().to_string();
    let t = s.send(sid, "start").await;
    assert_eq!(s.wait_turn(sid, &t).await["status"], "completed");
    let mut suspended = false;
    for _ in 0..100 {
        if s.get(&format!("/v1/agents/environments/{env_id}")).await.1["status"] == "suspended" {
            suspended = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(suspended, "the idle sandbox was paused");
    let t = s.send(sid, "check").await;
    assert_eq!(s.wait_turn(sid, &t).await["status"], "completed");
    let last = command_items(&s, sid).await.pop().unwrap();
    let out = last["output"].as_str().unwrap();
    assert!(out.contains("still-running") && out.contains("kept"), "{out}");
    assert_eq!(s.get(&format!("/v1/agents/environments/{env_id}")).await.1["status"], "ready");
}

/// The events of `session` that tell of its environment's sandbox pausing and resuming
/// (no turn's): `(type, environment.status)`.
async fn sandbox_changes(s: &TestServer, session: &str, env_id: &str) -> Vec<(String, String)> {
    let events = s.events(session).await;
    let changes = events.iter().filter(|e| {
        e["type"] == "agent.session.environment.suspended"
            || (e["type"] == "agent.session.environment.connected" && e["turn_id"].is_null())
    });
    changes
        .map(|e| {
            assert_eq!(e["session_id"], session, "{e}");
            assert_eq!(e["environment"]["id"], env_id, "{e}");
            assert_eq!(e["environment"]["type"], "openai_hosted", "{e}");
            assert!(e["environment"]["error"].is_null(), "{e}");
            assert!(e.as_object().unwrap().contains_key("turn_id"), "turn_id is always present: {e}");
            (e["type"].as_str().unwrap().to_string(), e["environment"]["status"].as_str().unwrap().to_string())
        })
        .collect()
}

async fn environment_status(s: &TestServer, env_id: &str) -> String {
    s.get(&format!("/v1/agents/environments/{env_id}")).await.1["status"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_paused_sandbox_is_suspended_on_every_session_attached_and_connected_again_when_used() {
    let model = ModelServer::with_script(vec![
        shell("echo first > /workspace/first.txt"),
        Step::text("one"),
        shell("cat /workspace/first.txt"),
        Step::text("two"),
    ])
    .await
    .unwrap();
    let toml = crate::support::models_toml(&model);
    let s = TestServer::start_with(|c| {
        c.models_toml = Some(toml);
        c.idle_pause = Duration::from_millis(1500);
    })
    .await;
    let env_id = environment(&s, json!({"type": "openai_hosted"})).await;
    let on_it = json!({"agent": {"model": "m"}, "environment": {"type": "reference", "environment_id": env_id}});
    let a = s.session(on_it.clone()).await["id"].as_str().unwrap().to_string();
    let b = s.session(on_it).await["id"].as_str().unwrap().to_string();
    // On an environment of its own that never starts: told of nothing.
    let other = s.session(json!({"agent": {"model": "m"}, "environment": {"type": "openai_hosted"}})).await;
    let other = other["id"].as_str().unwrap().to_string();

    let t = s.send(&a, "start").await;
    assert_eq!(s.wait_turn(&a, &t).await["status"], "completed");
    assert_eq!(environment_status(&s, &env_id).await, "ready");
    let mut suspended = false;
    for _ in 0..200 {
        if environment_status(&s, &env_id).await == "suspended" {
            suspended = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(suspended, "the idle sandbox was paused and its environment is suspended");
    let told = vec![("agent.session.environment.suspended".to_string(), "suspended".to_string())];
    for session in [&a, &b] {
        assert_eq!(sandbox_changes(&s, session, &env_id).await, told, "session {session}");
    }
    assert!(sandbox_changes(&s, &other, &env_id).await.is_empty());
    assert_eq!(environment_status(&s, &env_id).await, "suspended", "still suspended while unused");

    // A turn of the other session resumes it: every session on it is told it is connected again.
    let t = s.send(&b, "again").await;
    assert_eq!(s.wait_turn(&b, &t).await["status"], "completed");
    assert_eq!(environment_status(&s, &env_id).await, "ready");
    let out = command_items(&s, &b).await.pop().unwrap()["output"].as_str().unwrap().to_string();
    assert_eq!(out, "first\n", "the files are as they were");
    let resumed = [
        ("agent.session.environment.suspended".to_string(), "suspended".to_string()),
        ("agent.session.environment.connected".to_string(), "connected".to_string()),
    ];
    for session in [&a, &b] {
        let changes = sandbox_changes(&s, session, &env_id).await;
        // Later pauses (the sandbox idles again) alternate the same way.
        assert!(changes.len() >= 2 && changes.chunks(2).all(|c| c == &resumed[..c.len()]), "{session}: {changes:?}");
    }
    // The turn that used it still announces its own attachment, once.
    let b_events = s.events(&b).await;
    let of_turn = b_events.iter().filter(|e| e["type"] == "agent.session.environment.connected" && e["turn_id"] == t);
    assert_eq!(of_turn.count(), 1);
}

#[tokio::test]
async fn cancel_kills_the_in_flight_command_and_nothing_else() {
    let model = ModelServer::with_script(vec![
        shell("sleep 300 & echo $! > /workspace/bg.pid"),
        Step::text("background started"),
        shell("echo $$ > /workspace/fg.pid; sleep 300"),
        shell("kill -0 $(cat /workspace/bg.pid) && echo bg-alive; kill -0 $(cat /workspace/fg.pid) || echo fg-gone"),
        Step::text("checked"),
    ])
    .await
    .unwrap();
    let s = TestServer::with_model(&model).await;
    let session = s.session(json!({"agent": {"model": "m"}, "environment": {"type": "openai_hosted"}})).await;
    let sid = session["id"].as_str().unwrap();
    let t = s.send(sid, "bg").await;
    assert_eq!(s.wait_turn(sid, &t).await["status"], "completed");
    let t = s.send(sid, "fg").await;
    for _ in 0..200 {
        if command_items(&s, sid).await.len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = std::time::Instant::now();
    let (status, _) = s
        .post(&format!("/v1/agents/sessions/{sid}/events"), json!({"events": [{"type": "agent.session.input.cancel"}]}))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(s.wait_turn(sid, &t).await["status"], "cancelled");
    assert!(started.elapsed() < Duration::from_secs(3));
    let cancelled = command_items(&s, sid).await.pop().unwrap();
    assert_eq!(cancelled["status"], "incomplete", "{cancelled}");
    let t = s.send(sid, "check").await;
    assert_eq!(s.wait_turn(sid, &t).await["status"], "completed");
    let out = command_items(&s, sid).await.pop().unwrap()["output"].as_str().unwrap().to_string();
    assert!(out.contains("bg-alive"), "background processes from earlier calls live on: {out}");
    assert!(out.contains("fg-gone"), "the cancelled command's process group was killed: {out}");
}

#[tokio::test]
async fn a_hanging_setup_command_times_out_and_fails_the_environment() {
    let s = TestServer::start_with(|c| c.setup_timeout = Duration::from_millis(500)).await;
    let id =
        environment(&s, json!({"type": "openai_hosted", "setup_commands": [{"command": "echo waiting; sleep 600"}]}))
            .await;
    let (status, _) = s
        .post(
            &format!("/v1/agents/environments/{id}/files"),
            json!({"type": "inline", "path": "/workspace/x", "data": b64("x")}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    let (_, env) = s.get(&format!("/v1/agents/environments/{id}")).await;
    assert_eq!(env["status"], "failed");
    assert!(env["error"]["output"].as_str().unwrap().contains("waiting"), "{env}");
    assert!(env["error"]["message"].as_str().unwrap().contains("timed out"), "{env}");
}

#[tokio::test]
async fn megabytes_of_output_are_truncated_in_history_and_kept_whole_in_a_file() {
    let model = ModelServer::with_script(vec![shell("yes 0123456789abcdef | head -c 3000000"), Step::text("done")])
        .await
        .unwrap();
    let s = TestServer::with_model(&model).await;
    let session = s.session(json!({"agent": {"model": "m"}, "environment": {"type": "openai_hosted"}})).await;
    let sid = session["id"].as_str().unwrap();
    let env_id = session["environment"]["id"].as_str().unwrap();
    let t = s.send(sid, "print").await;
    assert_eq!(s.wait_turn(sid, &t).await["status"], "completed");
    let item = command_items(&s, sid).await.pop().unwrap();
    let out = item["output"].as_str().unwrap();
    assert!(out.len() < 40_000, "history keeps a bounded excerpt: {} bytes", out.len());
    let log = out.split("the full output is in ").nth(1).and_then(|r| r.split(' ').next()).expect(out);
    let host =
        s.dir.path().join("environments").join(env_id).join("workspace").join(log.trim_start_matches("/workspace/"));
    assert_eq!(std::fs::metadata(&host).unwrap().len(), 3_000_000, "the whole output is kept in {log}");
    let sent = model.last_request().unwrap().to_string();
    assert!(sent.len() < 100_000, "the model gets the excerpt, not megabytes");
}
