//! Templates prepared once (issue 16, item 2), through a release `rebyte
//! serve`: a template whose setup installs a Python package with pip
//! (`BENCH_PACKAGE`, default `six`; the network restricted to PyPI) is
//! prepared once; then, per run, a fresh environment from it and the same
//! environment without the template, each with a session whose turn imports
//! the package in the shell — ready (first command done) timed on the standing
//! event stream from the input's POST to `turn.completed`. A warm turn on the
//! same session is the floor.
//!
//! Run: `cargo bench -p rebyte --bench template` (`BENCH_RUNS`, default 5; needs PyPI).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use std::time::{Duration, Instant};
use test_support::model_server::{ModelServer, Step};

mod common;
use common::{percentile, turn};

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1000.0)
}

/// A fresh environment of `config`: its first (cold) turn and a warm one.
async fn first_use(http: &reqwest::Client, base: &str, config: Value) -> (Duration, Duration) {
    let env = common::post(http, &format!("{base}/v1/agents/environments"), json!({"environment": config})).await;
    assert!(env["id"].is_string(), "{env}");
    let body = json!({"agent": {"model": "bench-model"},
                      "environment": {"type": "reference", "environment_id": env["id"]}});
    let session = common::post(http, &format!("{base}/v1/agents/sessions"), body).await;
    let sid = session["id"].as_str().unwrap().to_string();
    let mut events = Box::pin(common::subscribe(http, &format!("{base}/v1/agents/sessions/{sid}/events")).await);
    let cold = turn(http, base, &sid, &mut events).await;
    let warm = turn(http, base, &sid, &mut events).await;
    (cold, warm)
}

#[tokio::main]
async fn main() {
    let runs: usize = std::env::var("BENCH_RUNS").ok().and_then(|s| s.parse().ok()).unwrap_or(5);
    let package = std::env::var("BENCH_PACKAGE").unwrap_or_else(|_| "six".into());
    let module = package.replace('-', "_");
    let command = format!("python3 -c 'import {module}' && echo imported");
    let model = ModelServer::with_script([Step::tool_call("shell", json!({"command": command})), Step::text("ok")])
        .await
        .unwrap();
    model.set_looping(true);
    let (server, _) = common::start_server(&model, "warn", false);
    let (http, base) = (reqwest::Client::new(), server.url.clone());
    let network = json!({"access": "restricted", "allowed_domains": ["pypi.org", "files.pythonhosted.org"]});
    let setup = json!({"packages": {"python": [package]}, "network": network});

    let began = Instant::now();
    let template = common::post(&http, &format!("{base}/v1/agents/environments/templates"), setup.clone()).await;
    let tid = template["id"].as_str().unwrap().to_string();
    let prepared = loop {
        let r = http.get(format!("{base}/v1/agents/environments/templates/{tid}")).bearer_auth(common::KEY);
        let t: Value = r.send().await.unwrap().json().await.unwrap();
        if t["status"] != "preparing" {
            break t;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(prepared["status"], "ready", "{prepared}");
    let preparation = began.elapsed();

    let (mut from_template, mut plain, mut warm) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        let (cold, w) = first_use(&http, &base, json!({"type": "openai_hosted", "environment_template_id": tid})).await;
        from_template.push(cold);
        warm.push(w);
        let mut config = setup.clone();
        config["type"] = json!("openai_hosted");
        plain.push(first_use(&http, &base, config).await.0);
    }
    println!("a template installing `{package}` with pip, prepared once in {} ms; {runs} runs", ms(preparation));
    println!("| environment | ready (first command done) p50 ms | max ms |");
    println!("| --- | --- | --- |");
    let row = |name: &str, v: &mut Vec<Duration>| {
        let max = *v.iter().max().unwrap();
        println!("| {name} | {} | {} |", ms(percentile(v, 0.5)), ms(max));
    };
    row("from the prepared template", &mut from_template);
    row("the same configuration, no template (setup runs)", &mut plain);
    row("warm turn on the template's environment (floor)", &mut warm);
}
