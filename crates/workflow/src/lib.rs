//! Dynamic Workflow's interpreter: runs a model-written program — the body of an async
//! JavaScript function — in an embedded QuickJS (`rquickjs`) that has no filesystem, network,
//! timers or module loader. The program reaches the outside only through two functions the
//! [`Host`] answers, `search_tools` and `call_tool`; every run has its own runtime with the
//! [`Limits`] (wall clock, memory, nested calls, output size, stack) and ends as an [`Outcome`].
//!
//! Threads: the interpreter runs on a blocking thread of the tokio runtime ([`interp`]); the
//! async side ([`run`]) receives its nested calls, runs them concurrently as the host's futures
//! (so `Promise.all` overlaps them) and sends the answers back, which settle the promises the
//! program awaits. A stop (cancellation, the wall clock, the nested-call limit) raises a flag
//! the interpreter's interrupt handler reads, and wakes it if it waits for an answer.

mod describe;
mod interp;
mod limits;
mod output;

pub use limits::{
    DEFAULT_LOG_BYTES, DEFAULT_MEMORY_BYTES, DEFAULT_NESTED_CALLS, DEFAULT_RESULT_BYTES, DEFAULT_STACK_BYTES,
    DEFAULT_WALL_CLOCK, Limits, Stop,
};
pub use output::{Outcome, Status};

use futures::future::BoxFuture;
use futures::stream::{FuturesUnordered, StreamExt};
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use tokio_util::sync::CancellationToken;

/// Which bridge function the program called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallKind {
    SearchTools,
    CallTool,
}

impl CallKind {
    /// The function's name in the program.
    pub fn name(self) -> &'static str {
        match self {
            CallKind::SearchTools => "search_tools",
            CallKind::CallTool => "call_tool",
        }
    }
}

/// A nested call: the function and its argument as JSON text (`{}` when none was given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub kind: CallKind,
    pub arguments: String,
}

/// What answers a program's nested calls: a JSON value the program receives, or an error
/// message it receives as a thrown `Error`. `cancel` fires when the run stops.
pub trait Host: Send + Sync {
    fn call(&self, call: Call, cancel: CancellationToken) -> BoxFuture<'static, Result<Value, String>>;
}

/// A nested call from the interpreter thread.
pub(crate) struct Request {
    pub(crate) id: u64,
    pub(crate) call: Call,
}

/// What the async side sends the interpreter thread.
pub(crate) enum Wake {
    /// The answer to request `id`: JSON text, or an error message.
    Reply(u64, Result<String, String>),
    /// The run must stop (the flag says why).
    Stop,
}

/// Runs `code` to its end (or to a limit, or until `cancel` fires, which stops it at once).
pub async fn run(code: &str, host: &dyn Host, limits: Limits, cancel: &CancellationToken) -> Outcome {
    let began = std::time::Instant::now();
    let stop = Arc::new(AtomicU8::new(0));
    let (requests_tx, mut requests) = tokio::sync::mpsc::unbounded_channel::<Request>();
    let (wake, wakes) = std::sync::mpsc::channel::<Wake>();
    let thread = {
        let (code, stop) = (code.to_string(), Arc::clone(&stop));
        tokio::task::spawn_blocking(move || interp::run(&code, limits, &stop, requests_tx, wakes))
    };
    let calls_cancel = cancel.child_token();
    let deadline = tokio::time::sleep(limits.wall_clock);
    tokio::pin!(deadline);
    let mut calls = FuturesUnordered::new();
    let mut made = 0usize;
    let halt = |reason: Stop| {
        // The first reason wins; the interpreter reads it when it stops.
        let _ = stop.compare_exchange(0, reason.code(), Ordering::SeqCst, Ordering::SeqCst);
        calls_cancel.cancel();
        let _ = wake.send(Wake::Stop);
    };
    let mut stopped = false;
    loop {
        tokio::select! {
            biased;
            _ = cancel.cancelled(), if !stopped => { stopped = true; halt(Stop::Cancelled); }
            _ = &mut deadline, if !stopped => { stopped = true; halt(Stop::WallClock); }
            request = requests.recv() => match request {
                None => break,
                Some(_) if stopped => {}
                Some(Request { id, call }) => {
                    made += 1;
                    if made > limits.nested_calls {
                        stopped = true;
                        halt(Stop::NestedCalls);
                        continue;
                    }
                    let answer = host.call(call, calls_cancel.clone());
                    calls.push(async move { (id, answer.await) });
                }
            },
            Some((id, answer)) = calls.next(), if !calls.is_empty() && !stopped => {
                let answer = answer.map(|value| value.to_string());
                let _ = wake.send(Wake::Reply(id, answer));
            }
        }
    }
    drop(calls);
    let mut outcome = match thread.await {
        Ok(outcome) => outcome,
        Err(e) => Outcome::incomplete(format!("the interpreter stopped unexpectedly: {e}"), String::new()),
    };
    outcome.nested_calls = made.min(limits.nested_calls);
    outcome.elapsed = began.elapsed();
    outcome
}
