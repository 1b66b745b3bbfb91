//! Each environment's disk quota (issue 17, item 3): a command writing past
//! it gets "No space left on device" in its output, the turn completes, and
//! the server and another environment go on writing. `container_size: small`
//! halves the server's base (`--environment-disk-gib`, 1 GiB here).

use super::template_snapshots::prepared;
use crate::support::{TestServer, models_toml};
use serde_json::json;
use test_support::model_server::{ModelServer, Step};

fn shell(cmd: &str) -> Step {
    Step::tool_call("shell", json!({"command": cmd}))
}

async fn output_of(s: &TestServer, env: &serde_json::Value) -> String {
    let session = s
        .session(json!({"agent": {"model": "m"}, "environment": {"type": "reference", "environment_id": env["id"]}}))
        .await;
    let sid = session["id"].as_str().unwrap().to_string();
    let t = s.send(&sid, "write").await;
    assert_eq!(s.wait_turn(&sid, &t).await["status"], "completed");
    let (_, items) = s.get(&format!("/v1/agents/sessions/{sid}/items?order=desc&limit=100")).await;
    let items = items["data"].as_array().unwrap().clone();
    let run = items.iter().find(|i| i["type"] == "command_execution").expect("a command ran");
    run["output"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_write_past_an_environments_disk_quota_fails_inside_it_and_nothing_else() {
    let model = ModelServer::with_script(vec![
        shell("head -c 600M /dev/zero > big; echo status=$?; df -m --output=size /workspace | tail -1; rm -f big"),
        Step::text("full"),
        shell("head -c 20M /dev/zero > f && echo wrote"),
        Step::text("other"),
    ])
    .await
    .unwrap();
    let toml = models_toml(&model);
    let s = TestServer::start_with(|c| {
        c.models_toml = Some(toml);
        c.environment_disk_gib = 1;
    })
    .await;
    let small = json!({"environment": {"type": "openai_hosted", "container_size": "small"}});
    let (_, full) = s.post("/v1/agents/environments", small).await;
    let (_, other) = s.post("/v1/agents/environments", json!({"environment": {"type": "openai_hosted"}})).await;

    let out = output_of(&s, &full).await;
    assert!(out.contains("No space left on device"), "{out}");
    assert!(!out.contains("status=0"), "{out}");
    let size: u64 = out.lines().last().unwrap().trim().parse().unwrap();
    assert!((400..=512).contains(&size), "small is half of 1 GiB: {size} MiB");

    assert!(output_of(&s, &other).await.contains("wrote"), "another environment still writes");
    let (status, _) = s.get("/healthz").await;
    assert!(status.is_success());
}

/// A template's setup is the tenant's code too: it runs under the server's
/// base quota (1 GiB here; templates have no size), so writing past it fails the preparation
/// with "No space left on device", and a template within it is prepared and
/// leaves no scratch image behind.
#[tokio::test]
async fn a_templates_preparation_runs_under_its_disk_quota() {
    let s = TestServer::start_with(|c| c.environment_disk_gib = 1).await;
    let big = json!({"setup_commands": [{"command": "head -c 1100M /dev/zero > /workspace/big"}]});
    let (status, t) = s.post("/v1/agents/environments/templates", big).await;
    assert!(status.is_success(), "{t}");
    let t = prepared(&s, t["id"].as_str().unwrap()).await;
    assert_eq!(t["status"], "failed", "{t}");
    let output = t["preparation_error"]["output"].as_str().unwrap_or_default();
    assert!(output.contains("No space left on device"), "{t}");

    let fits = json!({"setup_commands": [{"command": "head -c 1M /dev/zero > /workspace/f"}]});
    let (status, t) = s.post("/v1/agents/environments/templates", fits).await;
    assert!(status.is_success(), "{t}");
    let t = prepared(&s, t["id"].as_str().unwrap()).await;
    assert_eq!(t["status"], "ready", "{t}");
    let root = s.dir.path().join("environments");
    let scratch: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("prep_"))
        .map(|e| e.file_name())
        .collect();
    assert!(scratch.is_empty(), "no preparation image is left: {scratch:?}");
}
