//! Test modules and the host they share.

mod bad_input;
mod bridge;
mod limits;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use workflow::{Call, CallKind, Host, Limits, Outcome};

/// A host whose `call_tool` answers by tool name: `echo` returns its arguments, `slow` waits
/// `ms` then returns them, `fail` answers an error, `hang` never answers; `search_tools`
/// returns its arguments under `searched`. It counts calls and the most at once.
#[derive(Default)]
pub struct TestHost {
    pub calls: AtomicUsize,
    pub running: Arc<AtomicUsize>,
    pub most: Arc<AtomicUsize>,
}

impl Host for TestHost {
    fn call(&self, call: Call, cancel: CancellationToken) -> BoxFuture<'static, Result<Value, String>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let (running, most) = (Arc::clone(&self.running), Arc::clone(&self.most));
        Box::pin(async move {
            let args: Value = serde_json::from_str(&call.arguments).map_err(|e| e.to_string())?;
            if call.kind == CallKind::SearchTools {
                return Ok(json!({"searched": args}));
            }
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            let answer = match args["name"].as_str() {
                Some("echo") => Ok(args["arguments"].clone()),
                Some("slow") => {
                    let ms = args["arguments"]["ms"].as_u64().unwrap_or(10);
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_millis(ms)) => Ok(args["arguments"].clone()),
                        _ = cancel.cancelled() => Err("cancelled".to_string()),
                    }
                }
                Some("fail") => Err("tool 'fail' is not allowed on server 'x'".to_string()),
                Some("hang") => {
                    cancel.cancelled().await;
                    Err("cancelled".to_string())
                }
                other => Err(format!("unknown tool {other:?}")),
            };
            running.fetch_sub(1, Ordering::SeqCst);
            answer
        })
    }
}

/// Runs `code` with the default limits.
pub async fn run(code: &str) -> Outcome {
    run_with(code, Limits::default()).await
}

pub async fn run_with(code: &str, limits: Limits) -> Outcome {
    workflow::run(code, std::sync::Arc::new(TestHost::default()), limits, &CancellationToken::new()).await
}

/// The outcome's error, asserting it is incomplete.
pub fn error(outcome: &Outcome) -> String {
    assert_eq!(outcome.status, workflow::Status::Incomplete, "{outcome:?}");
    outcome.error.clone().unwrap()
}
