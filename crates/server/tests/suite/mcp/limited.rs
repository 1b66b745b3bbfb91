//! A `limited` environment credential: the stdio server that selects it holds a placeholder
//! (its `/proc/<pid>/environ` shows nothing more), and its request to the allowed host through
//! the environment's egress proxy arrives with the real value in the query and the header.

use super::env_http::host_ip;
use super::{environment_with_servers, run_turn, setup, tool_result};
use crate::suite::vaults::{credential, vault};
use serde_json::{Value, json};
use test_support::model_server::{ScriptedToolCall, Step};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// An HTTP server on every address that answers with the request head it got.
async fn echo_server() -> u16 {
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).await.unwrap_or(0) == 1 {
                    head.push(byte[0]);
                }
                let reply = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", head.len());
                let _ = stream.write_all(reply.as_bytes()).await;
                let _ = stream.write_all(&head).await;
            });
        }
    });
    port
}

#[tokio::test]
async fn a_limited_credential_is_a_placeholder_in_the_sandbox_and_real_only_toward_its_host() {
    let ip = host_ip();
    let port = echo_server().await;
    let call = |id: &str, name: &str, arguments: Value| {
        Step::tool_calls([ScriptedToolCall::new(
            "call_tool",
            json!({"server": "envs", "name": name, "arguments": arguments}),
        )
        .id(id)])
    };
    let (model, s) = setup(vec![
        call("c_env", "env", json!({"names": ["API_TOKEN", "HTTP_PROXY"]})),
        call("c_fetch", "fetch", json!({"url": format!("http://{ip}:{port}/v1/data"), "secret_env": "API_TOKEN"})),
        Step::text("done"),
    ])
    .await;
    let v = vault(&s).await;
    let token = credential(
        &s,
        &v,
        json!({"type": "environment_variable", "secret_name": "API_TOKEN", "secret_value": "lim1ted-s3cret",
               "networking": {"type": "limited", "allowed_hosts": [ip]}}),
    )
    .await;
    let env_id = environment_with_servers(
        &s,
        json!({"network": {"access": "restricted", "allowed_domains": [ip]},
               "vault_credentials": [{"vault_id": v, "credential_id": token["id"]}]}),
    )
    .await;
    let tools = json!([{"type": "mcp", "server_label": "envs", "required": true,
        "transport": {"type": "stdio", "command": "node", "cwd": "/workspace", "args": ["env.mjs"],
                      "env_vars": ["API_TOKEN"]}}]);
    let session = s
        .session(json!({"agent": {"model": "m", "tools": tools},
                        "environment": {"type": "reference", "environment_id": env_id}}))
        .await;
    let sid = session["id"].as_str().unwrap();
    let (_, turn) = run_turn(&s, sid, "use the token").await;
    assert_eq!(turn["status"], "completed", "{turn}");
    let requests: Vec<Value> = model.requests().into_iter().map(|r| r.body).collect();
    let seen: Value = serde_json::from_str(&tool_result(&requests[1], "c_env")).unwrap();
    let placeholder = seen["env"]["API_TOKEN"].as_str().unwrap().to_string();
    assert!(placeholder.starts_with("rebyte_placeholder_"), "{seen}");
    assert_eq!(seen["env"]["HTTP_PROXY"], "http://127.0.0.1:3128", "{seen}");
    let fetched = tool_result(&requests[2], "c_fetch");
    assert!(fetched.starts_with("200 GET /v1/data?key=lim1ted-s3cret HTTP/1.1"), "{fetched}");
    assert!(fetched.contains("Authorization: Bearer lim1ted-s3cret"), "{fetched}");
    assert!(!fetched.contains(&placeholder), "{fetched}");
    // The value never reached the model through the sandbox's side: only the upstream's echo has it.
    assert!(!tool_result(&requests[1], "c_env").contains("lim1ted-s3cret"));
}
