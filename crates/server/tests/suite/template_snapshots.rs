//! Templates prepared once (issue 16, items 2 and 4): a template's setup runs
//! a single time into a snapshot (`preparing` → `ready` with its log); an
//! environment made from it starts from copy-on-write layers of it without
//! running setup (its setup log says so), also after a server restart; an
//! update prepares a new snapshot and changes nothing in environments made
//! before; a failed preparation refuses environments with its reason; the
//! snapshot's files go when the template is deleted and no environment uses them.

use crate::support::{TestServer, assert_error, models_toml};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::Duration;
use test_support::model_server::{ModelServer, Step};

const TEMPLATES: &str = "/v1/agents/environments/templates";

fn shell(cmd: &str) -> Step {
    Step::tool_call("shell", json!({"command": cmd}))
}

/// The template once its preparation ended.
pub(crate) async fn prepared(s: &TestServer, id: &str) -> Value {
    for _ in 0..600 {
        let (status, t) = s.get(&format!("{TEMPLATES}/{id}")).await;
        assert_eq!(status, StatusCode::OK, "{t}");
        if t["status"] != "preparing" {
            return t;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("template {id} still preparing");
}

/// Runs one turn in a new session on `env_id`; the command's output.
async fn output_on(s: &TestServer, env_id: &str) -> String {
    let session = s
        .session(json!({"agent": {"model": "m"}, "environment": {"type": "reference", "environment_id": env_id}}))
        .await;
    let sid = session["id"].as_str().unwrap();
    let t = s.send(sid, "go").await;
    assert_eq!(s.wait_turn(sid, &t).await["status"], "completed");
    let (_, items) = s.get(&format!("/v1/agents/sessions/{sid}/items?order=desc&limit=100")).await;
    let items = items["data"].as_array().unwrap();
    let last = items.iter().find(|i| i["type"] == "command_execution").expect("a command ran");
    last["output"].as_str().unwrap().to_string()
}

async fn environment_from(s: &TestServer, template: &str) -> String {
    let body = json!({"environment": {"type": "openai_hosted", "environment_template_id": template}});
    let (status, env) = s.post("/v1/agents/environments", body).await;
    assert_eq!(status, StatusCode::CREATED, "{env}");
    env["id"].as_str().unwrap().to_string()
}

fn entries(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| d.count())
}

#[tokio::test]
async fn a_template_is_prepared_once_and_environments_start_from_its_snapshot() {
    let check = "cat /workspace/built.txt /workspace/t.txt; wc -l < /workspace/count; cat /root/h.txt; ls /workspace";
    let model = ModelServer::with_script(vec![
        shell(check),
        Step::text("one"),
        shell(check),
        Step::text("two"),
        shell("cat /workspace/built.txt; echo mine > /workspace/mine.txt"),
        Step::text("old"),
        shell(check),
        Step::text("new"),
        shell("cat /workspace/built.txt /workspace/mine.txt"),
        Step::text("after restart"),
    ])
    .await
    .unwrap();
    let s = TestServer::with_model(&model).await;
    let template = json!({
        "name": "built",
        "files": [{"type": "inline", "path": "/workspace/t.txt", "data": "dGVtcGxhdGUK"}],
        "setup_commands": [{"command": "echo run >> /workspace/count; echo v1 > /workspace/built.txt; echo hv1 > /root/h.txt; echo prepared-v1"}],
    });
    let (status, t) = s.post(TEMPLATES, template).await;
    assert_eq!(status, StatusCode::OK, "{t}");
    assert_eq!(t["status"], "preparing", "{t}");
    let tid = t["id"].as_str().unwrap().to_string();
    let t = prepared(&s, &tid).await;
    assert_eq!(t["status"], "ready", "{t}");
    assert!(t["preparation_log"].as_str().unwrap().contains("prepared-v1"), "{t}");

    let (first, second) = (environment_from(&s, &tid).await, environment_from(&s, &tid).await);
    for env in [&first, &second] {
        let out = output_on(&s, env).await;
        let lines = out.lines().take(4).collect::<Vec<_>>();
        assert_eq!(lines, ["v1", "template", "1", "hv1"], "setup ran once, its home kept too: {out}");
        let (_, record) = s.get(&format!("/v1/agents/environments/{env}")).await;
        assert_eq!(record["status"], "ready");
        let log = record["setup_log"].as_str().unwrap();
        assert!(log.starts_with("Prepared once from environment template"), "{log}");
        assert!(!log.contains("prepared-v1"), "setup did not run in the environment: {log}");
    }
    // Copy-on-write: one environment's writes are not another's.
    assert!(output_on(&s, &first).await.starts_with("v1"));

    let update =
        json!({"setup_commands": [{"command": "echo run >> /workspace/count; echo v2 > /workspace/built.txt"}]});
    let (status, t2) = s.post(&format!("{TEMPLATES}/{tid}"), update).await;
    assert_eq!((status, t2["status"].as_str(), t2["version"].as_i64()), (StatusCode::OK, Some("preparing"), Some(2)));
    assert_eq!(prepared(&s, &tid).await["status"], "ready");
    let third = environment_from(&s, &tid).await;
    let out = output_on(&s, &third).await;
    assert!(out.starts_with("v2\ntemplate\n1\n") && !out.contains("mine.txt") && !out.contains("hv1"), "{out}");
    let snapshots = s.dir.path().join("environments/.snapshots");
    assert_eq!(entries(&snapshots), 1, "the old version's snapshot went; its layer stays with its environments");

    // Files survive a restart: the environments made from the old snapshot keep theirs.
    let key = s.key.clone();
    let dir = s.stop().await;
    let toml = models_toml(&model);
    let s = TestServer::start_in(dir, |c| {
        c.bootstrap_key = Some(key);
        c.models_toml = Some(toml);
    })
    .await;
    assert_eq!(output_on(&s, &first).await, "v1\nmine\n");

    // Deleted with no environment left: no snapshot, no layer.
    for env in [&first, &second, &third] {
        let (_, sessions) = s.get("/v1/agents/sessions?limit=100").await;
        for session in sessions["data"].as_array().unwrap() {
            if session["environment"]["id"] == env.as_str() {
                s.delete(&format!("/v1/agents/sessions/{}", session["id"].as_str().unwrap())).await;
            }
        }
        let (status, body) = s.delete(&format!("/v1/agents/environments/{env}")).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let (status, body) = s.delete(&format!("{TEMPLATES}/{tid}")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let root = s.dir.path().join("environments");
    assert_eq!((entries(&root.join(".snapshots")), entries(&root.join(".layers"))), (0, 0));
}

#[tokio::test]
async fn a_failed_preparation_shows_the_step_and_refuses_environments() {
    let s = TestServer::start().await;
    let template = json!({"setup_commands": [{"command": "echo about to fail; exit 3"}]});
    let (status, t) = s.post(TEMPLATES, template).await;
    assert_eq!(status, StatusCode::OK, "{t}");
    let t = prepared(&s, t["id"].as_str().unwrap()).await;
    assert_eq!(t["status"], "failed", "{t}");
    assert!(t["preparation_error"]["output"].as_str().unwrap().contains("about to fail"), "{t}");
    assert!(t["preparation_log"].as_str().unwrap().contains("about to fail"), "{t}");
    let body = json!({"environment": {"type": "openai_hosted", "environment_template_id": t["id"]}});
    let refused = s.post("/v1/agents/environments", body).await;
    assert_error(&refused, StatusCode::CONFLICT, "conflict_error", None);
    assert!(refused.1["error"]["message"].as_str().unwrap().contains("exit"), "{}", refused.1);
    assert_eq!(entries(&s.dir.path().join("environments/.snapshots")), 0, "a failed preparation leaves nothing");
}
