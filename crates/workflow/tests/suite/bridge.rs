//! Programs that return values, log, and call the host: answers become values, failures
//! `Error`s, and calls overlap under `Promise.all`.

use super::{TestHost, error, run};
use serde_json::{Value, json};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use workflow::{Limits, Status};

#[tokio::test]
async fn a_constant_is_returned_as_json() {
    let outcome = run("return {a: 1, b: [true, null, 'x']};").await;
    assert_eq!(outcome.status, Status::Completed, "{outcome:?}");
    assert_eq!(outcome.value.as_deref(), Some(r#"{"a":1,"b":[true,null,"x"]}"#));
    assert_eq!(outcome.text(), r#"{"a":1,"b":[true,null,"x"]}"#);
    let outcome = run("const x = 1;").await;
    assert_eq!(outcome.value.as_deref(), Some("null"), "undefined reads as null");
}

#[tokio::test]
async fn console_output_follows_the_value() {
    let outcome = run("console.log('hi', 2, {k: 'v'}); console.error(new Error('e')); return 7;").await;
    assert_eq!(outcome.status, Status::Completed);
    assert_eq!(outcome.log, "hi 2 {\"k\":\"v\"}\nError: e");
    assert_eq!(outcome.text(), "7\n\nconsole output:\nhi 2 {\"k\":\"v\"}\nError: e");
}

#[tokio::test]
async fn console_output_is_cut_at_its_limit() {
    let limits = Limits { log_bytes: 100, ..Limits::default() };
    let outcome = super::run_with("for (let i = 0; i < 1000; i++) console.log('line ' + i); return 1;", limits).await;
    assert_eq!(outcome.status, Status::Completed);
    assert!(outcome.log.len() < 200, "{}", outcome.log);
    assert!(outcome.log.ends_with("[console output cut at the limit of 100 bytes]"), "{}", outcome.log);
}

#[tokio::test]
async fn call_tool_answers_values_and_failures_throw() {
    let code = r#"
        const a = await call_tool({server: "s", name: "echo", arguments: {n: 1}});
        const s = await search_tools({query: "add"});
        let message = null;
        try { await call_tool({server: "s", name: "fail", arguments: {}}); }
        catch (e) { message = (e instanceof Error) + ": " + e.message; }
        return {a, s, message};
    "#;
    let outcome = run(code).await;
    assert_eq!(outcome.status, Status::Completed, "{outcome:?}");
    let value: Value = serde_json::from_str(outcome.value.as_deref().unwrap()).unwrap();
    assert_eq!(value["a"], json!({"n": 1}));
    assert_eq!(value["s"], json!({"searched": {"query": "add"}}));
    assert_eq!(value["message"], "true: tool 'fail' is not allowed on server 'x'");
    assert_eq!(outcome.nested_calls, 3);
}

#[tokio::test]
async fn promise_all_runs_calls_at_once() {
    let host = std::sync::Arc::new(TestHost::default());
    let code = r#"
        const calls = [...Array(10).keys()].map(i =>
            call_tool({server: "s", name: "slow", arguments: {ms: 200, i}}));
        return (await Promise.all(calls)).map(r => r.i);
    "#;
    let began = Instant::now();
    let outcome = workflow::run(code, host.clone(), Limits::default(), &CancellationToken::new()).await;
    assert_eq!(outcome.value.as_deref(), Some("[0,1,2,3,4,5,6,7,8,9]"), "{outcome:?}");
    assert_eq!(host.most.load(Ordering::SeqCst), 10, "all ten were running together");
    assert!(began.elapsed() < Duration::from_millis(1500), "{:?}", began.elapsed());
}

#[tokio::test]
async fn an_uncaught_failure_ends_the_run_with_its_message() {
    let outcome = run("await call_tool({server: 's', name: 'fail'});").await;
    let message = error(&outcome);
    assert!(message.starts_with("the program threw Error: tool 'fail' is not allowed on server 'x'"), "{message}");
    assert!(outcome.text().starts_with("error: the program threw Error"), "{}", outcome.text());
}

#[tokio::test]
async fn cancelling_stops_a_waiting_program_at_once() {
    let cancel = CancellationToken::new();
    let host = std::sync::Arc::new(TestHost::default());
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        trigger.cancel();
    });
    let began = Instant::now();
    let code = "await call_tool({server: 's', name: 'hang'}); return 1;";
    let outcome = workflow::run(code, host.clone(), Limits::default(), &cancel).await;
    assert_eq!(error(&outcome), "the program was stopped: the turn was cancelled");
    assert!(began.elapsed() < Duration::from_secs(2), "{:?}", began.elapsed());
}

#[tokio::test]
async fn cancelling_stops_a_computing_program_at_once() {
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        trigger.cancel();
    });
    let began = Instant::now();
    let outcome =
        workflow::run("while (true) {}", std::sync::Arc::new(TestHost::default()), Limits::default(), &cancel).await;
    assert_eq!(error(&outcome), "the program was stopped: the turn was cancelled");
    assert!(began.elapsed() < Duration::from_secs(2), "{:?}", began.elapsed());
}

#[tokio::test]
async fn the_program_sees_no_host_facilities() {
    let code = r#"return [typeof require, typeof process, typeof fetch, typeof setTimeout,
                          typeof std, typeof os, typeof __rebyte_log, typeof XMLHttpRequest];"#;
    let outcome = run(code).await;
    assert_eq!(
        outcome.value.as_deref(),
        Some(r#"["undefined","undefined","undefined","undefined","undefined","undefined","undefined","undefined"]"#)
    );
    let outcome = run("const m = await import('fs'); return 1;").await;
    assert!(error(&outcome).starts_with("the program threw"), "{outcome:?}");
}
