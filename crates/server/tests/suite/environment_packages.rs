//! System packages (`packages.system`): installed with apt into the
//! environment's own writable system, kept across a server restart, never on
//! the host; a failure is recorded with apt's output; without network access
//! they fail at once. Two tests reach deb.debian.org.

use crate::support::{TestServer, models_toml};
use base64::Engine as _;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::Duration;
use test_support::model_server::{ModelServer, Step};

async fn environment(s: &TestServer, config: Value) -> String {
    let (status, env) = s.post("/v1/agents/environments", json!({"environment": config})).await;
    assert_eq!(status, StatusCode::CREATED, "{env}");
    env["id"].as_str().unwrap().to_string()
}

/// Initializes the environment through a direct file operation and returns
/// its record once initialization ended.
async fn initialize(s: &TestServer, id: &str) -> Value {
    let data = base64::engine::general_purpose::STANDARD.encode("x");
    let body = json!({"type": "inline", "path": "/workspace/touch", "data": data});
    let _ = s.post(&format!("/v1/agents/environments/{id}/files"), body).await;
    for _ in 0..600 {
        let (_, e) = s.get(&format!("/v1/agents/environments/{id}")).await;
        if e["status"] == "ready" || e["status"] == "failed" {
            return e;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("environment {id} never finished initializing");
}

fn host_is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").unwrap().uid() == 0
}

#[tokio::test]
async fn system_packages_install_into_the_environment_and_survive_a_restart() {
    assert!(!std::path::Path::new("/usr/bin/hello").exists(), "this test needs a host without `hello`");
    let model = ModelServer::with_script(vec![
        Step::tool_call("shell", json!({"command": "hello; dpkg -s hello | grep Status"})),
        Step::text("done"),
    ])
    .await
    .unwrap();
    let s = TestServer::with_model(&model).await;
    let id = environment(
        &s,
        json!({"type": "openai_hosted", "network": {"access": "enabled"},
        "packages": {"system": ["hello"]},
        "setup_commands": [{"command": "hello > /workspace/greeting"}]}),
    )
    .await;
    let started = std::time::Instant::now();
    let e = initialize(&s, &id).await;
    eprintln!("initialization with apt took {:?}", started.elapsed());
    if !host_is_root() {
        let message = e["error"]["message"].as_str().unwrap();
        assert!(message.contains("needs the server to run as root"), "{e}");
        return;
    }
    assert_eq!(e["status"], "ready", "{e}");
    let log = e["setup_log"].as_str().unwrap();
    assert!(log.contains("APT::Sandbox::User=root") && log.contains("Setting up hello"), "{log}");
    let root = s.dir.path().join("environments").join(&id);
    assert_eq!(std::fs::read_to_string(root.join("workspace/greeting")).unwrap(), "Hello, world!\n");
    assert!(root.join("system/upper/usr/bin/hello").is_file(), "the package lives in the environment's directory");
    assert!(!std::path::Path::new("/usr/bin/hello").exists(), "the package reached the host");

    // A restart recreates the sandbox over the same directory, without setup.
    let key = s.key.clone();
    let dir = s.stop().await;
    let toml = models_toml(&model);
    let s = TestServer::start_in(dir, |c| {
        c.bootstrap_key = Some(key);
        c.models_toml = Some(toml);
    })
    .await;
    let sess =
        s.session(json!({"agent": {"model": "m"}, "environment": {"type": "reference", "environment_id": id}})).await;
    let sid = sess["id"].as_str().unwrap();
    let t = s.send(sid, "greet").await;
    let turn = s.wait_turn(sid, &t).await;
    let (_, items) = s.get(&format!("/v1/agents/sessions/{sid}/items?order=asc&limit=100")).await;
    let (_, env) = s.get(&format!("/v1/agents/environments/{id}")).await;
    assert_eq!(turn["status"], "completed", "{turn}\n{items}\n{env}");
    let cmd = items["data"].as_array().unwrap().iter().find(|i| i["type"] == "command_execution").unwrap().clone();
    let out = cmd["output"].as_str().unwrap();
    assert!(out.contains("Hello, world!") && out.contains("install ok installed"), "{cmd}");
}

#[tokio::test]
async fn an_unknown_system_package_fails_the_environment_with_apts_output() {
    let s = TestServer::start().await;
    let id = environment(
        &s,
        json!({"type": "openai_hosted", "network": {"access": "enabled"},
        "packages": {"system": ["rebyte-no-such-package"]}}),
    )
    .await;
    let e = initialize(&s, &id).await;
    assert_eq!(e["status"], "failed", "{e}");
    if !host_is_root() {
        return;
    }
    let output = e["error"]["output"].as_str().unwrap();
    assert!(output.contains("Unable to locate package rebyte-no-such-package"), "{e}");
    assert!(e["error"]["step"].as_str().unwrap().contains("apt-get"), "{e}");
    assert!(e["error"]["message"].as_str().unwrap().contains("exit code 100"), "{e}");
}

#[tokio::test]
async fn system_packages_without_network_access_fail_with_a_clear_message() {
    let s = TestServer::start().await;
    let id = environment(&s, json!({"type": "openai_hosted", "packages": {"system": ["hello"]}})).await;
    let e = initialize(&s, &id).await;
    assert_eq!(e["status"], "failed", "{e}");
    if !host_is_root() {
        return;
    }
    assert_eq!(e["error"]["step"], "packages.system");
    let message = e["error"]["message"].as_str().unwrap();
    assert!(message.contains("system packages need network access"), "{message}");
}
