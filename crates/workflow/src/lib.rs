//! Dynamic Workflow's interpreter: runs a model-written program — the body of an async
//! JavaScript function — in an embedded QuickJS (`rquickjs`) that has no filesystem, network,
//! timers or module loader. The program reaches the outside only through two functions the
//! [`Host`] answers, `search_tools` and `call_tool`; every run has its own runtime with the
//! [`Limits`] (wall clock, memory, nested calls, output size, stack) and ends as an [`Outcome`].
//!
//! Threads: the interpreter runs on a blocking thread of the tokio runtime ([`interp`]), which
//! also drives the host's futures for its nested calls (concurrently, so `Promise.all` overlaps
//! them) while the program waits for them: an answer wakes the interpreter directly, with no
//! hop through another task. A stop (cancellation, the wall clock, the nested-call limit)
//! raises a flag the interpreter's interrupt handler reads; a wait for answers also watches
//! the cancellation and the deadline.

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

/// Runs `code` to its end (or to a limit, or until `cancel` fires, which stops it at once).
pub async fn run(code: &str, host: Arc<dyn Host>, limits: Limits, cancel: &CancellationToken) -> Outcome {
    let began = std::time::Instant::now();
    let stop = Arc::new(AtomicU8::new(0));
    let calls_cancel = cancel.child_token();
    let thread = {
        let (code, stop, calls_cancel) = (code.to_string(), Arc::clone(&stop), calls_cancel.clone());
        let handle = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || {
            interp::run(&code, limits, &stop, interp::Bridge { host, handle, cancel: calls_cancel })
        })
    };
    tokio::pin!(thread);
    let joined = tokio::select! {
        joined = &mut thread => joined,
        _ = cancel.cancelled() => {
            // The interpreter's interrupt handler reads the flag; a wait for an answer sees the token.
            let _ = stop.compare_exchange(0, Stop::Cancelled.code(), Ordering::SeqCst, Ordering::SeqCst);
            calls_cancel.cancel();
            thread.await
        }
    };
    let mut outcome = match joined {
        Ok(outcome) => outcome,
        Err(e) => Outcome::incomplete(format!("the interpreter stopped unexpectedly: {e}"), String::new()),
    };
    outcome.elapsed = began.elapsed();
    outcome
}
