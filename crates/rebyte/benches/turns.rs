//! Turn benchmarks (issue 3), against a release `rebyte` process and the
//! scripted model server, each compared with the raw upstream in the same run:
//!
//! - engine overhead per model step: (turn wall time − Σ the model's own
//!   answer times) / steps, over a 1,000-step turn; the model's time in each
//!   request is what the scripted upstream measured (request arrival to its
//!   reply's last frame), so both HTTP hops count as overhead;
//! - time to first text delta: through the server's event stream vs a
//!   direct streaming request to the upstream, end to end and net of the
//!   script's own delay before the first text (`BENCH_ONLY=first_delta`
//!   measures only this, `BENCH_RUNS` times, `BENCH_TRACE=1` prints each run);
//! - the server's own CPU time per step over the same turn (less sensitive to
//!   a busy machine than the wall time; `BENCH_ONLY=steps` measures only the turn);
//! - 1,000 concurrent subscribers: all receive every event; the server's CPU
//!   time for it and its RSS (`BENCH_ONLY=fanout` measures only this).
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

/// The CPU time (user + system, all threads) a process used so far.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command's closing parenthesis; utime and stime are the 12th and 13th.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<u64> = rest.split_whitespace().skip(11).take(2).map(|f| f.parse().unwrap()).collect();
    // In USER_HZ, which Linux fixes at 100 for user space.
    Duration::from_millis((fields[0] + fields[1]) * 10)
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
        self.subscribe_timed(sid).await.map(|(_, event)| event)
    }

    /// The session's events, each with when the bytes that completed it arrived.
    async fn subscribe_timed(&self, sid: &str) -> impl futures::Stream<Item = (Instant, Value)> + use<> {
        let url = format!("{}/v1/agents/sessions/{sid}/events", self.url);
        common::subscribe(&self.http, &url).await
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

/// One turn of `steps` model steps: its wall time, and the scripted
/// upstream's own time in its requests (from each request's arrival to its
/// reply's last frame, as the upstream saw them).
/// Also the server's own CPU time over the turn.
async fn engine_overhead(
    client: &Client,
    model: &ModelServer,
    server: &Server,
    steps: usize,
) -> (Duration, Duration, Duration) {
    model.push_all((0..steps - 1).map(|_| Step::tool_calls([ScriptedToolCall::new("noop", json!({}))])));
    model.push(Step::text("done"));
    let sid = client.session(json!({"model": "bench-model", "max_steps": steps})).await;
    let mut events = Box::pin(client.subscribe(&sid).await);
    let before = model.reply_spans().len();
    let (start, cpu) = (Instant::now(), cpu_time(server.child.id()));
    client.send(&sid, "loop").await;
    until_turn_ends(&mut events).await;
    let (turn, cpu) = (start.elapsed(), cpu_time(server.child.id()) - cpu);
    let spans = model.reply_spans();
    assert_eq!(spans.len() - before, steps);
    let upstream = spans[before..].iter().map(|(arrived, last)| last.unwrap() - *arrived).sum();
    // Each of the turn's requests held its whole history: hundreds of
    // megabytes this process's allocator would otherwise keep working around.
    model.clear_requests();
    (turn, upstream, cpu)
}

fn percentile(mut v: Vec<Duration>, p: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

/// Time to first text delta, through the server and straight from the
/// upstream, p50 of each: end to end, and net of the script's own time
/// (from the upstream's request arrival to its handing over the first text
/// frame: its chunk delay, on a 1 ms timer, jitters both ends alike).
struct FirstDelta {
    through: Duration,
    raw: Duration,
    through_net: Duration,
    raw_net: Duration,
}

/// The first text frame's send time and the request's arrival, from the script's record.
fn upstream_times(model: &ModelServer) -> (Instant, Instant) {
    let asked = model.last_request_at().unwrap();
    // Frame 0 is the role-only chunk; frame 1 carries the first text.
    (asked, model.last_frame_times()[1])
}

/// Notes one run's time end to end and net of the script's delay; returns
/// the request's arrival at the upstream and when its text frame went out.
fn note(
    model: &ModelServer,
    start: Instant,
    seen: Instant,
    total: &mut Vec<Duration>,
    net: &mut Vec<Duration>,
) -> (Instant, Instant) {
    let (asked, text_sent) = upstream_times(model);
    total.push(seen - start);
    net.push((asked - start) + (seen - text_sent));
    (asked, text_sent)
}

fn text_step() -> Step {
    Step::text("hello world, this is a streamed answer").chunks(8).chunk_delay(Duration::from_millis(2))
}

async fn first_delta(client: &Client, model: &ModelServer, runs: usize) -> FirstDelta {
    let sid = client.session(json!({"model": "bench-model"})).await;
    let (mut through, mut raw, mut through_net, mut raw_net) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let trace = std::env::var("BENCH_TRACE").is_ok();
    let mut events = Box::pin(client.subscribe_timed(&sid).await);
    for _ in 0..runs {
        model.push(text_step());
        let start = Instant::now();
        client.send(&sid, "hi").await;
        let posted = start.elapsed();
        let mut marks = Vec::new();
        let mut seen_at = start;
        // Stamped when the delta's bytes arrived, as the direct request's
        // text is below: parsing the events read with it is the client's time.
        while let Some((at, e)) = events.next().await {
            let kind = e["type"].as_str().unwrap_or("").trim_start_matches("agent.session.").to_string();
            marks.push(format!("{kind}@{:.2}", ms(at - start)));
            if kind == "turn.output_text.delta" {
                seen_at = at;
                break;
            }
        }
        until_turn_ends(&mut (&mut events).map(|(_, e)| e)).await;
        let (asked, text_sent) = note(model, start, seen_at, &mut through, &mut through_net);
        if trace {
            eprintln!(
                "post {:.2} ms; model asked @{:.2}; text out→seen {:.3}; {}",
                ms(posted),
                ms(asked - start),
                ms(seen_at - text_sent),
                marks.join(" ")
            );
        }
        // The same request, straight to the upstream.
        model.push(text_step());
        let body = model.last_request().unwrap();
        let start = Instant::now();
        let resp = client.http.post(format!("{}/chat/completions", model.base_url())).json(&body).send().await.unwrap();
        let mut stream = resp.bytes_stream();
        let mut seen = String::new();
        let mut seen_at = start;
        while let Some(chunk) = stream.next().await {
            seen.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
            // The first piece of the answer text (a role-only chunk comes first).
            if seen.contains("\"content\":\"h") {
                seen_at = Instant::now();
                break;
            }
        }
        while stream.next().await.is_some() {}
        let (asked, text_sent) = note(model, start, seen_at, &mut raw, &mut raw_net);
        if trace {
            eprintln!(
                "direct: model asked @{:.2}; text @{:.2}; text out→seen {:.3}",
                ms(asked - start),
                ms(seen_at - start),
                ms(seen_at - text_sent)
            );
        }
    }
    FirstDelta {
        through: percentile(through, 0.5),
        raw: percentile(raw, 0.5),
        through_net: percentile(through_net, 0.5),
        raw_net: percentile(raw_net, 0.5),
    }
}

/// What the broadcast to many subscribers showed.
struct Fanout {
    complete: usize,
    events: usize,
    rss_idle: u64,
    rss_peak: u64,
    /// The server's CPU time from the input to the last subscriber's last event.
    cpu: Duration,
}

impl Fanout {
    fn print(&self) {
        let Fanout { complete, events, rss_idle, rss_peak, cpu } = self;
        println!("| 1,000 subscribers: got every event ({events} each) | {complete}/1000 | | | 1000/1000 |");
        println!(
            "| the server's CPU time for that turn's {} events to 1,000 subscribers | {:.1} ms | | {:.1} µs per event sent | |",
            events,
            ms(*cpu),
            cpu.as_secs_f64() * 1e6 / (events * 1000) as f64
        );
        println!(
            "| server RSS with 1,000 subscribers (idle / peak) | {:.1} / {:.1} MiB | | | ≤ 200 MiB |",
            *rss_idle as f64 / 1024.0,
            *rss_peak as f64 / 1024.0
        );
    }
}

async fn subscribers(client: &Client, model: &ModelServer, server: &Server, count: usize) -> Fanout {
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
    let cpu = cpu_time(server.child.id());
    client.send(&sid, "broadcast").await;
    let mut counts = Vec::new();
    for t in tasks {
        counts.push(t.await.unwrap());
    }
    let cpu = cpu_time(server.child.id()) - cpu;
    let expected = counts[0];
    let complete = counts.iter().filter(|c| **c == expected).count();
    Fanout { complete, events: expected, rss_idle, rss_peak: rss_kib(server.child.id(), "VmHWM:"), cpu }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[tokio::main]
async fn main() {
    let model = ModelServer::start().await.unwrap();
    let server = start_server(&model);
    let http = reqwest::Client::builder().pool_max_idle_per_host(2000).build().unwrap();
    let client = Client { http, url: server.url.clone() };

    // BENCH_ONLY=first_delta measures just that (with BENCH_TRACE, each run's events).
    if std::env::var("BENCH_ONLY").is_ok_and(|m| m == "first_delta") {
        let runs = std::env::var("BENCH_RUNS").ok().and_then(|r| r.parse().ok()).unwrap_or(50);
        let fd = first_delta(&client, &model, runs).await;
        println!(
            "first text delta p50: {:.2} ms, upstream {:.2} ms, added {:.2} ms; net of the script's delay: {:.3} / {:.3} ms, added {:.3} ms",
            ms(fd.through),
            ms(fd.raw),
            ms(fd.through) - ms(fd.raw),
            ms(fd.through_net),
            ms(fd.raw_net),
            ms(fd.through_net) - ms(fd.raw_net)
        );
        return;
    }
    let steps = 1000;
    let (turn, upstream, cpu) = engine_overhead(&client, &model, &server, steps).await;
    let per_step = turn.saturating_sub(upstream) / steps as u32;
    let cpu_row = format!(
        "| the same turn: the server's CPU time (all threads) | {:.1} ms | | {:.3} ms/step | |",
        ms(cpu),
        ms(cpu) / steps as f64
    );
    // BENCH_ONLY=fanout measures just the broadcast to 1,000 subscribers.
    if std::env::var("BENCH_ONLY").is_ok_and(|m| m == "fanout") {
        subscribers(&client, &model, &server, 1000).await.print();
        return;
    }
    // BENCH_ONLY=steps measures just the long turn.
    if std::env::var("BENCH_ONLY").is_ok_and(|m| m == "steps") {
        println!(
            "{steps}-step turn: {:.1} ms, upstream {:.1} ms, {:.3} ms/step added",
            ms(turn),
            ms(upstream),
            ms(per_step)
        );
        println!("{cpu_row}");
        return;
    }
    let fd = first_delta(&client, &model, 50).await;
    let fanout = subscribers(&client, &model, &server, 1000).await;

    println!("| measure | rebyte | raw upstream | added | target |");
    println!("| --- | --- | --- | --- | --- |");
    println!(
        "| {steps}-step turn, wall time (raw: the upstream's own time) | {:.1} ms | {:.1} ms | {:.3} ms/step | ≤ 1 ms/step |",
        turn.as_secs_f64() * 1e3,
        upstream.as_secs_f64() * 1e3,
        per_step.as_secs_f64() * 1e3
    );
    println!("{cpu_row}");
    println!(
        "| time to first text delta (p50 of 50) | {:.2} ms | {:.2} ms | {:.2} ms | ≤ 1 ms |",
        ms(fd.through),
        ms(fd.raw),
        ms(fd.through) - ms(fd.raw)
    );
    println!(
        "| the same, net of the script's own delay (p50 of 50) | {:.3} ms | {:.3} ms | {:.3} ms | ≤ 1 ms |",
        ms(fd.through_net),
        ms(fd.raw_net),
        ms(fd.through_net) - ms(fd.raw_net)
    );
    fanout.print();
}
