//! How much the provider layer adds per model call, against the scripted
//! server with no latency. Ignored by default (timing, not correctness):
//! `cargo test -p models --test all -- --ignored --nocapture overhead`.

use super::openai;
use futures::StreamExt;
use models::{Message, ModelRequest, ModelResponse, Provider};
use std::time::{Duration, Instant};
use test_support::model_server::{ModelServer, Step};

const CALLS: usize = 500;

#[tokio::test]
#[ignore = "timing measurement; run explicitly"]
async fn overhead_per_call_and_time_to_first_delta() {
    let server =
        ModelServer::with_script((0..2 * CALLS + 1).map(|_| Step::text("hello world").chunks(4))).await.unwrap();
    let provider = openai(&server);
    let request = ModelRequest::new("m").message(Message::user("hi"));
    // Warm the connection pool.
    ModelResponse::collect(provider.stream(&request)).await.unwrap();

    let started = Instant::now();
    for _ in 0..CALLS {
        ModelResponse::collect(provider.stream(&request)).await.unwrap();
    }
    let through_provider = started.elapsed() / CALLS as u32;

    let client = reqwest::Client::new();
    let url = format!("{}/chat/completions", server.base_url());
    let body = serde_json::json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "hi"}]});
    let mut raw_first = Duration::ZERO;
    let mut ours_first = Duration::ZERO;
    for _ in 0..CALLS / 2 {
        let t = Instant::now();
        let mut response = client.post(&url).json(&body).send().await.unwrap();
        let mut seen = 0;
        // The first delta is in the second SSE event.
        while let Some(chunk) = response.chunk().await.unwrap() {
            seen += chunk.windows(2).filter(|w| w == b"\n\n").count();
            if seen >= 2 {
                break;
            }
        }
        raw_first += t.elapsed();
        while response.chunk().await.unwrap().is_some() {}

        let t = Instant::now();
        let mut stream = provider.stream(&request);
        stream.next().await.unwrap().unwrap();
        ours_first += t.elapsed();
        while stream.next().await.is_some() {}
    }
    let n = (CALLS / 2) as u32;
    println!(
        "per call through the provider: {through_provider:?}; time to first delta: raw reqwest {:?}, provider {:?}",
        raw_first / n,
        ours_first / n
    );
}
