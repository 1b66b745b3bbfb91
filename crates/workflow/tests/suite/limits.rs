//! Each limit ends the run `incomplete` with an error that names it.

use super::{TestHost, error, run, run_with};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use workflow::Limits;

#[tokio::test]
async fn an_infinite_loop_reaches_the_wall_clock() {
    let limits = Limits { wall_clock: Duration::from_millis(300), ..Limits::default() };
    let began = Instant::now();
    let outcome = run_with("while (true) {}", limits).await;
    assert_eq!(error(&outcome), "the program reached its wall clock limit of 300 ms and was stopped");
    assert!(began.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn waiting_on_a_call_reaches_the_wall_clock() {
    let limits = Limits { wall_clock: Duration::from_millis(300), ..Limits::default() };
    let outcome = run_with("await call_tool({server: 's', name: 'hang'});", limits).await;
    assert_eq!(error(&outcome), "the program reached its wall clock limit of 300 ms and was stopped");
}

#[tokio::test]
async fn unbounded_allocation_reaches_the_memory_limit() {
    let outcome = run("const a = []; while (true) a.push('x'.repeat(1000) + a.length);").await;
    assert_eq!(error(&outcome), "the program reached its memory limit of 64 MiB and was stopped");
    let outcome = run("const m = new Map(); for (let i = 0; ; i++) m.set(i, new Array(10000).fill(i));").await;
    assert_eq!(error(&outcome), "the program reached its memory limit of 64 MiB and was stopped");
}

#[tokio::test]
async fn deep_recursion_reaches_the_stack_limit() {
    let outcome = run("function f(n) { return f(n + 1) + 1; } return f(0);").await;
    assert_eq!(error(&outcome), "the program exceeded its stack limit of 512 KiB (recursion too deep) and was stopped");
}

#[tokio::test]
async fn the_nested_call_limit_ends_the_run() {
    let host = std::sync::Arc::new(TestHost::default());
    let limits = Limits { nested_calls: 5, ..Limits::default() };
    let code = "for (let i = 0; i < 10; i++) await call_tool({server: 's', name: 'echo'}); return 1;";
    let outcome = workflow::run(code, host.clone(), limits, &CancellationToken::new()).await;
    assert_eq!(
        error(&outcome),
        "the program reached its limit of 5 nested calls (search_tools and call_tool) and was stopped"
    );
    assert_eq!(outcome.nested_calls, 5);
    assert_eq!(host.calls.load(std::sync::atomic::Ordering::SeqCst), 5, "the sixth never reached the host");
}

#[tokio::test]
async fn a_large_return_value_reaches_the_output_limit() {
    let limits = Limits { result_bytes: 1000, ..Limits::default() };
    let outcome = run_with("return 'y'.repeat(5000);", limits).await;
    let message = error(&outcome);
    assert!(message.starts_with("the return value is 5002 bytes of JSON, over the output limit of 1000 bytes"));
    assert!(message.len() < 1200, "cut: {}", message.len());
}
