//! Pause freezes every process; resume continues them with their files
//! intact, and any use of a paused sandbox resumes it.

use super::support::*;
use sandbox::{ExecRequest, Sandbox, SandboxState};
use std::time::Duration;

fn counter(sb: &TestSandbox) -> u64 {
    std::fs::read_to_string(sb.host_path("counter")).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(0)
}

#[tokio::test]
async fn pause_and_resume_keep_a_running_process_and_its_files() {
    pause_and_resume(start("pause").await).await;
}

#[tokio::test]
async fn without_a_freezer_cgroup_pause_stops_and_resume_continues_every_process() {
    pause_and_resume(start_on(&backend_without_cgroups(), "pause-signals", |_| {}).await).await;
}

async fn pause_and_resume(sb: TestSandbox) {
    sh(&*sb.sandbox, "echo kept > file.txt").await;
    let loop_cmd = "i=0; while true; do i=$((i+1)); echo $i > counter.tmp; mv counter.tmp counter; sleep 0.01; done";
    let exec = sb.exec(ExecRequest::new(loop_cmd)).await.unwrap();
    let pid = exec.pid();
    while counter(&sb) < 3 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    sb.pause().await.unwrap();
    assert_eq!(sb.state(), SandboxState::Paused);
    let frozen = counter(&sb);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(counter(&sb), frozen, "a process ran while paused");

    sb.resume().await.unwrap();
    assert_eq!(sb.state(), SandboxState::Running);
    let mut moved = false;
    for _ in 0..100 {
        if counter(&sb) > frozen {
            moved = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(moved, "the process did not continue after resume");
    assert_eq!(sh(&*sb.sandbox, &format!("test -d /proc/{pid} && cat file.txt")).await, "kept");
    exec.kill().await.unwrap();
}

#[tokio::test]
async fn using_a_paused_sandbox_resumes_it() {
    let sb = start("autoresume").await;
    sb.pause().await.unwrap();
    assert_eq!(sh(&*sb.sandbox, "echo hi").await, "hi");
    assert_eq!(sb.state(), SandboxState::Running);
    // Destroying a paused sandbox works too (frozen tasks are thawed to die).
    sb.pause().await.unwrap();
    sb.destroy().await.unwrap();
    assert_eq!(sb.state(), SandboxState::Gone);
}

#[tokio::test]
async fn killing_a_command_of_a_paused_sandbox_resumes_it_and_kills() {
    let sb = start("pausekill").await;
    let exec = sb.exec(ExecRequest::new("sleep 600")).await.unwrap();
    let killer = exec.killer();
    sb.pause().await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), killer.kill()).await.expect("kill waited for a resume").unwrap();
    let out = tokio::time::timeout(Duration::from_secs(5), exec.wait()).await.unwrap().unwrap();
    assert!(out.status.killed);
    assert_eq!(sb.state(), SandboxState::Running);
}
