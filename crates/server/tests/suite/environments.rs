//! Environments: one real sandbox per environment, initialized lazily and
//! once, shared by reference, with per-session outputs published as artifacts.

use crate::support::{TestServer, types};
use base64::Engine as _;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::Duration;
use test_support::model_server::{ModelServer, Step};

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

async fn setup(steps: Vec<Step>) -> (ModelServer, TestServer) {
    let model = ModelServer::with_script(steps).await.unwrap();
    let server = TestServer::with_model(&model).await;
    (model, server)
}

fn shell(cmd: &str) -> Step {
    Step::tool_call("shell", json!({"command": cmd}))
}

async fn env(s: &TestServer, body: Value) -> Value {
    let (status, env) = s.post("/v1/agents/environments", body).await;
    assert_eq!(status, StatusCode::CREATED, "{env}");
    env
}

async fn wait_env(s: &TestServer, id: &str, statuses: &[&str]) -> Value {
    for _ in 0..500 {
        let (_, e) = s.get(&format!("/v1/agents/environments/{id}")).await;
        if statuses.iter().any(|st| e["status"] == *st) {
            return e;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("environment {id} never reached {statuses:?}");
}

#[tokio::test]
async fn creation_reserves_identity_without_starting_compute() {
    let (_m, s) = setup(vec![]).await;
    let e = env(
        &s,
        json!({"environment": {"type": "openai_hosted",
        "files": [{"type": "inline", "path": "/workspace/input.txt", "data": b64("Shared input")}]}}),
    )
    .await;
    assert_eq!(e["object"], "agent.environment");
    assert_eq!(e["status"], "pending", "Creation returns 201 … status: 'pending'");
    assert_eq!(e["files"][0]["path"], "/workspace/input.txt");
    assert_eq!(e["files"][0]["size_bytes"], 12);
    let id = e["id"].as_str().unwrap();
    assert!(!s.dir.path().join("environments").join(id).exists(), "no sandbox or files before first use");
    let (_, list) = s.get("/v1/agents/environments").await;
    assert_eq!(list["data"][0]["id"], id);
}

#[tokio::test]
async fn two_sessions_share_one_sandbox_files_and_processes_and_setup_runs_once() {
    let (model, s) = setup(vec![
        shell("sleep 30 & echo $! > /workspace/pid; cat /workspace/input.txt; cat /workspace/setup-count"),
        Step::text("started"),
        shell("cat /workspace/pid | xargs kill -0 && echo alive; cat /workspace/setup-count"),
        Step::text("seen"),
    ])
    .await;
    let e = env(
        &s,
        json!({"environment": {"type": "openai_hosted",
        "files": [{"type": "inline", "path": "/workspace/input.txt", "data": b64("Shared input")}],
        "setup_commands": [{"command": "echo x >> /workspace/setup-count"}]}}),
    )
    .await;
    let id = e["id"].as_str().unwrap();
    let a =
        s.session(json!({"agent": {"model": "m"}, "environment": {"type": "reference", "environment_id": id}})).await;
    let b =
        s.session(json!({"agent": {"model": "m"}, "environment": {"type": "reference", "environment_id": id}})).await;
    assert_eq!(a["environment"]["id"], id, "the same id in both Sessions");
    assert_eq!(b["environment"]["id"], id);
    let (sa, sb) = (a["id"].as_str().unwrap(), b["id"].as_str().unwrap());
    let t1 = s.send(sa, "start").await;
    assert_eq!(s.wait_turn(sa, &t1).await["status"], "completed");
    assert_eq!(wait_env(&s, id, &["ready"]).await["status"], "ready");
    let t2 = s.send(sb, "look").await;
    assert_eq!(s.wait_turn(sb, &t2).await["status"], "completed");
    let (_, items) = s.get(&format!("/v1/agents/sessions/{sa}/items?order=asc")).await;
    let cmd = items["data"].as_array().unwrap().iter().find(|i| i["type"] == "command_execution").unwrap().clone();
    assert_eq!(cmd["exit_code"], 0, "{cmd}");
    assert_eq!(cmd["status"], "completed");
    assert!(cmd["output"].as_str().unwrap().contains("Shared input"), "{cmd}");
    let (_, items) = s.get(&format!("/v1/agents/sessions/{sb}/items?order=asc")).await;
    let cmd = items["data"].as_array().unwrap().iter().find(|i| i["type"] == "command_execution").unwrap().clone();
    let out = cmd["output"].as_str().unwrap();
    assert!(out.contains("alive"), "session B sees session A's background process: {out}");
    assert_eq!(out.matches('x').count(), 1, "setup ran exactly once: {out}");
    let kinds = types(&s.events(sa).await);
    assert!(kinds.contains(&"agent.output.command_execution_output.delta".to_string()));
    assert!(model.request_count() >= 4);
}

#[tokio::test]
async fn outputs_become_artifacts_of_their_own_session_only() {
    let (_m, s) = setup(vec![
        shell("echo report-a > $REBYTE_OUTPUT_DIR/report.md && echo $REBYTE_OUTPUT_DIR"),
        Step::text("done"),
        shell("echo report-b > $REBYTE_OUTPUT_DIR/report.md"),
        Step::text("done"),
    ])
    .await;
    let owner = s.session(json!({"agent": {"model": "m"}, "environment": {"type": "openai_hosted"}})).await;
    let env_id = owner["environment"]["id"].as_str().unwrap().to_string();
    let member = s
        .session(json!({"agent": {"model": "m"}, "environment": {"type": "reference", "environment_id": env_id}}))
        .await;
    let (so, sm) = (owner["id"].as_str().unwrap(), member["id"].as_str().unwrap());
    let t = s.send(so, "write").await;
    assert_eq!(s.wait_turn(so, &t).await["status"], "completed");
    let t = s.send(sm, "write").await;
    assert_eq!(s.wait_turn(sm, &t).await["status"], "completed");

    let (_, arts) = s.get(&format!("/v1/agents/sessions/{so}/artifacts")).await;
    let arts = arts["data"].as_array().unwrap().clone();
    assert_eq!(arts.len(), 1, "the owner's collector skips sessions/: {arts:?}");
    assert_eq!(arts[0]["path"], "/workspace/outputs/report.md", "the original absolute path");
    assert_eq!(arts[0]["object"], "agent.session.artifact");
    assert_eq!(arts[0]["environment_id"], env_id.as_str());
    let art_id = arts[0]["id"].as_str().unwrap();
    let content = s
        .http
        .get(s.url(&format!("/v1/agents/sessions/{so}/artifacts/{art_id}/content")))
        .bearer_auth(&s.key)
        .send()
        .await
        .unwrap();
    assert_eq!(content.text().await.unwrap(), "report-a\n");
    let (_, member_arts) = s.get(&format!("/v1/agents/sessions/{sm}/artifacts")).await;
    assert_eq!(member_arts["data"][0]["path"], format!("/workspace/outputs/sessions/{sm}/report.md"));
    let (status, _) = s.get(&format!("/v1/agents/sessions/{sm}/artifacts/{art_id}")).await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "no session's artifacts are reachable through another session's endpoint"
    );
    let (status, deleted) = s.delete(&format!("/v1/agents/sessions/{so}/artifacts/{art_id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(deleted["object"], "agent.session.artifact.deleted");
}

#[tokio::test]
async fn a_failed_setup_is_recorded_with_its_output_and_is_final() {
    let (_m, s) = setup(vec![shell("echo never"), Step::text("x")]).await;
    let e = env(
        &s,
        json!({"environment": {"type": "openai_hosted",
        "setup_commands": [{"command": "echo preparing; echo broken >&2; exit 3"}]}}),
    )
    .await;
    let id = e["id"].as_str().unwrap();
    let sess =
        s.session(json!({"agent": {"model": "m"}, "environment": {"type": "reference", "environment_id": id}})).await;
    let sid = sess["id"].as_str().unwrap();
    let t = s.send(sid, "go").await;
    let turn = s.wait_turn(sid, &t).await;
    assert_eq!(turn["status"], "failed");
    assert!(turn["error"]["message"].as_str().unwrap().contains("exit"), "{turn}");
    let failed = wait_env(&s, id, &["failed"]).await;
    assert!(failed["error"]["output"].as_str().unwrap().contains("broken"), "{failed}");
    assert_eq!(failed["error"]["step"], "echo preparing; echo broken >&2; exit 3");
    assert_eq!((&failed["setup"]["state"], &failed["setup"]["step"]), (&json!("failed"), &json!("setup_commands[0]")));
    assert!(failed["setup_log"].as_str().unwrap().contains("preparing\n"), "the log up to the failure: {failed}");
    let (status, _) = s
        .post(
            &format!("/v1/agents/environments/{id}/files"),
            json!({"type": "inline", "path": "/workspace/a", "data": b64("a")}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "no reset: the failure is final");
}

#[tokio::test]
async fn direct_file_operations_initialize_and_reject_escapes() {
    let (_m, s) = setup(vec![]).await;
    let e = env(&s, json!({"environment": {"type": "openai_hosted"}})).await;
    let id = e["id"].as_str().unwrap();
    let path = format!("/v1/agents/environments/{id}/files");
    let (status, f) =
        s.post(&path, json!({"type": "inline", "path": "/workspace/notes/a.txt", "data": b64("hello")})).await;
    assert_eq!(status, StatusCode::OK, "{f}");
    assert_eq!(
        f,
        json!({"environment_id": id, "object": "agent.environment.file", "path": "/workspace/notes/a.txt", "size_bytes": 5})
    );
    assert_eq!(wait_env(&s, id, &["ready"]).await["files"][0]["path"], "/workspace/notes/a.txt");
    let (_, list) = s.get(&format!("{path}?order=asc")).await;
    assert_eq!(list["data"][0]["path"], "/workspace/notes/a.txt");
    for bad in ["/etc/passwd", "/workspace/../etc/x", "../x"] {
        let (status, body) = s.post(&path, json!({"type": "inline", "path": bad, "data": b64("x")})).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
    }
    let (status, _) = s.post(&path, json!({"type": "inline", "path": "/workspace/b", "data": "%%%"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn lifetimes_deletes_and_other_organizations() {
    let (_m, s) = setup(vec![]).await;
    let private = s.session(json!({"agent": {"model": "m"}, "environment": {"type": "openai_hosted"}})).await;
    let pid = private["environment"]["id"].as_str().unwrap().to_string();
    let (_, e) = s.get(&format!("/v1/agents/environments/{pid}")).await;
    assert_eq!(e["lifetime"], "private");
    let (status, _) = s.delete(&format!("/v1/agents/sessions/{}", private["id"].as_str().unwrap())).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        s.get(&format!("/v1/agents/environments/{pid}")).await.0,
        StatusCode::NOT_FOUND,
        "a private environment goes with its session"
    );

    let owner = s.session(json!({"agent": {"model": "m"}, "environment": {"type": "openai_hosted"}})).await;
    let eid = owner["environment"]["id"].as_str().unwrap().to_string();
    let member =
        s.session(json!({"agent": {"model": "m"}, "environment": {"type": "reference", "environment_id": eid}})).await;
    assert_eq!(
        s.get(&format!("/v1/agents/environments/{eid}")).await.1["lifetime"],
        "shared",
        "the first reference makes it shared"
    );
    for sess in [&owner, &member] {
        s.delete(&format!("/v1/agents/sessions/{}", sess["id"].as_str().unwrap())).await;
    }
    let (status, _) = s.get(&format!("/v1/agents/environments/{eid}")).await;
    assert_eq!(status, StatusCode::OK, "Deleting the last Session also leaves it available");
    let (status, deleted) = s.delete(&format!("/v1/agents/environments/{eid}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(deleted, json!({"id": eid, "object": "agent.environment.deleted", "deleted": true}));

    let standalone = env(&s, json!({"environment": {"type": "openai_hosted"}})).await;
    let sid = standalone["id"].as_str().unwrap();
    let attached =
        s.session(json!({"agent": {"model": "m"}, "environment": {"type": "reference", "environment_id": sid}})).await;
    assert_eq!(
        s.delete(&format!("/v1/agents/environments/{sid}")).await.0,
        StatusCode::CONFLICT,
        "attached sessions first"
    );
    let (_, other) = s.org_with_key("other", &["tasks:read", "tasks:write"]).await;
    for (method, path, body) in [
        (reqwest::Method::GET, format!("/v1/agents/environments/{sid}"), None),
        (reqwest::Method::DELETE, format!("/v1/agents/environments/{sid}"), None),
        (reqwest::Method::GET, format!("/v1/agents/environments/{sid}/files"), None),
        (
            reqwest::Method::POST,
            format!("/v1/agents/environments/{sid}/files"),
            Some(json!({"type": "inline", "path": "/workspace/x", "data": "eA=="})),
        ),
        (
            reqwest::Method::POST,
            "/v1/agents/sessions".to_string(),
            Some(json!({"agent": {"model": "m"}, "environment": {"type": "reference", "environment_id": sid}})),
        ),
    ] {
        let (status, body) = s.call_as(Some(&other), method, &path, body).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {body}");
    }
    let bad = s
        .post(
            "/v1/agents/sessions",
            json!({"agent": {"model": "m"}, "environment": {"type": "reference", "environment_id": sid, "files": []}}),
        )
        .await;
    assert_eq!(bad.0, StatusCode::BAD_REQUEST, "a reference carries only type and environment_id");
    drop(attached);
}

#[tokio::test]
async fn environment_credentials_must_be_environment_variables_of_this_organization() {
    let (_m, s) = setup(vec![]).await;
    let (_, vault) = s.post("/v1/vaults", json!({"name": "env-secrets"})).await;
    let vid = vault["id"].as_str().unwrap();
    let (status, cred) = s
        .post(
            &format!("/v1/vaults/{vid}/credentials"),
            json!({"name": "service", "auth": {"type": "environment_variable",
            "secret_name": "SERVICE_KEY", "secret_value": "sv-secret-1", "networking": {"type": "unrestricted"}}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{cred}");
    let cid = cred["id"].as_str().unwrap();
    let ok = json!({"environment": {"type": "openai_hosted", "vault_credentials": [{"vault_id": vid, "credential_id": cid}]}});
    let (status, e) = s.post("/v1/agents/environments", ok).await;
    assert_eq!(status, StatusCode::CREATED, "{e}");
    assert!(!e.to_string().contains("sv-secret-1"));
    let missing = json!({"environment": {"type": "openai_hosted",
        "vault_credentials": [{"vault_id": vid, "credential_id": "cred_00000000000000000000000000000000"}]}});
    let (status, body) = s.post("/v1/agents/environments", missing).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"]["param"], "environment.vault_credentials[0]");
    let (_, other) = s.org_with_key("other-creds", &["tasks:read", "tasks:write"]).await;
    let theirs = json!({"agent": {"model": "m"}, "environment": {"type": "openai_hosted",
        "vault_credentials": [{"vault_id": vid, "credential_id": cid}]}});
    let (status, body) = s.call_as(Some(&other), reqwest::Method::POST, "/v1/agents/sessions", Some(theirs)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "another organization's credential is not found: {body}");
    assert_eq!(body["error"]["code"], "not_found");
}

#[tokio::test]
async fn deleting_the_conversation_of_a_private_environment_deletes_the_environment() {
    let (_m, s) = setup(vec![]).await;
    let session = s.session(json!({"agent": {"model": "m"}, "environment": {"type": "openai_hosted"}})).await;
    let env_id = session["environment"]["id"].as_str().unwrap();
    let (status, _) = s.delete(&format!("/v1/conversations/conv_{}", session["id"].as_str().unwrap())).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(s.get(&format!("/v1/agents/environments/{env_id}")).await.0, StatusCode::NOT_FOUND);
}

/// Whether this host offers no cpu cgroup (the CPU tests are then skipped, saying so).
fn no_cpu_cgroup() -> bool {
    let missing = !sandbox::LocalBackend::new(sandbox::LocalConfig::default()).cgroups().has_cpu();
    if missing {
        println!("skipped: no cpu cgroup on this host");
    }
    missing
}

/// Initializes environment `id` with a file operation; answers the CPU seconds its setup
/// printed (a `cpu <seconds>` line) and the setup log.
async fn setup_cpu_seconds(s: &TestServer, id: &str) -> (f64, String) {
    let go = json!({"type": "inline", "path": "/workspace/go", "data": "eA=="});
    let (status, _) = s.post(&format!("/v1/agents/environments/{id}/files"), go).await;
    assert!(status.is_success());
    let ready = wait_env(s, id, &["ready", "failed"]).await;
    let log = ready["setup_log"].as_str().unwrap_or_default().to_string();
    let used = log.lines().find_map(|l| l.strip_prefix("cpu ")).and_then(|v| v.trim().parse().ok());
    (used.unwrap_or_else(|| panic!("no cpu line in the setup log: {log}")), log)
}

/// `--sandbox-cpus` (the server's `sandbox_limits`) reaches every environment's sandbox.
#[tokio::test]
async fn the_servers_cpu_quota_holds_an_environments_busy_loop() {
    if no_cpu_cgroup() {
        return;
    }
    let s = TestServer::start_with(|c| c.sandbox_limits.cpu_millicores = Some(200)).await;
    let spin = "python3 -c \"import time\nend = time.time() + 1.5\nwhile time.time() < end: pass\nprint('cpu', time.process_time())\"";
    let e = env(&s, json!({"environment": {"type": "openai_hosted", "setup_commands": [{"command": spin}]}})).await;
    let (used, log) = setup_cpu_seconds(&s, e["id"].as_str().unwrap()).await;
    assert!(used < 0.6, "the loop used {used} s of CPU in 1.5 s under a 0.2-CPU quota: {log}");
}

/// `container_size: small` is one CPU: two spinning processes get about one CPU's time between
/// them, and an unknown size is refused at creation.
#[tokio::test]
async fn a_small_container_size_is_one_cpu() {
    let s = TestServer::start().await;
    let (status, err) = s
        .post("/v1/agents/environments", json!({"environment": {"type": "openai_hosted", "container_size": "huge"}}))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(err["error"]["param"], "environment.container_size", "{err}");
    if no_cpu_cgroup() {
        return;
    }
    let spin = "import os, time\nend = time.time() + 1.5\nfor _ in range(2):\n    if os.fork() == 0:\n        while time.time() < end: pass\n        os._exit(0)\nfor _ in range(2): os.wait()\nt = os.times()\nprint('cpu', t.children_user + t.children_system)\n";
    let data = base64::engine::general_purpose::STANDARD.encode(spin);
    let e = env(
        &s,
        json!({"environment": {"type": "openai_hosted", "container_size": "small",
        "files": [{"type": "inline", "path": "/workspace/spin.py", "data": data}],
        "setup_commands": [{"command": "python3 /workspace/spin.py"}]}}),
    )
    .await;
    assert_eq!(e["container_size"], "small", "{e}");
    let (used, log) = setup_cpu_seconds(&s, e["id"].as_str().unwrap()).await;
    assert!(used < 1.9, "two spinning processes used {used} s of CPU in 1.5 s on one CPU: {log}");
}
