//! Output streams as it is produced, in full: the caller decides what to
//! truncate. Huge output flows with bounded buffering (the command waits
//! while the reader is slow).

use super::support::*;
use sandbox::{ExecEvent, ExecRequest, Sandbox};
use std::time::{Duration, Instant};

#[tokio::test]
async fn output_arrives_while_the_command_still_runs() {
    let sb = start("stream").await;
    let mut exec = sb.exec(ExecRequest::new("echo first; sleep 2; echo second")).await.unwrap();
    let started = Instant::now();
    assert_eq!(exec.next().await.unwrap(), Some(ExecEvent::Stdout("first\n".into())));
    assert!(started.elapsed() < Duration::from_secs(1), "first chunk waited for the command");
    exec.kill().await.unwrap();
}

#[tokio::test]
async fn huge_output_is_streamed_completely() {
    let sb = start("huge").await;
    let size: usize = 64 << 20;
    let mut exec = sb
        .exec(ExecRequest::new(format!("head -c {size} /dev/urandom | od -An -v -tx1 | head -c {size}; echo done >&2")))
        .await
        .unwrap();
    let (mut stdout, mut chunks, mut stderr) = (0usize, 0usize, Vec::new());
    let status = loop {
        match exec.next().await.unwrap().unwrap() {
            ExecEvent::Stdout(b) => {
                stdout += b.len();
                chunks += 1;
                if chunks == 10 {
                    // A slow reader: the agent must hold off, not drop data.
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
            ExecEvent::Stderr(b) => stderr.extend_from_slice(&b),
            ExecEvent::Exit(s) => break s,
        }
    };
    assert!(status.success(), "{status:?}");
    assert_eq!(stdout, size);
    assert!(chunks > 100, "output was not streamed in chunks ({chunks})");
    assert_eq!(stderr, b"done\n");
}

#[tokio::test]
async fn dropping_an_execution_lets_its_command_finish() {
    let sb = start("drop").await;
    let exec = sb.exec(ExecRequest::new("head -c 20000000 /dev/zero; echo finished > done.txt")).await.unwrap();
    drop(exec);
    for _ in 0..300 {
        if sb.host_path("done.txt").exists() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("a command whose handle was dropped stalled");
}
