//! What the rebyte benches share: a release `rebyte serve` on a fresh data
//! directory, pointed at the scripted model server, killed when dropped.

// Each bench binary compiles this module and uses part of it.
#![allow(dead_code)]

use futures::StreamExt;
use serde_json::Value;
use std::process::{Child, ChildStderr, Command, Stdio};
use std::time::{Duration, Instant};
use test_support::model_server::ModelServer;

pub const KEY: &str = "rbk_benchbenchbenchbenchbenchbenchbench01";

/// Installs a Node fixture the bench runs (`npm ci` in `dir` unless `probe`
/// is under its `node_modules`), or says what is missing and exits.
pub fn ensure_npm(dir: &std::path::Path, probe: &str) {
    if let Err(e) = test_support::npm::ensure_installed(dir, probe) {
        eprintln!("cannot run this bench: {e}");
        std::process::exit(2);
    }
}

pub struct Server {
    pub child: Child,
    pub url: String,
    pub dir: tempfile::TempDir,
}

impl Drop for Server {
    /// Stops the server as an operator would (SIGTERM: it unmounts its
    /// environments' disk images on the way out, so a run leaves no loop
    /// mounts whose background work would slow the next), killing it if it
    /// has not exited within 10 s.
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::time::Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the server with `REBYTE_LOG=log`; returns it once it listens, with
/// its stderr when `capture_stderr` (else inherited).
pub fn start_server(model: &ModelServer, log: &str, capture_stderr: bool) -> (Server, Option<ChildStderr>) {
    let dir = tempfile::tempdir().unwrap();
    // REBYTE_BENCH_BIN runs another build (say, the previous commit's) against the same bench.
    let bin = std::env::var("REBYTE_BENCH_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_rebyte").to_string());
    let mut command = Command::new(bin);
    // BENCH_DATABASE_URL (a PostgreSQL cluster's base URL) runs the bench on a
    // fresh database of it instead of SQLite.
    if let Ok(base) = std::env::var("BENCH_DATABASE_URL") {
        command.env("REBYTE_DATABASE_URL", test_support::postgres::fresh_database_blocking(&base));
    }
    let mut child = command
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path())
        .env("REBYTE_BOOTSTRAP_KEY", KEY)
        // Benches measure throughput, not the per-organization limits.
        .env("REBYTE_ORG_REQUESTS_PER_SECOND", "0")
        .env("REBYTE_ORG_ACTIVE_TURNS", "0")
        .env("REBYTE_ORG_LIVE_SANDBOXES", "0")
        .env("OPENAI_BASE_URL", model.base_url())
        .env("OPENAI_API_KEY", "bench")
        .env("REBYTE_LOG", log)
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(if capture_stderr { Stdio::piped() } else { Stdio::inherit() })
        .spawn()
        .unwrap();
    let stderr = child.stderr.take();
    let url = test_support::process::listening_url(&mut child);
    (Server { child, url, dir }, stderr)
}

pub async fn post(http: &reqwest::Client, url: &str, body: Value) -> Value {
    let r = http.post(url).bearer_auth(KEY).json(&body).send().await.unwrap();
    serde_json::from_str(&r.text().await.unwrap()).unwrap_or(Value::Null)
}

/// The session's events, each with the time it was read.
pub async fn subscribe(http: &reqwest::Client, url: &str) -> impl futures::Stream<Item = (Instant, Value)> + use<> {
    let resp = http.get(url).bearer_auth(KEY).send().await.unwrap();
    let mut buf = String::new();
    resp.bytes_stream()
        .map(move |chunk| {
            let at = Instant::now();
            buf.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
            let mut out = Vec::new();
            while let Some(end) = buf.find("\n\n") {
                let frame: String = buf.drain(..end + 2).collect();
                for line in frame.lines() {
                    if let Some(data) = line.strip_prefix("data: ") {
                        out.push((at, serde_json::from_str::<Value>(data).unwrap()));
                    }
                }
            }
            futures::stream::iter(out)
        })
        .flatten()
}

/// The `q` quantile of `samples` (sorted in place), nearest rank.
pub fn percentile(samples: &mut [Duration], q: f64) -> Duration {
    samples.sort();
    samples[((samples.len() as f64 - 1.0) * q).round() as usize]
}

/// One turn on `sid`: from the POST of its input to `turn.completed` on `events`.
pub async fn turn(
    http: &reqwest::Client,
    base: &str,
    sid: &str,
    events: &mut (impl futures::Stream<Item = (Instant, Value)> + Unpin),
) -> Duration {
    let body = serde_json::json!({"events": [{"type": "agent.session.input.message",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "go"}]}]}]});
    let began = Instant::now();
    post(http, &format!("{base}/v1/agents/sessions/{sid}/events"), body).await;
    while let Some((at, e)) = events.next().await {
        if e["type"] == "agent.session.turn.completed" {
            return at - began;
        }
        assert_ne!(e["type"], "agent.session.turn.failed", "{e}");
    }
    panic!("the event stream ended");
}
