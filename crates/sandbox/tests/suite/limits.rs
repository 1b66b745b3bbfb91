//! Resource limits contain a fork bomb and a memory hog where the host
//! offers limits (cgroups, or rlimits as a fallback); the sandbox and the
//! host stay usable. Skipped, with the reason printed, where they cannot be.

use super::support::*;
use sandbox::{ExecRequest, Sandbox};
use std::time::Duration;

#[tokio::test]
async fn a_fork_bomb_is_contained_by_the_process_limit() {
    let sb = start_with("forkbomb", |s| s.limits.max_processes = Some(64)).await;
    let (_, pids_by_cgroup) = sb.cgroup_limits();
    if !pids_by_cgroup && nix::unistd::geteuid().is_root() {
        println!("skipped: no pids cgroup, and RLIMIT_NPROC does not bind a sandbox mapped to host root");
        return;
    }
    let bomb = "bomb() { bomb | bomb & }; bomb; sleep 5";
    let out = sb.exec(ExecRequest::new(bomb).timeout(Duration::from_secs(3))).await.unwrap().wait().await.unwrap();
    assert!(out.status.timed_out || !out.status.success());
    assert!(
        out.stderr_str().contains("fork") || out.stderr_str().contains("Resource temporarily unavailable"),
        "the limit was never hit: {}",
        out.stderr_str()
    );
    // Everything the bomb started was in the command's process group: once
    // the agent has reaped it (forks fail until then), the sandbox recovers.
    let mut count = String::new();
    for _ in 0..200 {
        if let Ok(exec) = sb.exec(ExecRequest::new("ls -d /proc/[0-9]* | wc -l")).await {
            let out = exec.wait().await.unwrap();
            count = out.stdout_str().trim().to_string();
            if out.status.success() && count.parse::<u32>().unwrap_or(99) <= 4 {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(count.parse::<u32>().unwrap_or(99) <= 4, "{count} processes remain after the bomb");
    assert_eq!(sh(&*sb.sandbox, "echo still-alive").await, "still-alive");
    assert!(std::process::Command::new("true").status().unwrap().success(), "the host cannot fork");
}

#[tokio::test]
async fn a_detached_fork_bomb_leaves_the_agent_room_for_the_command_that_stops_it() {
    let sb = start_with("forkbomb-detached", |s| s.limits.max_processes = Some(64)).await;
    let (_, pids_by_cgroup) = sb.cgroup_limits();
    if !pids_by_cgroup {
        println!("skipped: no pids cgroup");
        return;
    }
    // Out of the command's process group and session, it outlives the command; bash
    // retries a fork that fails for lack of room, so it never dies down by itself.
    let bomb = "setsid bash -c 'b() { b | b & }; b' > /dev/null 2>&1 < /dev/null & echo started";
    assert_eq!(sh(&*sb.sandbox, bomb).await, "started");
    let mut full = false;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let out = sb.exec(ExecRequest::new("ls -d /proc/[0-9]* | wc -l")).await.unwrap().wait().await.unwrap();
        if !out.status.success() && out.stderr_str().contains("fork") {
            full = true;
            break;
        }
    }
    assert!(full, "the bomb never filled the commands' limit");
    // The agent still starts a command (without headroom: EAGAIN at spawn), and a
    // shell builtin needs no fork to stop everything.
    let mut left = 99;
    for _ in 0..100 {
        let exec = sb.exec(ExecRequest::new("kill -9 -1 2>/dev/null; kill -9 -1 2>/dev/null; echo $$")).await;
        let out = exec.expect("the agent can start a command while the bomb holds every slot").wait().await.unwrap();
        assert!(out.status.success() || out.status.signal.is_some(), "{out:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
        if let Ok(exec) = sb.exec(ExecRequest::new("ls -d /proc/[0-9]* | wc -l")).await {
            let out = exec.wait().await.unwrap();
            left = out.stdout_str().trim().parse().unwrap_or(99);
            if out.status.success() && left <= 4 {
                break;
            }
        }
    }
    assert!(left <= 4, "{left} processes remain after the bomb was stopped");
    assert_eq!(sh(&*sb.sandbox, "echo recovered").await, "recovered");
}

#[tokio::test]
async fn a_memory_hog_is_killed_and_the_sandbox_survives() {
    let sb = start_with("memhog", |s| s.limits.memory_bytes = Some(128 << 20)).await;
    let (memory_by_cgroup, _) = sb.cgroup_limits();
    if !memory_by_cgroup {
        println!("note: no memory cgroup; RLIMIT_DATA bounds each process instead");
    }
    let out = memory_hog(&*sb.sandbox).await;
    assert!(!out.status.timed_out, "the hog was not stopped by the limit");
    assert_ne!(out.stdout_str().trim(), "1073741824", "1 GiB fit under a 128 MiB limit");
    assert_eq!(sh(&*sb.sandbox, "echo still-alive").await, "still-alive");
}

#[tokio::test]
async fn without_cgroups_a_memory_hog_is_stopped_by_its_rlimit() {
    let sb = start_on(&backend_without_cgroups(), "memhog-rlimit", |s| s.limits.memory_bytes = Some(128 << 20)).await;
    assert_eq!(sb.cgroup_limits(), (false, false));
    let out = memory_hog(&*sb.sandbox).await;
    assert!(!out.status.timed_out);
    assert!(out.stderr_str().contains("memory"), "{}", out.stderr_str());
    assert_eq!(sh(&*sb.sandbox, "echo still-alive").await, "still-alive");
    // Runtimes that reserve address space still start under RLIMIT_DATA.
    let node = run(&*sb.sandbox, "node -e 'console.log(1)'").await;
    assert!(node.status.success() || node.stderr_str().contains("not found"), "{}", node.stderr_str());
}

#[tokio::test]
async fn a_process_cannot_write_a_file_past_the_file_size_limit() {
    let sb = start_with("fsize", |s| s.limits.max_file_bytes = Some(1 << 20)).await;
    let out = run(&*sb.sandbox, "head -c 2000000 /dev/zero > big.bin").await;
    assert!(!out.status.success());
    assert_eq!(std::fs::metadata(sb.host_path("big.bin")).unwrap().len(), 1 << 20);
    sh(&*sb.sandbox, "head -c 1000 /dev/zero > small.bin").await;
}

#[tokio::test]
async fn a_cpu_quota_holds_a_busy_loop_to_its_share() {
    let sb = start_with("cpuquota", |s| s.limits.cpu_millicores = Some(200)).await;
    if !sb.cpu_quota_enforced() {
        println!("skipped: no cpu cgroup on this host");
        return;
    }
    // 1.5 s of wall time spinning; a fifth of a CPU allows about 0.3 s of it.
    let spin = "python3 -c \"import time\nend = time.time() + 1.5\nwhile time.time() < end: pass\nprint(time.process_time())\"";
    let used: f64 = sh(&*sb.sandbox, spin).await.parse().unwrap();
    assert!(used < 0.6, "the loop used {used} s of CPU in 1.5 s under a 0.2-CPU quota");
    assert!(used > 0.1, "the loop barely ran ({used} s)");
}

/// Holds 1 GiB in memory (`tail` keeps a newline-free stream) and prints its size.
async fn memory_hog(sandbox: &dyn Sandbox) -> sandbox::ExecOutput {
    let hog = ExecRequest::new("head -c 1073741824 /dev/zero | tail -c 1073741824 | wc -c");
    sandbox.exec(hog.timeout(Duration::from_secs(60))).await.unwrap().wait().await.unwrap()
}
