//! Dynamic Workflow's costs (issue 14), in one run:
//! 1. starting a program that returns a constant (a fresh runtime, context, bridge and
//!    `console` each time): p50 against the 2 ms budget;
//! 2. a program making 100 sequential `call_tool`s to server-everything over stdio, against
//!    100 `Toolset::call_tool`s made directly on the same broker (each with its fresh
//!    `tools/list`, allowlist and schema check): ≤ 1.2×. Rounds alternate between the two.
//!
//! The program's host is the same as the engine's (`engine::workflow_tool`): the nested call's
//! JSON arguments go to `Toolset::call_tool_json`, the value back is its `structuredContent`
//! or text. The stdio server runs where the engine runs it: inside a real local sandbox (this
//! package's own binary as its agent, the mcp crate's npm test servers bound read-only into
//! its `/workspace`), its stdin and stdout reaching the broker through the agent, as
//! `engine::mcp_launch` starts it. Both paths use that one broker.
//!
//! Run: `cargo bench -p rebyte --bench workflow` (as root, like every sandbox; installs the
//! npm test servers if missing)

#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures::future::BoxFuture;
use mcp::{
    BrokerRegistry, CallToolArgs, CatalogCache, Connection, McpCallStatus, ServerConfig, StdioConfig, SystemClock,
    Timeouts, Toolset, TransportConfig,
};
use sandbox::{LocalBackend, LocalConfig, Sandbox, SandboxSpec, SpawnRequest};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use workflow::{Call, CallKind, Host, Limits, Status};

const CONSTANT_RUNS: usize = 2000;
const CONSTANT_WARMUP: usize = 100;
const CALLS: usize = 100;
const ROUNDS: usize = 20;

/// The mcp crate's npm test servers (server-everything).
fn servers_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../mcp/tests/servers")
}

fn cache() -> Arc<CatalogCache> {
    Arc::new(CatalogCache::new(Arc::new(SystemClock)))
}

struct ToolsetHost(Toolset);

impl Host for ToolsetHost {
    fn call(&self, call: Call, cancel: CancellationToken) -> BoxFuture<'static, Result<Value, String>> {
        let toolset = self.0.clone();
        Box::pin(async move {
            match call.kind {
                CallKind::SearchTools => toolset
                    .search_tools_json(&call.arguments, &cancel)
                    .await
                    .map_err(|e| e.to_string())
                    .and_then(|found| serde_json::to_value(found).map_err(|e| e.to_string())),
                CallKind::CallTool => {
                    let record = toolset.call_tool_json(&call.arguments, &cancel).await;
                    match (record.error, record.structured, record.output) {
                        (Some(error), _, _) => Err(error),
                        (None, Some(structured), _) => Ok(structured),
                        (None, None, output) => Ok(Value::String(output.unwrap_or_default())),
                    }
                }
            }
        })
    }
}

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    samples[((samples.len() as f64 - 1.0) * p).round() as usize]
}

#[tokio::main]
async fn main() {
    if let Err(e) = test_support::npm::ensure_installed(&servers_dir(), "@modelcontextprotocol/server-everything") {
        eprintln!("cannot run this bench: {e}");
        std::process::exit(2);
    }
    let cancel = CancellationToken::new();
    let limits = Limits::default();

    // 1. A constant.
    let idle = std::sync::Arc::new(ToolsetHost(Toolset::new("org", "session", cache())));
    let mut constant = Vec::new();
    for i in 0..CONSTANT_WARMUP + CONSTANT_RUNS {
        let began = Instant::now();
        let outcome = workflow::run("return 42;", idle.clone(), limits, &cancel).await;
        let took = began.elapsed();
        assert_eq!(outcome.value.as_deref(), Some("42"), "{outcome:?}");
        if i >= CONSTANT_WARMUP {
            constant.push(took);
        }
    }
    let (p50, p99) = (percentile(&mut constant, 0.5), percentile(&mut constant, 0.99));
    println!("program returning a constant ({CONSTANT_RUNS} runs): p50 {p50:?}, p99 {p99:?} (budget p50 2 ms)");

    // 2. 100 sequential call_tools, in a program and directly, to a server in a sandbox.
    let backend =
        LocalBackend::new(LocalConfig::with_agent(env!("CARGO_BIN_EXE_rebyte"), vec!["sandbox-agent".into()]));
    let dir = tempfile::tempdir().unwrap();
    let mut spec = SandboxSpec::new(format!("bench-workflow-{}", std::process::id()), dir.path().join("workspace"));
    spec.read_only.push((servers_dir().canonicalize().unwrap(), "/workspace/servers".into()));
    let sandbox = backend.create_local(spec).await.unwrap();
    let config = StdioConfig {
        command: "node".into(),
        args: vec!["servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js".into(), "stdio".into()],
        ..StdioConfig::default()
    };
    let mut request = SpawnRequest::new(format!("exec node {}", config.args.join(" ")));
    request.cwd = Some("/workspace".into());
    let process = sandbox.spawn_stdio(request).await.unwrap();
    let timeouts = Timeouts::all(Duration::from_secs(20));
    let registry = BrokerRegistry::new();
    let broker = registry
        .get_or_start("sbx_bench", "everything", || {
            Connection::connect_stdio("everything", process.stdout, process.stdin, timeouts)
        })
        .await
        .unwrap();
    let toolset = Toolset::new("org", "session", cache()).with_server(
        ServerConfig::new("everything", TransportConfig::Stdio(config.clone())),
        broker.connection().clone(),
    );
    let host = std::sync::Arc::new(ToolsetHost(toolset.clone()));
    let args = CallToolArgs::new("everything", "echo", json!({"message": "bench"}));
    let code = format!(
        "let last; for (let i = 0; i < {CALLS}; i++) last = await call_tool({{server: 'everything', name: 'echo', \
         arguments: {{message: 'bench'}}}}); return last;"
    );
    let (mut direct, mut program) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS + 2 {
        let began = Instant::now();
        for _ in 0..CALLS {
            let record = toolset.call_tool(&args, &cancel).await;
            assert_eq!(record.status, McpCallStatus::Completed, "{record:?}");
        }
        let direct_took = began.elapsed();
        let began = Instant::now();
        let outcome = workflow::run(&code, host.clone(), limits, &cancel).await;
        let program_took = began.elapsed();
        assert_eq!(outcome.status, Status::Completed, "{outcome:?}");
        assert_eq!(outcome.value.as_deref(), Some("\"Echo: bench\""));
        if round >= 2 {
            direct.push(direct_took);
            program.push(program_took);
        }
    }
    let (direct_p50, program_p50) = (percentile(&mut direct, 0.5), percentile(&mut program, 0.5));
    let ratio = program_p50.as_secs_f64() / direct_p50.as_secs_f64();
    println!(
        "{CALLS} sequential call_tools, median of {ROUNDS} rounds: direct {direct_p50:?}, in a program \
         {program_p50:?}: {ratio:.3}x (budget 1.2x)"
    );
    let _ = broker.connection().terminate().await;
    let _ = process.handle.kill().await;
    sandbox.destroy().await.unwrap();
}
