//! Soak benchmark (issue 17, item 9): a release `rebyte serve` under a steady
//! load — 20 sessions at a time on 4 shared environments, 4 turns a second in
//! all, each turn one shell command in the sandbox and one reply from the
//! scripted model — for 30 minutes (`BENCH_SOAK_SECS`), sampling the server's
//! RSS every 10 s. Each session is deleted and replaced after
//! `BENCH_SOAK_TURNS` turns (default 20; 0 keeps the same 20 sessions, whose
//! histories then grow without end), so the working set stays the same size
//! and what grows is what the server fails to let go of. It prints the RSS
//! after warm-up (the first sixth), at the half and at the end, the growth
//! over the second half, and how the turns ended.
//!
//! Run: `cargo bench -p rebyte --bench soak` (`BENCH_SOAK_SECS=300` for a short one).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use std::time::{Duration, Instant};
use test_support::model_server::{ModelServer, Step};

mod common;

const SESSIONS: usize = 20;
const ENVIRONMENTS: usize = 4;
const TURNS_PER_SECOND: u64 = 4;

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap_or("VmRSS: 0 kB");
    line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).unwrap_or(0)
}

async fn post(http: &reqwest::Client, url: &str, body: Value) -> (u16, Value) {
    let r = http.post(url).bearer_auth(common::KEY).json(&body).send().await.unwrap();
    let status = r.status().as_u16();
    (status, serde_json::from_str(&r.text().await.unwrap()).unwrap_or(Value::Null))
}

async fn get(http: &reqwest::Client, url: &str) -> Value {
    let r = http.get(url).bearer_auth(common::KEY).send().await.unwrap();
    serde_json::from_str(&r.text().await.unwrap()).unwrap_or(Value::Null)
}

/// Adds how the turns of session `sid` ended to `ended`.
async fn tally(http: &reqwest::Client, base: &str, sid: &str, ended: &mut std::collections::BTreeMap<String, u64>) {
    let mut after: Option<String> = None;
    loop {
        let cursor = after.as_ref().map(|a| format!("&after={a}")).unwrap_or_default();
        let page = get(http, &format!("{base}/v1/agents/sessions/{sid}/turns?limit=100{cursor}")).await;
        let data = page["data"].as_array().cloned().unwrap_or_default();
        for t in &data {
            *ended.entry(t["status"].as_str().unwrap_or("?").to_string()).or_default() += 1;
        }
        if page["has_more"] != true || data.is_empty() {
            return;
        }
        after = data.last().and_then(|t| t["id"].as_str()).map(str::to_string);
    }
}

#[tokio::main]
async fn main() {
    let secs: u64 = std::env::var("BENCH_SOAK_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(1800);
    let model = ModelServer::with_script([Step::tool_call("shell", json!({"command": "true"})), Step::text("ok")])
        .await
        .unwrap();
    model.set_looping(true);
    let (server, _) = common::start_server(&model, "warn", false);
    let pid = server.child.id();
    let http = reqwest::Client::new();
    let base = server.url.clone();
    let mut envs = Vec::new();
    for _ in 0..ENVIRONMENTS {
        let (_, env) =
            post(&http, &format!("{base}/v1/agents/environments"), json!({"environment": {"type": "openai_hosted"}}))
                .await;
        envs.push(env["id"].as_str().unwrap().to_string());
    }
    let per_session: u64 = std::env::var("BENCH_SOAK_TURNS").ok().and_then(|s| s.parse().ok()).unwrap_or(20);
    let new_session = |slot: usize| {
        let (http, base, env) = (http.clone(), base.clone(), envs[slot % ENVIRONMENTS].clone());
        async move {
            let body = json!({"agent": {"model": "soak-model"},
                              "environment": {"type": "reference", "environment_id": env}});
            let (_, s) = post(&http, &format!("{base}/v1/agents/sessions"), body).await;
            s["id"].as_str().unwrap().to_string()
        }
    };
    let mut sessions = Vec::new();
    for i in 0..SESSIONS {
        sessions.push((new_session(i).await, 0u64));
    }
    let mut ended = std::collections::BTreeMap::<String, u64>::new();
    let mut replaced = 0u64;
    let input = json!({"events": [{"type": "agent.session.input.message",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "go"}]}]}]});
    let began = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_millis(1000 / TURNS_PER_SECOND));
    let mut samples: Vec<(u64, u64)> = Vec::new();
    let (mut sent, mut refused) = (0u64, 0u64);
    let mut next_sample = Duration::ZERO;
    while began.elapsed() < Duration::from_secs(secs) {
        tick.tick().await;
        let slot = ((sent + refused) as usize) % SESSIONS;
        if per_session > 0 && sessions[slot].1 >= per_session {
            // Its last turn ended a round ago: count how its turns ended, then replace it.
            tally(&http, &base, &sessions[slot].0, &mut ended).await;
            let r = http.delete(format!("{base}/v1/agents/sessions/{}", sessions[slot].0)).bearer_auth(common::KEY);
            r.send().await.unwrap();
            sessions[slot] = (new_session(slot).await, 0);
            replaced += 1;
        }
        sessions[slot].1 += 1;
        let sid = &sessions[slot].0;
        let (status, _) = post(&http, &format!("{base}/v1/agents/sessions/{sid}/events"), input.clone()).await;
        if status == 202 {
            sent += 1
        } else {
            refused += 1
        }
        if began.elapsed() >= next_sample {
            samples.push((began.elapsed().as_secs(), rss_kib(pid)));
            next_sample += Duration::from_secs(10);
        }
    }
    // Let the last turns end, then count how every turn ended.
    tokio::time::sleep(Duration::from_secs(5)).await;
    samples.push((began.elapsed().as_secs(), rss_kib(pid)));
    for (sid, _) in &sessions {
        tally(&http, &base, sid, &mut ended).await;
    }
    let at = |frac: f64| {
        let want = (secs as f64 * frac) as u64;
        samples.iter().find(|(t, _)| *t >= want).or(samples.last()).map_or(0, |(_, r)| *r)
    };
    let (warm, half, end) = (at(1.0 / 6.0), at(0.5), samples.last().map_or(0, |(_, r)| *r));
    let peak = samples.iter().map(|(_, r)| *r).max().unwrap_or(0);
    println!("soak: {SESSIONS} sessions on {ENVIRONMENTS} environments, {TURNS_PER_SECOND} turns/s, {secs} s");
    println!("| what | value |");
    println!("| --- | --- |");
    println!("| inputs accepted / refused | {sent} / {refused} |");
    println!("| sessions replaced (every {per_session} turns) | {replaced} |");
    println!("| turns by status | {ended:?} |");
    println!("| RSS after warm-up ({} s) | {:.1} MiB |", secs / 6, warm as f64 / 1024.0);
    println!("| RSS at half time | {:.1} MiB |", half as f64 / 1024.0);
    println!("| RSS at the end | {:.1} MiB |", end as f64 / 1024.0);
    println!("| RSS peak | {:.1} MiB |", peak as f64 / 1024.0);
    println!("| growth over the second half | {:+.2} MiB |", (end as f64 - half as f64) / 1024.0);
    if std::env::var("BENCH_TRACE").is_ok() {
        for (t, r) in &samples {
            println!("{t}\t{r}");
        }
    }
}
