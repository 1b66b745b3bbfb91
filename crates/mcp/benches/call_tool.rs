//! `call_tool` round trip through a broker and `Toolset::call_tool` (fresh `tools/list`,
//! allowlist, schema validation, `tools/call`) against the same call made directly with an rmcp
//! client, both to server-everything over stdio, in the same run (issue 5: ≤ 1.5×).
//!
//! Then 100 concurrent calls, one per session, on both paths.
//!
//! Run: `cargo bench -p mcp --bench call_tool` (installs the npm test servers if missing)

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[allow(dead_code)]
#[path = "../tests/suite/support.rs"]
mod support;

use mcp::{BrokerRegistry, CallContext, CallToolArgs, Connection, McpCallStatus, Toolset};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::json;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const WARMUP: usize = 50;
const ROUNDS: usize = 500;
const BLOCK: usize = 25;
const CONCURRENT: usize = 100;
const BATCHES: usize = 30;

fn stats(mut samples: Vec<Duration>) -> (Duration, Duration, Duration) {
    samples.sort();
    let at = |p: f64| samples[((samples.len() as f64 - 1.0) * p).round() as usize];
    let mean = samples.iter().sum::<Duration>() / samples.len() as u32;
    (at(0.5), at(0.99), mean)
}

#[tokio::main]
async fn main() {
    let config = support::everything_stdio_config();

    // Direct: a plain rmcp client, no crate code in the path.
    let mut command = tokio::process::Command::new(&config.command);
    command.args(&config.args).stderr(std::process::Stdio::null());
    let direct = ().serve(TokioChildProcess::new(command).unwrap()).await.unwrap();

    // Through the broker and the toolset, as the engine calls it.
    let registry = BrokerRegistry::new();
    let broker = registry
        .get_or_start("sbx_bench", "everything", || Connection::spawn_stdio("everything", &config, support::timeouts()))
        .await
        .unwrap();
    let toolset_cache = support::cache();
    let toolset = Toolset::new("org", "session", toolset_cache.clone())
        .with_server(support::stdio_config("everything", config.clone()), broker.connection().clone());
    let cancel = CancellationToken::new();
    let args = CallToolArgs::new("everything", "echo", json!({"message": "bench"}));
    let arguments = json!({"message": "bench"}).as_object().unwrap().clone();

    let mut direct_samples = Vec::new();
    let mut toolset_samples = Vec::new();
    let mut bare_samples = Vec::new();
    let mut list_samples = Vec::new();
    let mut pair_samples = Vec::new();
    // Blocks of back-to-back calls per path, alternating, so every path sees a warm server
    // process and the same machine load.
    for block in 0..(WARMUP + ROUNDS) / BLOCK {
        let keep = block * BLOCK >= WARMUP;
        for _ in 0..BLOCK {
            let started = Instant::now();
            let result =
                direct.call_tool(CallToolRequestParams::new("echo").with_arguments(arguments.clone())).await.unwrap();
            assert!(!result.is_error.unwrap_or(false));
            if keep {
                direct_samples.push(started.elapsed());
            }
        }
        for _ in 0..BLOCK {
            let started = Instant::now();
            let record = toolset.call_tool(&args, &cancel).await;
            assert_eq!(record.status, McpCallStatus::Completed, "{record:?}");
            if keep {
                toolset_samples.push(started.elapsed());
            }
        }
        for _ in 0..BLOCK {
            let started = Instant::now();
            broker.connection().call_tool("echo", arguments.clone(), &CallContext::default()).await.unwrap();
            if keep {
                bare_samples.push(started.elapsed());
            }
        }
        for _ in 0..BLOCK {
            let started = Instant::now();
            broker.connection().list_tools(&CallContext::default()).await.unwrap();
            if keep {
                list_samples.push(started.elapsed());
            }
        }
        for _ in 0..BLOCK {
            let started = Instant::now();
            broker.connection().list_tools(&CallContext::default()).await.unwrap();
            broker.connection().call_tool("echo", arguments.clone(), &CallContext::default()).await.unwrap();
            if keep {
                pair_samples.push(started.elapsed());
            }
        }
    }
    let (d50, d99, dmean) = stats(direct_samples);
    let (t50, t99, tmean) = stats(toolset_samples);
    let (b50, b99, bmean) = stats(bare_samples);
    let (l50, l99, lmean) = stats(list_samples);
    let (p50, p99, pmean) = stats(pair_samples);
    println!(
        "server-everything over stdio, echo, {ROUNDS} calls per path (after {WARMUP} warm-up), in alternating blocks of {BLOCK}"
    );
    println!("direct rmcp client tools/call:           p50 {d50:?}  p99 {d99:?}  mean {dmean:?}");
    println!("broker + Toolset::call_tool (full path): p50 {t50:?}  p99 {t99:?}  mean {tmean:?}");
    println!("broker Connection::call_tool (no checks): p50 {b50:?}  p99 {b99:?}  mean {bmean:?}");
    println!("broker tools/list alone:                 p50 {l50:?}  p99 {l99:?}  mean {lmean:?}");
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
    println!("broker tools/list then tools/call, no checks: p50 {p50:?}  p99 {p99:?}  mean {pmean:?}");
    println!(
        "ratio full path / direct: p50 {:.2}x  mean {:.2}x;  transport only (no checks) / direct: p50 {:.2}x  mean {:.2}x",
        ratio(t50, d50),
        ratio(tmean, dmean),
        ratio(b50, d50),
        ratio(bmean, dmean)
    );

    // 100 sessions at once: one batch of 100 concurrent calls per path, repeated.
    let direct_peer = direct.peer().clone();
    let mut direct_batches = Vec::new();
    let mut toolset_batches = Vec::new();
    for _ in 0..BATCHES {
        let started = Instant::now();
        let calls = (0..CONCURRENT).map(|i| {
            let peer = direct_peer.clone();
            let arguments = json!({"message": format!("session {i}")}).as_object().unwrap().clone();
            async move { peer.call_tool(CallToolRequestParams::new("echo").with_arguments(arguments)).await.unwrap() }
        });
        futures::future::join_all(calls).await;
        direct_batches.push(started.elapsed());

        let started = Instant::now();
        let calls = (0..CONCURRENT).map(|i| {
            let toolset = Toolset::new("org", format!("session_{i}"), toolset_cache.clone())
                .with_server(support::stdio_config("everything", config.clone()), broker.connection().clone());
            let cancel = cancel.clone();
            async move {
                let args = CallToolArgs::new("everything", "echo", json!({"message": format!("session {i}")}));
                let record = toolset.call_tool(&args, &cancel).await;
                assert_eq!(record.output, Some(format!("Echo: session {i}")));
            }
        });
        futures::future::join_all(calls).await;
        toolset_batches.push(started.elapsed());
    }
    let (db50, _, dbmean) = stats(direct_batches);
    let (tb50, _, tbmean) = stats(toolset_batches);
    println!("{CONCURRENT} concurrent calls (one per session), {BATCHES} batches, wall time per batch:");
    println!("direct rmcp client:             p50 {db50:?}  mean {dbmean:?}");
    println!("broker + Toolset::call_tool:    p50 {tb50:?}  mean {tbmean:?}");
    println!("ratio: p50 {:.2}x  mean {:.2}x", ratio(tb50, db50), ratio(tbmean, dbmean));
    drop(direct);
}
