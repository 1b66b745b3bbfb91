//! An environment's first use as a user sees it (issue 16, item 1), through a
//! release `rebyte serve`: a fresh environment and a session on it, a turn
//! whose first step runs `true` in the shell and whose second answers, timed
//! on the session's standing event stream from the input's POST to
//! `turn.completed` — the cold turn (the sandbox starts on it), then a warm
//! one on the same session (the sandbox runs) — beside a raw
//! `unshare -mpfnui --fork true` in the same run. First use costs the cold
//! turn net of the warm one. `BENCH_PAUSE_MS` (default 0) waits between the
//! turns and after them: every turn after a pause is slower here (the warm
//! turn 8–10 → ~20 ms at 50 ms; likely each command's move into its cgroup,
//! see BENCHMARKS.md), so the default keeps the turns back to back, as the
//! figures in BENCHMARKS.md were measured.
//!
//! Run: `cargo bench -p rebyte --bench first_use` (`BENCH_RUNS`, default 50).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use std::time::{Duration, Instant};
use test_support::model_server::{ModelServer, Step};

mod common;
use common::{percentile, turn};

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1000.0)
}

#[tokio::main]
async fn main() {
    let runs: usize = std::env::var("BENCH_RUNS").ok().and_then(|s| s.parse().ok()).unwrap_or(50);
    let pause = std::env::var("BENCH_PAUSE_MS").ok().and_then(|s| s.parse().ok()).unwrap_or(0);
    let pause = Duration::from_millis(pause);
    let model = ModelServer::with_script([Step::tool_call("shell", json!({"command": "true"})), Step::text("ok")])
        .await
        .unwrap();
    model.set_looping(true);
    // BENCH_LOG (default `warn`) shows the server's log: `info` times each initialization.
    let log = std::env::var("BENCH_LOG").unwrap_or_else(|_| "warn".into());
    let (server, _) = common::start_server(&model, &log, false);
    let (http, base) = (reqwest::Client::new(), server.url.clone());
    let (mut cold, mut warm, mut raw) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        let env = common::post(
            &http,
            &format!("{base}/v1/agents/environments"),
            json!({"environment": {"type": "openai_hosted"}}),
        )
        .await;
        let body = json!({"agent": {"model": "bench-model"},
                          "environment": {"type": "reference", "environment_id": env["id"]}});
        let session = common::post(&http, &format!("{base}/v1/agents/sessions"), body).await;
        let sid = session["id"].as_str().unwrap().to_string();
        let mut events = Box::pin(common::subscribe(&http, &format!("{base}/v1/agents/sessions/{sid}/events")).await);
        cold.push(turn(&http, &base, &sid, &mut events).await);
        pause_for(pause).await;
        warm.push(turn(&http, &base, &sid, &mut events).await);
        pause_for(pause).await;
        let began = Instant::now();
        let status = std::process::Command::new("unshare").args(["-mpfnui", "--fork", "true"]).status().unwrap();
        assert!(status.success(), "raw unshare failed (run as root)");
        raw.push(began.elapsed());
        // Sessions and environments accumulate: each run is a new one, as for a user.
    }
    let net: Vec<Duration> = cold.iter().zip(&warm).map(|(c, w)| c.saturating_sub(*w)).collect();
    let (mut cold, mut warm, mut raw, mut net) = (cold, warm, raw, net);
    println!("first use through the server: {runs} fresh environments, a `true` turn each, then a warm turn");
    println!("| what | p50 ms | p90 ms |");
    println!("| --- | --- | --- |");
    let row = |what: &str, samples: &mut [Duration]| {
        println!("| {what} | {} | {} |", ms(percentile(samples, 0.5)), ms(percentile(samples, 0.9)));
    };
    row("cold turn (the sandbox starts)", &mut cold);
    row("warm turn (the sandbox runs)", &mut warm);
    row("first use = cold − warm, per run", &mut net);
    row("raw `unshare -mpfnui --fork true`", &mut raw);
    let ratio = percentile(&mut net, 0.5).as_secs_f64() / percentile(&mut raw, 0.5).as_secs_f64();
    println!("first use p50 / raw unshare p50 = {ratio:.2}× (target ≤ 2× and ≤ 10 ms)");
}

/// Waits `pause`, if any (a zero sleep still waits for the timer's next tick).
async fn pause_for(pause: Duration) {
    if !pause.is_zero() {
        tokio::time::sleep(pause).await;
    }
}
