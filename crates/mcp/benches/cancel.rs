//! How fast a cancelled `call_tool` lets go (issue 17: ≤ 100 ms): `Toolset::call_tool` (fresh
//! `tools/list`, checks, `tools/call`) is started, and once the server is inside the tool the
//! call's cancellation token fires; timed from the cancel to the `mcp_call` record being back
//! (`incomplete`). Over stdio (`tests/servers/fixture.mjs`, a host process) and Streamable HTTP
//! (`tests/servers/http.mjs`), each with a tool that ends when it hears `notifications/cancelled`
//! (`slow`) and one that blocks the server's whole event loop, so it cannot even read the
//! cancellation until the tool is done (`block`).
//!
//! Run: `cargo bench -p mcp --bench cancel` (installs the npm test servers if missing)

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[allow(dead_code)]
#[path = "../tests/suite/support.rs"]
mod support;

use mcp::{CallToolArgs, Connection, McpCallStatus, Secret, ServerConfig, Toolset, TransportConfig};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const ROUNDS: usize = 40;
const WARMUP: usize = 5;
/// How long after the call starts the cancel fires (the server is inside the tool by then).
const INSIDE: Duration = Duration::from_millis(100);
/// How long `block` holds the server: the next round starts after it.
const BLOCK_MS: u64 = 400;

fn stats(mut samples: Vec<Duration>) -> (Duration, Duration, Duration) {
    samples.sort();
    let at = |p: f64| samples[((samples.len() as f64 - 1.0) * p).round() as usize];
    (at(0.5), at(0.99), samples[samples.len() - 1])
}

/// One case: `ROUNDS` cancels of `tool` on `toolset`'s one server; the samples.
async fn case(toolset: &Toolset, server: &str, tool: &str, ms: u64) -> Vec<Duration> {
    let mut samples = Vec::new();
    for round in 0..WARMUP + ROUNDS {
        let cancel = CancellationToken::new();
        let args = CallToolArgs::new(server, tool, json!({"ms": ms}));
        let started = Instant::now();
        let call = {
            let (toolset, cancel) = (toolset.clone(), cancel.clone());
            tokio::spawn(async move { toolset.call_tool(&args, &cancel).await })
        };
        tokio::time::sleep(INSIDE).await;
        let cancelled = Instant::now();
        cancel.cancel();
        let record = call.await.unwrap();
        let took = cancelled.elapsed();
        assert_eq!(record.status, McpCallStatus::Incomplete, "{record:?}");
        if round >= WARMUP {
            samples.push(took);
        }
        // A blocked server is busy until its tool ends: start the next round after it.
        let busy = Duration::from_millis(ms.min(BLOCK_MS)) + Duration::from_millis(50);
        if tool == "block" {
            tokio::time::sleep(busy.saturating_sub(started.elapsed())).await;
        }
    }
    samples
}

#[tokio::main]
async fn main() {
    if let Err(e) = test_support::npm::ensure_installed(&support::servers_dir(), support::EVERYTHING_PACKAGE) {
        eprintln!("cannot run this bench: {e}");
        std::process::exit(2);
    }
    let cache = support::cache();
    let stdio = support::node("fixture.mjs", &[]);
    let stdio_connection = Arc::new(Connection::spawn_stdio("stdio", &stdio, support::timeouts()).await.unwrap());
    let http_server = support::HttpServer::auth_fixture("default").await;
    let mut http = http_server.config();
    http.authorization = Some(Secret::new("Bearer s3cret-token"));
    http.headers.insert("x-tenant".into(), Secret::new("acme"));
    let http_connection = Arc::new(Connection::connect_http("http", &http, support::timeouts()).await.unwrap());
    let stdio_set = Toolset::new("org", "session", cache.clone())
        .with_server(support::stdio_config("stdio", stdio), stdio_connection);
    let http_set = Toolset::new("org", "session", cache)
        .with_server(ServerConfig::new("http", TransportConfig::Http(http)), http_connection);

    println!("cancel → Toolset::call_tool back (incomplete), {ROUNDS} rounds after {WARMUP} warm-up:");
    for (name, toolset, server) in [("stdio", &stdio_set, "stdio"), ("http ", &http_set, "http")] {
        for (tool, ms) in [("slow", 60_000), ("block", BLOCK_MS)] {
            let (p50, p99, max) = stats(case(toolset, server, tool, ms).await);
            println!("  {name} {tool:<5}  p50 {p50:?}  p99 {p99:?}  max {max:?}");
        }
    }
}
