//! Turn benchmarks (issue 3), against a release `rebyte` process and the
//! scripted model server, each compared with the raw upstream in the same run:
//!
//! - engine overhead per model step: (turn wall time − Σ the model's own
//!   answer times) / steps, over a 1,000-step turn; the model's times are
//!   measured by replaying the very requests the engine sent, directly;
//! - time to first text delta: through the server's event stream vs a
//!   direct streaming request to the upstream;
//! - 1,000 concurrent subscribers: all receive every event; server RSS.
//!
//! Run: `cargo bench -p rebyte --bench turns`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures::StreamExt;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use test_support::model_server::{ModelServer, ScriptedToolCall, Step};

mod common;

use common::Server;

fn start_server(model: &ModelServer) -> Server {
    common::start_server(model, "warn", false).0
}

fn rss_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

struct Client {
    http: reqwest::Client,
    url: String,
}

impl Client {
    async fn post(&self, path: &str, body: Value) -> Value {
        common::post(&self.http, &format!("{}{path}", self.url), body).await
    }

    async fn session(&self, agent: Value) -> String {
        let s = self.post("/v1/agents/sessions", json!({"agent": agent, "environment": {"type": "none"}})).await;
        s["id"].as_str().unwrap().to_string()
    }

    async fn subscribe(&self, sid: &str) -> impl futures::Stream<Item = Value> + use<> {
        let url = format!("{}/v1/agents/sessions/{sid}/events", self.url);
        common::subscribe(&self.http, &url).await.map(|(_, event)| event)
    }

    async fn send(&self, sid: &str, text: &str) {
        let body = json!({"events": [{"type": "agent.session.input.message",
            "input": [{"role": "user", "content": [{"type": "input_text", "text": text}]}]}]});
        self.post(&format!("/v1/agents/sessions/{sid}/events"), body).await;
    }
}

async fn until_turn_ends(events: &mut (impl futures::Stream<Item = Value> + Unpin)) -> usize {
    let mut n = 0;
    while let Some(e) = events.next().await {
        n += 1;
        if e["type"] == "agent.session.turn.completed" || e["type"] == "agent.session.turn.failed" {
            assert_eq!(e["type"], "agent.session.turn.completed", "{e}");
            return n;
        }
    }
    panic!("stream ended");
}

/// Sends a recorded request body straight to the upstream and reads the whole answer.
async fn direct(http: &reqwest::Client, model: &ModelServer, body: &Value) -> Duration {
    let start = Instant::now();
    let resp = http.post(format!("{}/chat/completions", model.base_url())).json(body).send().await.unwrap();
    let _ = resp.bytes().await.unwrap();
    start.elapsed()
}

async fn engine_overhead(client: &Client, model: &ModelServer, steps: usize) -> (Duration, Duration) {
    model.push_all((0..steps - 1).map(|_| Step::tool_calls([ScriptedToolCall::new("noop", json!({}))])));
    model.push(Step::text("done"));
    let sid = client.session(json!({"model": "bench-model", "max_steps": steps})).await;
    let mut events = Box::pin(client.subscribe(&sid).await);
    let before = model.request_count();
    let start = Instant::now();
    client.send(&sid, "loop").await;
    until_turn_ends(&mut events).await;
    let turn = start.elapsed();
    let bodies: Vec<Value> = model.requests().into_iter().skip(before).map(|r| r.body).collect();
    assert_eq!(bodies.len(), steps);
    // A fresh upstream in the same state the turn met, answering the same requests.
    let replay = ModelServer::start().await.unwrap();
    replay.push_all((0..steps - 1).map(|_| Step::tool_calls([ScriptedToolCall::new("noop", json!({}))])));
    replay.push(Step::text("done"));
    let mut upstream = Duration::ZERO;
    for body in &bodies {
        upstream += direct(&client.http, &replay, body).await;
    }
    (turn, upstream)
}

fn percentile(mut v: Vec<Duration>, p: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

async fn first_delta(client: &Client, model: &ModelServer, runs: usize) -> (Duration, Duration) {
    let sid = client.session(json!({"model": "bench-model"})).await;
    let mut through = Vec::new();
    let mut raw = Vec::new();
    let mut events = Box::pin(client.subscribe(&sid).await);
    for _ in 0..runs {
        model
            .push(Step::text("hello world, this is a streamed answer").chunks(8).chunk_delay(Duration::from_millis(2)));
        let start = Instant::now();
        client.send(&sid, "hi").await;
        let posted = start.elapsed();
        let mut marks = Vec::new();
        while let Some(e) = events.next().await {
            marks.push(format!(
                "{}@{:.2}",
                e["type"].as_str().unwrap_or("").trim_start_matches("agent.session."),
                start.elapsed().as_secs_f64() * 1e3
            ));
            if e["type"] == "agent.session.turn.output_text.delta" {
                through.push(start.elapsed());
                break;
            }
        }
        if std::env::var("BENCH_TRACE").is_ok() {
            eprintln!("post {:.2} ms; {}", posted.as_secs_f64() * 1e3, marks.join(" "));
        }
        until_turn_ends(&mut events).await;
        // The same request, straight to the upstream.
        model
            .push(Step::text("hello world, this is a streamed answer").chunks(8).chunk_delay(Duration::from_millis(2)));
        let body = model.last_request().unwrap();
        let start = Instant::now();
        let resp = client.http.post(format!("{}/chat/completions", model.base_url())).json(&body).send().await.unwrap();
        let mut stream = resp.bytes_stream();
        let mut seen = String::new();
        while let Some(chunk) = stream.next().await {
            seen.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
            // The first piece of the answer text (a role-only chunk may come first).
            if seen.contains("\"content\":\"h") {
                raw.push(start.elapsed());
                break;
            }
        }
        while stream.next().await.is_some() {}
    }
    (percentile(through, 0.5), percentile(raw, 0.5))
}

async fn subscribers(client: &Client, model: &ModelServer, server: &Server, count: usize) -> (usize, usize, u64, u64) {
    let sid = client.session(json!({"model": "bench-model"})).await;
    let mut tasks = Vec::new();
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::channel::<()>(count);
    for _ in 0..count {
        let http = client.http.clone();
        let url = client.url.clone();
        let sid = sid.clone();
        let ready = ready_tx.clone();
        tasks.push(tokio::spawn(async move {
            let c = Client { http, url };
            let mut events = Box::pin(c.subscribe(&sid).await);
            ready.send(()).await.unwrap();
            let mut n = until_turn_ends(&mut events).await;
            // The idle event follows the turn's end.
            if events.next().await.is_some() {
                n += 1;
            }
            n
        }));
    }
    for _ in 0..count {
        ready_rx.recv().await.unwrap();
    }
    let rss_idle = rss_kib(server.child.id(), "VmRSS:");
    model.push(Step::text("an answer for everyone, streamed in many small pieces").chunks(40));
    client.send(&sid, "broadcast").await;
    let mut counts = Vec::new();
    for t in tasks {
        counts.push(t.await.unwrap());
    }
    let expected = counts[0];
    let complete = counts.iter().filter(|c| **c == expected).count();
    (complete, expected, rss_idle, rss_kib(server.child.id(), "VmHWM:"))
}

#[tokio::main]
async fn main() {
    let model = ModelServer::start().await.unwrap();
    let server = start_server(&model);
    let http = reqwest::Client::builder().pool_max_idle_per_host(2000).build().unwrap();
    let client = Client { http, url: server.url.clone() };

    let steps = 1000;
    let (turn, upstream) = engine_overhead(&client, &model, steps).await;
    let per_step = turn.saturating_sub(upstream) / steps as u32;
    let (ttfd, ttfd_raw) = first_delta(&client, &model, 50).await;
    let (complete, events, rss_idle, rss_peak) = subscribers(&client, &model, &server, 1000).await;

    println!("| measure | rebyte | raw upstream | added | target |");
    println!("| --- | --- | --- | --- | --- |");
    println!(
        "| {steps}-step turn, wall time | {:.1} ms | {:.1} ms | {:.3} ms/step | ≤ 1 ms/step |",
        turn.as_secs_f64() * 1e3,
        upstream.as_secs_f64() * 1e3,
        per_step.as_secs_f64() * 1e3
    );
    println!(
        "| time to first text delta (p50 of 50) | {:.2} ms | {:.2} ms | {:.2} ms | ≤ 1 ms |",
        ttfd.as_secs_f64() * 1e3,
        ttfd_raw.as_secs_f64() * 1e3,
        (ttfd.as_secs_f64() - ttfd_raw.as_secs_f64()) * 1e3
    );
    println!("| 1,000 subscribers: got every event ({events} each) | {complete}/1000 | | | 1000/1000 |");
    println!(
        "| server RSS with 1,000 subscribers (idle / peak) | {:.1} / {:.1} MiB | | | ≤ 200 MiB |",
        rss_idle as f64 / 1024.0,
        rss_peak as f64 / 1024.0
    );
}
