//! Starting the real test servers: npm install on first use, stdio servers as host processes,
//! HTTP servers on 127.0.0.1 with readiness read from their output (never a sleep).

use mcp::{CatalogCache, Connection, HttpConfig, ServerConfig, StdioConfig, SystemClock, Timeouts, TransportConfig};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

pub fn servers_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests").join("servers")
}

/// The npm package whose presence means `tests/servers` is installed.
pub const EVERYTHING_PACKAGE: &str = "@modelcontextprotocol/server-everything";

/// Installs the npm packages of `tests/servers` if `node_modules` is missing.
pub fn ensure_npm() {
    if let Err(e) = test_support::npm::ensure_installed(&servers_dir(), EVERYTHING_PACKAGE) {
        panic!("{e}");
    }
}

pub fn everything_entry() -> PathBuf {
    servers_dir().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

pub fn timeouts() -> Timeouts {
    Timeouts::all(Duration::from_secs(20))
}

pub fn node(script: &str, args: &[&str]) -> StdioConfig {
    ensure_npm();
    let mut all = vec![servers_dir().join(script).to_string_lossy().into_owned()];
    all.extend(args.iter().map(|a| (*a).to_owned()));
    StdioConfig { command: "node".into(), args: all, cwd: Some(servers_dir()), ..StdioConfig::default() }
}

pub fn everything_stdio_config() -> StdioConfig {
    ensure_npm();
    StdioConfig {
        command: "node".into(),
        args: vec![everything_entry().to_string_lossy().into_owned(), "stdio".into()],
        cwd: Some(servers_dir()),
        ..StdioConfig::default()
    }
}

pub async fn spawn(label: &str, config: &StdioConfig) -> Arc<Connection> {
    Arc::new(Connection::spawn_stdio(label, config, timeouts()).await.expect("server starts"))
}

pub async fn fixture(label: &str) -> Arc<Connection> {
    spawn(label, &node("fixture.mjs", &[])).await
}

pub async fn everything_stdio(label: &str) -> Arc<Connection> {
    spawn(label, &everything_stdio_config()).await
}

pub fn stdio_config(label: &str, stdio: StdioConfig) -> ServerConfig {
    ServerConfig::new(label, TransportConfig::Stdio(stdio))
}

pub fn cache() -> Arc<CatalogCache> {
    Arc::new(CatalogCache::new(Arc::new(SystemClock)))
}

/// A Node HTTP server started by a test, stopped when dropped.
pub struct HttpServer {
    pub url: String,
    pub base: String,
    _child: Child,
}

impl HttpServer {
    /// `tests/servers/http.mjs` in `mode`: it prints `listening <port>` once bound.
    pub async fn auth_fixture(mode: &str) -> Self {
        ensure_npm();
        let mut child = Command::new("node")
            .arg(servers_dir().join("http.mjs"))
            .arg(mode)
            .current_dir(servers_dir())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("node starts");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut lines = BufReader::new(stdout).lines();
        let port = loop {
            let line = lines.next_line().await.expect("read stdout").expect("http.mjs printed its port");
            if let Some(port) = line.strip_prefix("listening ") {
                break port.trim().to_owned();
            }
        };
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let base = format!("http://127.0.0.1:{port}");
        HttpServer { url: format!("{base}/mcp"), base, _child: child }
    }

    /// server-everything in Streamable HTTP mode; ready once it says it is listening.
    pub async fn everything() -> Self {
        ensure_npm();
        let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
        let mut child = Command::new("node")
            .arg(everything_entry())
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .current_dir(servers_dir())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("node starts");
        let stderr = child.stderr.take().expect("piped stderr");
        let mut lines = BufReader::new(stderr).lines();
        loop {
            let line = lines.next_line().await.expect("read stderr").expect("server-everything said it is listening");
            if line.contains("listening on port") {
                break;
            }
        }
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let base = format!("http://127.0.0.1:{port}");
        HttpServer { url: format!("{base}/mcp"), base, _child: child }
    }

    pub fn config(&self) -> HttpConfig {
        HttpConfig::new(self.url.clone())
    }

    /// `GET /stats` of the auth fixture.
    pub async fn stats(&self) -> serde_json::Value {
        reqwest::get(format!("{}/stats", self.base)).await.expect("stats").json().await.expect("json")
    }
}

/// The fixture's counters (`stats` tool), read over `connection` directly.
/// The fixture's stats once it has heard a cancellation: `notifications/cancelled` is sent
/// from a task of its own, so the next request may reach the server first. Panics after 5 s.
pub async fn stats_after_a_cancellation(connection: &Connection) -> serde_json::Value {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let stats = fixture_stats(connection).await;
        if stats["cancelled"].as_array().is_some_and(|c| !c.is_empty()) {
            return stats;
        }
        assert!(tokio::time::Instant::now() < deadline, "no cancellation reached the server: {stats}");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

pub async fn fixture_stats(connection: &Connection) -> serde_json::Value {
    let output = connection
        .call_tool("stats", serde_json::Map::new(), &mcp::CallContext::default())
        .await
        .expect("stats answers");
    serde_json::from_str(&output.text).expect("stats is JSON")
}
