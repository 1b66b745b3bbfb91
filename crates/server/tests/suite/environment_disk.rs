//! Each environment's disk quota (issue 17, item 3): a command writing past
//! it gets "No space left on device" in its output, the turn completes, and
//! the server and another environment go on writing. `container_size: small`
//! halves the server's base (`--environment-disk-gib`, 1 GiB here).

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
