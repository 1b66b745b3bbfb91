//! Cluster benchmarks (issue 12): release `rebyte serve` nodes on one
//! PostgreSQL database (`BENCH_DATABASE_URL`, a cluster's base URL: a fresh
//! database of it per run), the scripted model server, one table each.
//!
//! - cross-node event delivery: a turn runs on node A; subscribers on A and
//!   on B time the first text delta from the input's POST (`BENCH_TURNS`
//!   turns, 50 by default): the same-node and cross-node figures of one run;
//! - session creation throughput: `BENCH_CREATES` (3,000) creates by 32
//!   concurrent clients, all to one node, then spread over two;
//! - failover: `BENCH_KILLS` (20) times, a node running a turn is killed
//!   (`kill -9`); the survivor's time until the turn is failed and until the
//!   session's next turn completes.
//!
//! Run: `BENCH_DATABASE_URL=postgres://… cargo bench -p rebyte --bench cluster`
//! (`BENCH_ONLY=events|create|failover` runs one).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures::StreamExt;
use serde_json::{Value, json};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use test_support::model_server::{ModelServer, Step};

mod common;

use common::KEY;

/// One node: its process, base URL and data directory.
struct Node {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The database and master key every node of the run shares.
struct Cluster {
    database_url: String,
    master_key: tempfile::TempDir,
}

impl Cluster {
    /// Starts node `id` with its models at `model`.
    fn start(&self, id: &str, model: &ModelServer) -> Node {
        let dir = tempfile::tempdir().unwrap();
        let bin = std::env::var("REBYTE_BENCH_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_rebyte").to_string());
        let mut child = Command::new(bin)
            .args(["serve", "--listen", "127.0.0.1:0", "--node-id", id, "--data-dir"])
            .arg(dir.path())
            .arg("--master-key-file")
            .arg(self.master_key.path().join("master.key"))
            .env("REBYTE_DATABASE_URL", &self.database_url)
            .env("REBYTE_BOOTSTRAP_KEY", KEY)
            .env("REBYTE_ORG_REQUESTS_PER_SECOND", "0")
            .env("REBYTE_ORG_ACTIVE_TURNS", "0")
            .env("REBYTE_ORG_LIVE_SANDBOXES", "0")
            .env("OPENAI_BASE_URL", model.base_url())
            .env("OPENAI_API_KEY", "bench")
            .env("REBYTE_LOG", "error")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let url = test_support::process::listening_url(&mut child);
        Node { child, url, _dir: dir }
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

fn sorted(mut v: Vec<f64>) -> Vec<f64> {
    v.sort_by(|a, b| a.total_cmp(b));
    v
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

async fn session(http: &reqwest::Client, node: &Node) -> String {
    let body = json!({"agent": {"model": "m"}, "environment": {"type": "none"}});
    let s = common::post(http, &format!("{}/v1/agents/sessions", node.url), body).await;
    s["id"].as_str().unwrap().to_string()
}

async fn send(http: &reqwest::Client, node: &Node, sid: &str, text: &str) {
    let body = json!({"events": [{"type": "agent.session.input.message",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": text}]}]}]});
    common::post(http, &format!("{}/v1/agents/sessions/{sid}/events", node.url), body).await;
}

async fn get(http: &reqwest::Client, url: String) -> Value {
    http.get(url).bearer_auth(KEY).send().await.unwrap().json().await.unwrap()
}

/// The id of the session's latest turn, as `node` lists it.
async fn latest_turn(http: &reqwest::Client, node: &Node, sid: &str) -> String {
    let turns = get(http, format!("{}/v1/agents/sessions/{sid}/turns?limit=1", node.url)).await;
    turns["data"][0]["id"].as_str().unwrap().to_string()
}

/// When `events` first shows a text delta, then waits for the turn's end.
async fn first_delta(events: &mut (impl futures::Stream<Item = (Instant, Value)> + Unpin)) -> Instant {
    let mut first = None;
    while let Some((at, event)) = events.next().await {
        if first.is_none() && event["type"] == "agent.session.turn.output_text.delta" {
            first = Some(at);
        }
        if event["type"] == "agent.session.turn.completed" {
            break;
        }
    }
    first.expect("a text delta")
}

async fn events_bench(cluster: &Cluster) {
    let turns = env_usize("BENCH_TURNS", 50);
    let model = ModelServer::with_script([Step::text("cluster bench answer").chunks(4)]).await.unwrap();
    model.set_looping(true);
    let (a, b) = (cluster.start("bench-a", &model), cluster.start("bench-b", &model));
    let http = reqwest::Client::new();
    let sid = session(&http, &a).await;
    let stream = |node: &Node| format!("{}/v1/agents/sessions/{sid}/events", node.url);
    let mut on_a = Box::pin(common::subscribe(&http, &stream(&a)).await);
    let mut on_b = Box::pin(common::subscribe(&http, &stream(&b)).await);
    // A warm-up turn (connections, caches), not counted.
    send(&http, &a, &sid, "warm up").await;
    tokio::join!(first_delta(&mut on_a), first_delta(&mut on_b));
    let (mut same, mut cross) = (Vec::new(), Vec::new());
    for i in 0..turns {
        let sent = Instant::now();
        send(&http, &a, &sid, &format!("turn {i}")).await;
        let (at_a, at_b) = tokio::join!(first_delta(&mut on_a), first_delta(&mut on_b));
        same.push((at_a - sent).as_secs_f64() * 1000.0);
        cross.push((at_b - sent).as_secs_f64() * 1000.0);
    }
    let (same, cross) = (sorted(same), sorted(cross));
    println!("\n## cross-node event delivery ({turns} turns run on node A; input POST → first text delta)\n");
    println!("| subscriber | p50 ms | p90 ms | p99 ms |");
    println!("| --- | ---: | ---: | ---: |");
    for (name, v) in [("on node A (same node)", &same), ("on node B (other node)", &cross)] {
        println!("| {name} | {:.2} | {:.2} | {:.2} |", percentile(v, 0.5), percentile(v, 0.9), percentile(v, 0.99));
    }
    println!("\ncross − same at p50: {:.2} ms", percentile(&cross, 0.5) - percentile(&same, 0.5));
}

/// Creates `total` sessions with 32 concurrent clients spread over `nodes`: req/s.
async fn creates(nodes: &[&Node], total: usize) -> f64 {
    let http = reqwest::Client::builder().pool_max_idle_per_host(64).build().unwrap();
    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let urls: Vec<String> = nodes.iter().map(|n| format!("{}/v1/agents/sessions", n.url)).collect();
    let started = Instant::now();
    let workers = (0..32).map(|_| {
        let (http, next, urls) = (http.clone(), next.clone(), urls.clone());
        async move {
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= total {
                    return;
                }
                let body = json!({"agent": {"model": "m"}, "environment": {"type": "none"}});
                let r = http.post(&urls[i % urls.len()]).bearer_auth(KEY).json(&body).send().await.unwrap();
                assert!(r.status().is_success(), "{}", r.status());
            }
        }
    });
    futures::future::join_all(workers).await;
    total as f64 / started.elapsed().as_secs_f64()
}

async fn create_bench(cluster: &Cluster) {
    let total = env_usize("BENCH_CREATES", 3000);
    let model = ModelServer::start().await.unwrap();
    let (a, b) = (cluster.start("bench-a", &model), cluster.start("bench-b", &model));
    // Warm both (connections, the key cache).
    creates(&[&a, &b], 200).await;
    let one = creates(&[&a], total).await;
    let two = creates(&[&a, &b], total).await;
    println!("\n## session creation, {total} creates by 32 concurrent clients\n");
    println!("| nodes | req/s |");
    println!("| --- | ---: |");
    println!("| one (all to A) | {one:.0} |");
    println!("| two (alternating A, B) | {two:.0} |");
    println!("\ntwo ÷ one: {:.2}×", two / one);
}

async fn failover_bench(cluster: &Cluster) {
    let kills = env_usize("BENCH_KILLS", 20);
    let model = ModelServer::start().await.unwrap();
    let survivor = cluster.start("bench-survivor", &model);
    let http = reqwest::Client::new();
    let (mut settled, mut usable) = (Vec::new(), Vec::new());
    for i in 0..kills {
        model.push(Step::stall());
        let doomed = cluster.start(&format!("bench-doomed-{i}"), &model);
        let sid = session(&http, &doomed).await;
        send(&http, &doomed, &sid, "stall").await;
        let tid = latest_turn(&http, &survivor, &sid).await;
        let status = |tid: &str| get(&http, format!("{}/v1/agents/sessions/{sid}/turns/{tid}", survivor.url));
        while status(&tid).await["status"] != "in_progress" {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        drop(doomed); // kill -9 and reap
        let killed = Instant::now();
        while status(&tid).await["status"] == "in_progress" {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        settled.push(killed.elapsed().as_secs_f64());
        model.push(Step::text("after"));
        send(&http, &survivor, &sid, "after").await;
        let next = latest_turn(&http, &survivor, &sid).await;
        while status(&next).await["status"] != "completed" {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        usable.push(killed.elapsed().as_secs_f64());
    }
    let (settled, usable) = (sorted(settled), sorted(usable));
    println!("\n## failover: {kills} kills (-9) of a node in the middle of a turn\n");
    println!("| seconds after the kill | p50 | p99 | max |");
    println!("| --- | ---: | ---: | ---: |");
    for (name, v) in [("its turn failed (node_lost)", &settled), ("its session's next turn completed", &usable)] {
        let max = v.last().copied().unwrap_or(f64::NAN);
        println!("| {name} | {:.1} | {:.1} | {max:.1} |", percentile(v, 0.5), percentile(v, 0.99));
    }
}

#[tokio::main]
async fn main() {
    let Ok(base) = std::env::var("BENCH_DATABASE_URL") else {
        eprintln!("cannot run this bench: set BENCH_DATABASE_URL to a PostgreSQL cluster's base URL");
        std::process::exit(2);
    };
    let cluster = Cluster {
        database_url: test_support::postgres::fresh_database(&base).await,
        master_key: tempfile::tempdir().unwrap(),
    };
    std::fs::write(cluster.master_key.path().join("master.key"), hex_key()).unwrap();
    let only = std::env::var("BENCH_ONLY").unwrap_or_default();
    if only.is_empty() || only == "events" {
        events_bench(&cluster).await;
    }
    if only.is_empty() || only == "create" {
        create_bench(&cluster).await;
    }
    if only.is_empty() || only == "failover" {
        failover_bench(&cluster).await;
    }
}

/// A fixed master key for the run's nodes (64 hex digits).
fn hex_key() -> String {
    "42".repeat(32)
}
