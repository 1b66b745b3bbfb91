//! Killing a command kills its process group and nothing else: not the
//! sandbox, not other commands, not background processes started earlier.

use super::support::*;
use sandbox::{ExecEvent, ExecRequest, Sandbox};
use std::time::Duration;

async fn alive(sb: &dyn Sandbox, tag: &str) -> bool {
    let n =
        sh(sb, &format!("cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' | grep -o 'slee[p] {tag}' | wc -l")).await;
    n != "0"
}

#[tokio::test]
async fn kill_stops_the_commands_process_group_and_leaves_an_earlier_background_process_alive() {
    let sb = start("kill").await;
    // An earlier command leaves a background process behind.
    sh(&*sb.sandbox, "sleep 777 > /dev/null 2>&1 &").await;
    assert!(alive(&*sb.sandbox, "777").await);
    // A second command has children of its own, in its process group.
    let mut exec = sb.exec(ExecRequest::new("sleep 888 & sleep 999 & echo started; wait")).await.unwrap();
    assert_eq!(exec.next().await.unwrap(), Some(ExecEvent::Stdout("started\n".into())));
    assert!(alive(&*sb.sandbox, "888").await && alive(&*sb.sandbox, "999").await);

    let killer = exec.killer();
    killer.kill().await.unwrap();
    let status = loop {
        if let Some(ExecEvent::Exit(s)) = exec.next().await.unwrap() {
            break s;
        }
    };
    assert!(status.killed);
    assert_eq!(status.signal, Some(libc::SIGKILL));
    for _ in 0..100 {
        if !alive(&*sb.sandbox, "888").await && !alive(&*sb.sandbox, "999").await {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(!alive(&*sb.sandbox, "888").await && !alive(&*sb.sandbox, "999").await);
    assert!(alive(&*sb.sandbox, "777").await, "the earlier background process died");
    // Killing again after the exit is harmless.
    killer.kill().await.unwrap();
}

#[tokio::test]
async fn a_background_process_keeps_running_after_its_command_returns_and_prints() {
    let sb = start("bg").await;
    // It writes to the command's stdout long after the command exited.
    let out = run(&*sb.sandbox, "(sleep 0.2; echo late; echo alive > bg.txt; sleep 100) &").await;
    assert!(out.status.success());
    let mut content = String::new();
    for _ in 0..100 {
        content = std::fs::read_to_string(sb.host_path("bg.txt")).unwrap_or_default();
        if content == "alive\n" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(content, "alive\n");
    assert!(alive(&*sb.sandbox, "100").await);
}
