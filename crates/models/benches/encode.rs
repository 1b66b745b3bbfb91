//! Encoding a long turn's requests (issue 11, per-step overhead): a turn of
//! 1,000 steps, each adding a tool call and its ~180-byte result (the turns
//! bench's shape: the history grows to ~200 KB), its Chat Completions body
//! built at every step — with one `EncodedHistory` kept for the turn (what
//! the engine does), and with a fresh one each step (every message escaped
//! again, as before the cache). Same process, alternating rounds.
//!
//! Run: `cargo bench -p models --bench encode`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use models::{EncodedHistory, Message, ModelRequest, ToolCall, ToolSpec};
use std::time::{Duration, Instant};

const STEPS: usize = 1000;
const ROUNDS: usize = 7;

fn turn(keep: bool) -> (Duration, bytes::Bytes) {
    let kept = EncodedHistory::default();
    let mut messages = vec![Message::user("run the tool until it says stop, then answer in one word")];
    let tools = vec![ToolSpec::new("lookup", "looks a thing up", serde_json::json!({"type": "object"}))];
    let (mut took, mut last) = (Duration::ZERO, bytes::Bytes::new());
    for step in 0..STEPS {
        let mut request = ModelRequest::new("m");
        request.instructions = Some("You are a careful agent.".into());
        request.messages = std::mem::take(&mut messages);
        request.tools = tools.clone();
        request.encoded = if keep { kept.clone() } else { EncodedHistory::default() };
        let began = Instant::now();
        let body = models::openai::request_body(&request).unwrap();
        took += began.elapsed();
        last = body;
        messages = request.messages;
        let id = format!("call_{step:04}");
        messages.push(Message::ToolCall(ToolCall::new(&id, "lookup", format!("{{\"q\":\"item {step}\"}}"))));
        messages.push(Message::tool_result(
            &id,
            format!("error: no tool named \"lookup_{step}\"; the tools are \"search_tools\" and \"call_tool\" — \"quoted\" \\ text\nline two"),
        ));
    }
    (took, last)
}

fn main() {
    let (mut kept, mut fresh) = (Vec::new(), Vec::new());
    let mut last = 0;
    for _ in 0..ROUNDS {
        let (k, body) = turn(true);
        let (f, fresh_body) = turn(false);
        assert_eq!(body, fresh_body, "the same bodies either way");
        let bytes = body.len();
        kept.push(k);
        fresh.push(f);
        last = bytes;
    }
    kept.sort();
    fresh.sort();
    let per_step = |d: Duration| d.as_secs_f64() * 1e6 / STEPS as f64;
    let (k, f) = (kept[ROUNDS / 2], fresh[ROUNDS / 2]);
    println!("| encoding a {STEPS}-step turn's bodies (last {last} bytes), median of {ROUNDS} | µs per step |");
    println!("| --- | ---: |");
    println!("| every message escaped again each step | {:.1} |", per_step(f));
    println!("| the turn's encodings reused | {:.1} |", per_step(k));
}
