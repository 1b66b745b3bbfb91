//! Long-lived stdio processes (MCP servers): stdin and stdout as async
//! streams, stderr kept as a tail, and a handle to kill and observe them.

use super::support::*;
use sandbox::{Sandbox, SpawnRequest};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[tokio::test]
async fn a_stdio_process_answers_on_stdout_and_can_be_killed() {
    let sb = start("stdio").await;
    let mut proc = sb.spawn_stdio(SpawnRequest::new("echo starting >&2; exec cat").env("X", "1")).await.unwrap();
    let mut lines = BufReader::new(proc.stdout).lines();
    for i in 0..100 {
        proc.stdin.write_all(format!("{{\"id\":{i}}}\n").as_bytes()).await.unwrap();
        proc.stdin.flush().await.unwrap();
        assert_eq!(lines.next_line().await.unwrap().unwrap(), format!("{{\"id\":{i}}}"));
    }
    assert_eq!(proc.handle.try_status(), None);
    assert_eq!(proc.handle.stderr_tail(), b"starting\n");
    // It outlives the request that started it and is visible to commands.
    assert!(sh(&*sb.sandbox, "cat /proc/[0-9]*/comm").await.lines().any(|l| l == "cat"));
    proc.handle.kill().await.unwrap();
    let status = proc.handle.wait().await.unwrap();
    assert!(status.killed);
    assert_eq!(lines.next_line().await.unwrap(), None);
}

#[tokio::test]
async fn closing_stdin_ends_a_stdio_process_normally() {
    let sb = start("stdio-eof").await;
    let mut proc = sb.spawn_stdio(SpawnRequest::new("wc -l")).await.unwrap();
    proc.stdin.write_all(b"a\nb\nc\n").await.unwrap();
    proc.stdin.shutdown().await.unwrap();
    drop(proc.stdin);
    let mut out = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut proc.stdout, &mut out).await.unwrap();
    assert_eq!(out.trim(), "3");
    assert!(proc.handle.wait().await.unwrap().success());
}
