//! MCP tools in turns (issue 5) and their credentials (issue 6), end to end: the scripted model
//! searches and calls through `search_tools` and `call_tool` against real MCP servers —
//! `@modelcontextprotocol/server-everything` over Streamable HTTP, the auth fixtures, and stdio
//! servers run inside an environment's sandbox.
//!
//! The npm packages come from `npm ci` on first use: the mcp crate's `tests/servers` (server-
//! everything and its `http.mjs` auth fixture) and this crate's `tests/servers`
//! (server-filesystem, `bearer.mjs`, `env.mjs`). A sandbox sees the host's toolchain (node,
//! npx) read-only but not this checkout, and tests run offline: a test copies this crate's
//! `tests/servers` (with its `node_modules`) into the environment's `/workspace` before the
//! first turn, as setup would install them, and the stdio server runs from there.

mod cancel;
mod env_http;
mod http;
mod limited;
mod prefetch;
mod stdio;
mod vaults;
mod workflow;

use crate::support::TestServer;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;
use test_support::model_server::{ModelServer, Step};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The mcp crate's test servers (server-everything, `http.mjs`).
pub fn mcp_servers_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../mcp/tests/servers")
}

/// This crate's test servers (server-filesystem, `bearer.mjs`, `env.mjs`).
pub fn servers_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/servers")
}

/// Installs both fixture directories' npm packages if they are missing.
pub fn ensure_npm() {
    for (dir, probe) in [
        (mcp_servers_dir(), "@modelcontextprotocol/server-everything"),
        (servers_dir(), "@modelcontextprotocol/server-filesystem"),
    ] {
        if let Err(e) = test_support::npm::ensure_installed(&dir, probe) {
            panic!("{e}");
        }
    }
}

/// A Node MCP server on 127.0.0.1, stopped when dropped.
pub struct NodeServer {
    /// The MCP endpoint (`…/mcp`).
    pub url: String,
    pub base: String,
    _child: Child,
}

impl NodeServer {
    /// Starts `script args…` in `dir`; it prints `listening <port>` on stdout once bound.
    async fn fixture(dir: PathBuf, script: &str, args: &[&str]) -> Self {
        ensure_npm();
        let mut child = Command::new("node")
            .arg(dir.join(script))
            .args(args)
            .current_dir(&dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("node starts");
        let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
        let port = loop {
            let line = lines.next_line().await.expect("read stdout").expect("the fixture printed its port");
            if let Some(port) = line.strip_prefix("listening ") {
                break port.trim().to_owned();
            }
        };
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let base = format!("http://127.0.0.1:{port}");
        NodeServer { url: format!("{base}/mcp"), base, _child: child }
    }

    /// The mcp crate's `http.mjs`: wants `Authorization: Bearer s3cret-token` and `X-Tenant: acme`.
    pub async fn auth_fixture() -> Self {
        Self::fixture(mcp_servers_dir(), "http.mjs", &["default"]).await
    }

    /// `bearer.mjs`: accepts bearer tokens starting with `prefix`.
    pub async fn bearer(prefix: &str) -> Self {
        Self::fixture(servers_dir(), "bearer.mjs", &[prefix]).await
    }

    /// `timed.mjs`: logs when each JSON-RPC request arrives (`GET /stats`).
    pub async fn timed() -> Self {
        Self::fixture(servers_dir(), "timed.mjs", &[]).await
    }

    /// server-everything in Streamable HTTP mode; ready once it says it is listening.
    pub async fn everything() -> Self {
        ensure_npm();
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let entry = mcp_servers_dir().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
        let mut child = Command::new("node")
            .arg(entry)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .current_dir(mcp_servers_dir())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("node starts");
        let mut lines = BufReader::new(child.stderr.take().expect("piped")).lines();
        loop {
            let line = lines.next_line().await.expect("read stderr").expect("server-everything said it is listening");
            if line.contains("listening on port") {
                break;
            }
        }
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let base = format!("http://127.0.0.1:{port}");
        NodeServer { url: format!("{base}/mcp"), base, _child: child }
    }

    /// Stops the server at once (SIGKILL).
    pub async fn kill(&mut self) {
        let _ = self._child.kill().await;
    }

    /// `GET /stats` of a fixture.
    pub async fn stats(&self) -> Value {
        reqwest::get(format!("{}/stats", self.base)).await.unwrap().json().await.unwrap()
    }
}

/// A URL where nothing listens.
pub fn dead_url() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    format!("http://127.0.0.1:{port}/mcp")
}

pub async fn setup(steps: Vec<Step>) -> (ModelServer, TestServer) {
    let model = ModelServer::with_script(steps).await.unwrap();
    let server = TestServer::with_model(&model).await;
    (model, server)
}

/// An HTTP MCP tool definition.
pub fn http_tool(label: &str, url: &str, required: bool) -> Value {
    json!({"type": "mcp", "server_label": label, "required": required,
           "transport": {"type": "http", "server_url": url}})
}

/// A session with no environment and `tools`; returns its id.
pub async fn session_with(s: &TestServer, tools: Value) -> String {
    let session = s.session(json!({"agent": {"model": "m", "tools": tools}, "environment": {"type": "none"}})).await;
    session["id"].as_str().unwrap().to_string()
}

/// Sends `text` and waits (up to 60 s: a sandbox and Node start) for the turn to end.
pub async fn run_turn(s: &TestServer, sid: &str, text: &str) -> (String, Value) {
    let turn_id = s.send(sid, text).await;
    let path = format!("/v1/agents/sessions/{sid}/turns/{turn_id}");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let (_, turn) = s.get(&path).await;
        if ["completed", "failed", "cancelled"].iter().any(|st| turn["status"] == *st) {
            return (turn_id, turn);
        }
        assert!(tokio::time::Instant::now() < deadline, "turn never ended: {turn}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// The items of a turn, oldest first.
pub async fn turn_items(s: &TestServer, sid: &str, turn_id: &str) -> Vec<Value> {
    let (status, items) = s.get(&format!("/v1/agents/sessions/{sid}/turns/{turn_id}/items?order=asc")).await;
    assert_eq!(status, StatusCode::OK, "{items}");
    items["data"].as_array().unwrap().clone()
}

/// The `mcp_call` items among `items`.
pub fn mcp_calls(items: &[Value]) -> Vec<Value> {
    items.iter().filter(|i| i["type"] == "mcp_call").cloned().collect()
}

/// The text of the tool result for `call_id` in a recorded model request (Chat Completions).
pub fn tool_result(request: &Value, call_id: &str) -> String {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .and_then(|m| m["content"].as_str())
        .unwrap_or_else(|| panic!("no tool result for {call_id} in {request}"))
        .to_string()
}

/// The names of the tools offered in a recorded model request.
pub fn offered(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| tools.iter().filter_map(|t| t["function"]["name"].as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

/// Creates a standalone environment whose `/workspace` holds this crate's `tests/servers`
/// (the scripts and their `node_modules`), copied in before its first use.
pub async fn environment_with_servers(s: &TestServer, config: Value) -> String {
    ensure_npm();
    let mut environment = json!({"type": "openai_hosted"});
    if let (Value::Object(env), Value::Object(extra)) = (&mut environment, config) {
        env.extend(extra);
    }
    let (status, env) = s.post("/v1/agents/environments", json!({"environment": environment})).await;
    assert_eq!(status, StatusCode::CREATED, "{env}");
    let id = env["id"].as_str().unwrap().to_string();
    let workspace = s.dir.path().join("environments").join(&id).join("workspace");
    std::fs::create_dir_all(&workspace).unwrap();
    let copied = std::process::Command::new("cp")
        .arg("-R")
        .arg(format!("{}/.", servers_dir().display()))
        .arg(&workspace)
        .status()
        .unwrap();
    assert!(copied.success(), "copying the test servers into the workspace failed");
    id
}
