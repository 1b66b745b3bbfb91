//! Network access `enabled` through the real server: the environment's
//! commands reach the internet (deb.debian.org, by name) but not this
//! server's own API and `/metrics` on the host's loopback, nor the host's
//! own address.

use crate::support::TestServer;
use base64::Engine as _;
use reqwest::StatusCode;
use serde_json::json;
use std::time::Duration;

/// The host's address on its default route.
fn host_ip() -> String {
    let probe = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
    probe.connect("192.0.2.1:9").expect("a default route");
    probe.local_addr().unwrap().ip().to_string()
}

#[tokio::test]
async fn an_enabled_environment_reaches_the_internet_but_not_the_servers_own_api() {
    // One listener on every address of the host, besides the server's own on 127.0.0.1.
    let all = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    let all_port = all.local_addr().unwrap().port();
    let s = TestServer::start().await;
    let port = s.addr.port();
    let targets = [format!("127.0.0.1/{port}"), format!("{}/{all_port}", host_ip())];
    let probe = format!(
        "for t in {}; do if timeout 5 bash -c \"exec 3<>/dev/tcp/$t\" 2>/dev/null; then echo \"reached $t\"; \
         else echo \"blocked $t\"; fi; done; timeout 10 bash -c 'exec 3<>/dev/tcp/deb.debian.org/80' && echo internet",
        targets.join(" ")
    );
    let config = json!({"type": "openai_hosted", "network": {"access": "enabled"},
                        "setup_commands": [{"command": probe}]});
    let (status, env) = s.post("/v1/agents/environments", json!({"environment": config})).await;
    assert_eq!(status, StatusCode::CREATED, "{env}");
    let id = env["id"].as_str().unwrap();
    let data = base64::engine::general_purpose::STANDARD.encode("x");
    let _ = s
        .post(
            &format!("/v1/agents/environments/{id}/files"),
            json!({"type": "inline", "path": "/workspace/x", "data": data}),
        )
        .await;
    let mut env = json!(null);
    for _ in 0..300 {
        (_, env) = s.get(&format!("/v1/agents/environments/{id}")).await;
        if env["status"] == "ready" || env["status"] == "failed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(env["status"], "ready", "{env}");
    let log = env["setup_log"].as_str().unwrap_or_default();
    for t in &targets {
        assert!(log.contains(&format!("blocked {t}")), "{t} was reached from the sandbox: {log}");
    }
    assert!(log.contains("internet"), "the sandbox did not reach deb.debian.org: {log}");
    drop(all);
}
