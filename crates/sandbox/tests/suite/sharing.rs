//! "One sandbox per environment": every command, from any session, runs in
//! the same namespaces, sees the same files and each other's processes.

use super::support::*;
use sandbox::{ExecEvent, ExecRequest, Sandbox};
use std::sync::Arc;

#[tokio::test]
async fn two_execs_see_the_same_files_and_each_others_processes() {
    let sb = start("share").await;
    let shared: Arc<dyn Sandbox> = sb.sandbox.clone();
    let (a, b) = (shared.clone(), shared.clone());

    // Session A starts a long-running process and writes a file.
    let mut long = a.exec(ExecRequest::new("echo $$ > a.pid; echo ready; exec sleep 4242")).await.unwrap();
    assert_eq!(long.next().await.unwrap(), Some(ExecEvent::Stdout("ready\n".into())));
    // Session B sees both, and can signal A's process (the spec says so).
    let pid = sh(&*b, "cat a.pid").await;
    assert_eq!(pid, long.pid().to_string());
    assert!(sh(&*b, &format!("cat /proc/{pid}/cmdline | tr '\\0' ' '")).await.contains("sleep 4242"));
    sh(&*b, &format!("kill {pid}")).await;
    let mut exit = None;
    while let Some(event) = long.next().await.unwrap() {
        if let ExecEvent::Exit(status) = event {
            exit = Some(status);
        }
    }
    assert_eq!(exit.unwrap().signal, Some(libc::SIGTERM));
}

#[tokio::test]
async fn concurrent_commands_on_one_sandbox_all_complete() {
    let sb = start("concurrent").await;
    let shared: Arc<dyn Sandbox> = sb.sandbox.clone();
    let runs = (0..20).map(|i| {
        let s = shared.clone();
        tokio::spawn(async move { sh(&*s, &format!("echo {i} > f{i}; cat f{i}")).await })
    });
    for (i, r) in runs.enumerate() {
        assert_eq!(r.await.unwrap(), i.to_string());
    }
    assert_eq!(sh(&*shared, "ls f* | wc -l").await, "20");
}
