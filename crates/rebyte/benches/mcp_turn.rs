//! `call_tool` as the server experiences it in a real turn (issue 5: ≤ 1.5× a direct rmcp
//! call), against a release `rebyte` process and the scripted model server: one turn whose
//! model streams `call_tool` to server-everything (stdio, inside the environment's sandbox) in
//! 8 argument chunks 20 ms apart, `CALLS` times. Each call is timed on the session's event
//! stream from its `mcp_call` item being added (the arguments are complete and parsed) to the
//! item being done (the result recorded). Against, in the same run: a direct rmcp client's
//! `tools/call` to another server-everything process on the host, after the same idle gap.
//!
//! Run: `cargo bench -p rebyte --bench mcp_turn` (runs `npm ci` in `crates/mcp/tests/servers`
//! first if its packages are missing; needs Node.js and npm).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures::StreamExt;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::json;
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use test_support::model_server::{ModelServer, ScriptedToolCall, Step};

mod common;

use common::{post, subscribe};
const WARMUP: usize = 10;
const CALLS: usize = 100;
const CHUNKS: usize = 8;
const PACE: Duration = Duration::from_millis(20);
const ARGUMENTS: &str = r#"{"server":"everything","name":"echo","arguments":{"message":"bench"}}"#;
const EVERYTHING: &str = "node_modules/@modelcontextprotocol/server-everything/dist/index.js";

fn servers_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../mcp/tests/servers")
}

/// The server, and its own time for each call_tool (its `call_tool done` debug log line).
struct Server {
    inner: common::Server,
    server_side: std::sync::Arc<std::sync::Mutex<Vec<Duration>>>,
}

fn start_server(model: &ModelServer) -> Server {
    // REBYTE_LOG=mcp=debug shows each call_tool's use of its prefetch; the engine's
    // `call_tool done` line carries the server's own time for the call.
    let log = format!("{},engine::mcp_tools=debug", std::env::var("REBYTE_LOG").unwrap_or_else(|_| "warn".into()));
    let (inner, stderr) = common::start_server(model, &log, true);
    let server_side = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = server_side.clone();
    let stderr = stderr.unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let micros = line.split("micros=").nth(1).and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next());
            match micros.and_then(|m| m.parse::<u64>().ok()) {
                Some(m) if line.contains("call_tool done") => sink.lock().unwrap().push(Duration::from_micros(m)),
                _ => eprintln!("{line}"),
            }
        }
    });
    Server { inner, server_side }
}

fn stats(mut samples: Vec<Duration>) -> (Duration, Duration, Duration) {
    samples.sort();
    let at = |p: f64| samples[((samples.len() as f64 - 1.0) * p).round() as usize];
    (at(0.5), at(0.99), samples.iter().sum::<Duration>() / samples.len() as u32)
}

/// The turn: every `mcp_call`'s time from added to done.
async fn through_the_server(http: &reqwest::Client, model: &ModelServer, server: &Server) -> Vec<Duration> {
    let env = post(
        http,
        &format!("{}/v1/agents/environments", server.inner.url),
        json!({"environment": {"type": "openai_hosted"}}),
    )
    .await;
    let env_id = env["id"].as_str().unwrap();
    let workspace = server.inner.dir.path().join("environments").join(env_id).join("workspace");
    std::fs::create_dir_all(&workspace).unwrap();
    let copied = Command::new("cp").arg("-R").arg(format!("{}/.", servers_dir().display())).arg(&workspace).status();
    assert!(copied.unwrap().success());
    let tool = json!({"type": "mcp", "server_label": "everything", "required": true,
        "transport": {"type": "stdio", "command": "node", "cwd": "/workspace", "args": [EVERYTHING]}});
    let session = post(
        http,
        &format!("{}/v1/agents/sessions", server.inner.url),
        json!({
        "agent": {"model": "bench-model", "tools": [tool], "max_steps": WARMUP + CALLS + 1},
        "environment": {"type": "reference", "environment_id": env_id}}),
    )
    .await;
    let sid = session["id"].as_str().unwrap();
    let call = |i: usize| {
        Step::tool_calls([ScriptedToolCall::raw("call_tool", ARGUMENTS).id(format!("c_{i}"))])
            .chunks(CHUNKS)
            .chunk_delay(PACE)
    };
    model.push_all((0..WARMUP + CALLS).map(call));
    model.push(Step::text("done"));
    let mut events = Box::pin(subscribe(http, &format!("{}/v1/agents/sessions/{sid}/events", server.inner.url)).await);
    let input = json!({"events": [{"type": "agent.session.input.message",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "echo"}]}]}]});
    post(http, &format!("{}/v1/agents/sessions/{sid}/events", server.inner.url), input).await;
    let mut added: HashMap<String, Instant> = HashMap::new();
    let mut took = Vec::new();
    while let Some((at, event)) = events.next().await {
        let kind = event["type"].as_str().unwrap_or_default();
        if kind == "agent.session.turn.completed" || kind == "agent.session.turn.failed" {
            assert_eq!(kind, "agent.session.turn.completed", "{event}");
            break;
        }
        let item = &event["item"];
        if item["type"] != "mcp_call" {
            continue;
        }
        let id = item["id"].as_str().unwrap().to_owned();
        match kind {
            "agent.session.turn.item.added" => {
                added.insert(id, at);
            }
            "agent.session.turn.item.done" => {
                assert_eq!(item["status"], "completed", "{item}");
                took.push(at - added[&id]);
            }
            _ => {}
        }
    }
    assert_eq!(took.len(), WARMUP + CALLS);
    took.split_off(WARMUP)
}

/// Direct rmcp `tools/call`s, each after the idle gap of one streamed step.
async fn direct() -> Vec<Duration> {
    let mut command = tokio::process::Command::new("node");
    command.arg(servers_dir().join(EVERYTHING)).current_dir(servers_dir()).stderr(Stdio::null());
    let client = ().serve(TokioChildProcess::new(command).unwrap()).await.unwrap();
    let arguments = json!({"message": "bench"}).as_object().unwrap().clone();
    let mut took = Vec::new();
    for i in 0..WARMUP + CALLS {
        tokio::time::sleep(PACE * (CHUNKS as u32 + 1)).await;
        let started = Instant::now();
        client.call_tool(CallToolRequestParams::new("echo").with_arguments(arguments.clone())).await.unwrap();
        if i >= WARMUP {
            took.push(started.elapsed());
        }
    }
    took
}

#[tokio::main]
async fn main() {
    common::ensure_npm(&servers_dir(), "@modelcontextprotocol/server-everything");
    let model = ModelServer::start().await.unwrap();
    let server = start_server(&model);
    let http = reqwest::Client::new();
    let direct_before = direct().await;
    let turn = through_the_server(&http, &model, &server).await;
    let direct_after = direct().await;
    let direct: Vec<Duration> = direct_before.into_iter().chain(direct_after).collect();
    let (d50, d99, dmean) = stats(direct);
    let (t50, t99, tmean) = stats(turn);
    println!(
        "call_tool in a turn, model streaming {CHUNKS} argument chunks {PACE:?} apart, {CALLS} calls after {WARMUP}:"
    );
    println!("direct rmcp tools/call (after the same idle gap): p50 {d50:?}  p99 {d99:?}  mean {dmean:?}");
    println!("rebyte, mcp_call added -> done (event stream):    p50 {t50:?}  p99 {t99:?}  mean {tmean:?}");
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
    println!("ratio: p50 {:.2}x  mean {:.2}x", ratio(t50, d50), ratio(tmean, dmean));
    let mut inside = server.server_side.lock().unwrap().clone();
    assert_eq!(inside.len(), WARMUP + CALLS, "one `call_tool done` log line per call");
    let (s50, s99, smean) = stats(inside.split_off(WARMUP));
    println!("rebyte, call_tool in the server (its log):         p50 {s50:?}  p99 {s99:?}  mean {smean:?}");
    println!("ratio: p50 {:.2}x  mean {:.2}x", ratio(s50, d50), ratio(smean, dmean));
}
