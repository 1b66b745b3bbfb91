//! `call_tool` round trip through a broker and `Toolset::call_tool` (fresh `tools/list`,
//! allowlist, schema validation, `tools/call`) against the same call made directly with an rmcp
//! client, both to server-everything over stdio, in the same run (issue 5: ≤ 1.5×).
//!
//! Then 100 concurrent calls, one per session, on both paths.
//!
//! Then the call as a turn sees it when the model streams the arguments: the engine starts the
//! call's fresh `tools/list` as soon as the streamed arguments name the server
//! ([`Toolset::prefetch`]); the rest of the arguments arrive `TAIL_CHUNKS` chunks of `PACE`
//! later; timed from the arguments being complete to the `mcp_call` record being ready
//! ([`Toolset::call_tool_prefetched`]), against a direct rmcp call after the same idle gap.
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
/// Streamed calls timed (after `WARMUP_STREAMED`).
const STREAMED: usize = 200;
const WARMUP_STREAMED: usize = 20;
/// The model's pace: one argument chunk every 20 ms (real models: tens of ms per chunk).
const PACE: Duration = Duration::from_millis(20);
/// Chunks still to come once the arguments name the server: `,"name":"echo","arguments":
/// {"message":"bench"}}` is about ten tokens; three chunks is a conservative tail.
const TAIL_CHUNKS: u32 = 3;

fn stats(mut samples: Vec<Duration>) -> (Duration, Duration, Duration) {
    samples.sort();
    let at = |p: f64| samples[((samples.len() as f64 - 1.0) * p).round() as usize];
    let mean = samples.iter().sum::<Duration>() / samples.len() as u32;
    (at(0.5), at(0.99), mean)
}

#[tokio::main]
async fn main() {
    if let Err(e) = test_support::npm::ensure_installed(&support::servers_dir(), support::EVERYTHING_PACKAGE) {
        eprintln!("cannot run this bench: {e}");
        std::process::exit(2);
    }
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

    validation(broker.connection()).await;
    streamed(&direct_peer, &toolset, &args, &arguments).await;
    drop(direct);
}

/// One call at a time, as a turn streams it: see the module documentation.
async fn streamed(
    direct: &rmcp::service::Peer<rmcp::service::RoleClient>,
    toolset: &Toolset,
    args: &CallToolArgs,
    arguments: &serde_json::Map<String, serde_json::Value>,
) {
    let cancel = CancellationToken::new();
    let tail = PACE * TAIL_CHUNKS;
    let mut direct_samples = Vec::new();
    let mut streamed_samples = Vec::new();
    let mut unprefetched_samples = Vec::new();
    for round in 0..WARMUP_STREAMED + STREAMED {
        // The same idle gap before each path's timed part.
        tokio::time::sleep(tail).await;
        let started = Instant::now();
        let result =
            direct.call_tool(CallToolRequestParams::new("echo").with_arguments(arguments.clone())).await.unwrap();
        assert!(!result.is_error.unwrap_or(false));
        let direct_took = started.elapsed();

        // The arguments name the server: the engine starts the prefetch; the rest streams.
        let prefetch = toolset.prefetch(&args.server, &cancel);
        tokio::time::sleep(tail).await;
        let started = Instant::now();
        let record = toolset.call_tool_prefetched(args, prefetch, &cancel).await;
        let streamed_took = started.elapsed();
        assert_eq!(record.status, McpCallStatus::Completed, "{record:?}");

        // The same without a prefetch: the fresh fetch follows the complete arguments.
        tokio::time::sleep(tail).await;
        let started = Instant::now();
        let record = toolset.call_tool(args, &cancel).await;
        let unprefetched_took = started.elapsed();
        assert_eq!(record.status, McpCallStatus::Completed, "{record:?}");
        if round >= WARMUP_STREAMED {
            direct_samples.push(direct_took);
            streamed_samples.push(streamed_took);
            unprefetched_samples.push(unprefetched_took);
        }
    }
    let (d50, d99, dmean) = stats(direct_samples);
    let (s50, s99, smean) = stats(streamed_samples);
    let (u50, u99, umean) = stats(unprefetched_samples);
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
    println!(
        "streamed call_tool, one at a time, {STREAMED} calls (after {WARMUP_STREAMED}): arguments complete \
         {TAIL_CHUNKS} chunks x {PACE:?} after they name the server; timed from complete arguments to the record"
    );
    println!("direct rmcp client tools/call:                p50 {d50:?}  p99 {d99:?}  mean {dmean:?}");
    println!("Toolset::call_tool_prefetched (full path):    p50 {s50:?}  p99 {s99:?}  mean {smean:?}");
    println!("Toolset::call_tool, no prefetch (full path):  p50 {u50:?}  p99 {u99:?}  mean {umean:?}");
    println!(
        "ratio prefetched / direct: p50 {:.2}x  mean {:.2}x;  no prefetch / direct: p50 {:.2}x  mean {:.2}x",
        ratio(s50, d50),
        ratio(smean, dmean),
        ratio(u50, d50),
        ratio(umean, dmean)
    );
}

/// Schema validation of `echo`'s arguments: a compile per call (before) vs the cached validator.
async fn validation(connection: &Connection) {
    let tools = connection.list_tools(&CallContext::default()).await.unwrap();
    let echo = tools.iter().find(|tool| tool.name == "echo").unwrap();
    let arguments = json!({"message": "bench"});
    let schema = serde_json::Value::Object(echo.input_schema.as_ref().clone());
    let time = |f: &dyn Fn()| {
        let mut samples = Vec::with_capacity(2000);
        for _ in 0..2000 {
            let started = Instant::now();
            f();
            samples.push(started.elapsed());
        }
        stats(samples)
    };
    let (c50, _, cmean) = time(&|| {
        let validator = jsonschema::validator_for(&schema).unwrap();
        assert!(validator.is_valid(&arguments));
    });
    let (v50, _, vmean) = time(&|| {
        mcp::validate::arguments("everything", echo, &arguments).unwrap();
    });
    println!(
        "validating echo's arguments: compile + validate p50 {c50:?} mean {cmean:?};  validate::arguments (cached validator) p50 {v50:?} mean {vmean:?}"
    );
}
