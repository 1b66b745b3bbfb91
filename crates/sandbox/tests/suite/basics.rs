//! Commands run inside the sandbox as root of its own namespaces, in
//! `/workspace`, with the environment they are given; output, exit codes,
//! stdin, timeouts and start failures come back.

use super::support::*;
use sandbox::{Error, ExecRequest, Sandbox, SandboxSpec};
use std::time::Duration;

#[tokio::test]
async fn a_command_runs_as_root_of_its_namespaces_in_workspace() {
    let sb = start("basic").await;
    assert_eq!(sh(&*sb.sandbox, "pwd").await, "/workspace");
    assert_eq!(sh(&*sb.sandbox, "id -u").await, "0");
    assert_eq!(sh(&*sb.sandbox, "hostname").await, "rebyte");
    let out = run(&*sb.sandbox, "echo out; echo err >&2; exit 7").await;
    assert_eq!(out.stdout_str(), "out\n");
    assert_eq!(out.stderr_str(), "err\n");
    assert_eq!(out.status.code, Some(7));
    sb.sandbox.destroy().await.unwrap();
}

#[tokio::test]
async fn environment_comes_from_the_spec_then_set_env_then_the_command() {
    let sb = start_with("env", |s: &mut SandboxSpec| {
        s.env.insert("FROM_SPEC".into(), "spec".into());
        s.env.insert("OVERRIDDEN".into(), "spec".into());
    })
    .await;
    sb.set_env([("FROM_SETUP".to_string(), "setup".to_string())].into()).await.unwrap();
    let out = sb
        .exec(ExecRequest::new("echo $FROM_SPEC $FROM_SETUP $OVERRIDDEN $HOME").env("OVERRIDDEN", "cmd"))
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    assert_eq!(out.stdout_str(), "spec setup cmd /root\n");
    // Nothing of the host's environment leaks in.
    assert_eq!(sh(&*sb.sandbox, "env | grep -c CARGO || true").await, "0");
}

#[tokio::test]
async fn stdin_is_fed_and_closed() {
    let sb = start("stdin").await;
    let out = sb.exec(ExecRequest::new("wc -c; cat").stdin(vec![b'x'; 200_000])).await.unwrap().wait().await.unwrap();
    assert_eq!(out.stdout_str().trim(), "200000");
    assert!(out.status.success());
}

#[tokio::test]
async fn a_command_past_its_timeout_is_killed_and_marked_timed_out() {
    let sb = start("timeout").await;
    let started = std::time::Instant::now();
    let out = sb
        .exec(ExecRequest::new("echo before; sleep 30").timeout(Duration::from_millis(300)))
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    assert!(out.status.timed_out);
    assert_eq!(out.status.signal, Some(libc::SIGKILL));
    assert_eq!(out.stdout_str(), "before\n");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn a_missing_working_directory_fails_to_start() {
    let sb = start("cwd").await;
    let err = sb.exec(ExecRequest::new("true").cwd("no/such/dir")).await.err().unwrap();
    assert!(matches!(err, Error::Spawn(ref m) if m.contains("/workspace/no/such/dir")), "{err}");
    sh(&*sb.sandbox, "mkdir -p sub").await;
    let out = sb.exec(ExecRequest::new("pwd").cwd("sub")).await.unwrap().wait().await.unwrap();
    assert_eq!(out.stdout_str(), "/workspace/sub\n");
}

#[tokio::test]
async fn python_and_node_from_the_host_toolchain_run_inside() {
    let sb = start("toolchain").await;
    let py = run(&*sb.sandbox, "python3 -c 'import sys; print(sys.version_info[0])'").await;
    if py.status.success() {
        assert_eq!(py.stdout_str(), "3\n");
    } else {
        println!("skipped python3: not on this host ({})", py.stderr_str());
    }
    let node = run(&*sb.sandbox, "node -e 'console.log(1+1)'").await;
    if node.status.success() {
        assert_eq!(node.stdout_str(), "2\n");
    } else {
        println!("skipped node: not on this host ({})", node.stderr_str());
    }
}

#[tokio::test]
async fn a_destroyed_sandbox_refuses_work_and_its_agent_is_gone() {
    let sb = start("destroy").await;
    let pid = sb.agent_pid();
    sb.destroy().await.unwrap();
    assert_eq!(sb.state(), sandbox::SandboxState::Gone);
    assert!(matches!(sb.exec(ExecRequest::new("true")).await, Err(Error::Gone(_))));
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
    // The environment's files stay on the host.
    assert!(sb.host_path("").is_dir());
}

#[tokio::test]
async fn a_missing_agent_executable_fails_creation_with_the_exec_error() {
    let dir = tempfile::tempdir().unwrap();
    let backend = sandbox::LocalBackend::new(sandbox::LocalConfig::with_agent("/nonexistent/agent", vec![]));
    let err = backend.create_local(SandboxSpec::new(unique_id("noagent"), dir.path())).await.err().unwrap();
    assert!(matches!(err, Error::Create(ref m) if m.contains("No such file")), "{err}");
}

#[tokio::test]
async fn orphaned_processes_are_reaped_by_the_agent_as_pid_1() {
    let sb = start("reap").await;
    // Twenty grandchildren are orphaned at once and exit shortly after.
    sh(&*sb.sandbox, "for i in $(seq 20); do (sleep 0.1 &) ; done").await;
    let mut zombies = String::new();
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        zombies = sh(&*sb.sandbox, "cat /proc/[0-9]*/stat 2>/dev/null | awk '$3 == \"Z\"' | wc -l").await;
        if zombies == "0" && sh(&*sb.sandbox, "cat /proc/[0-9]*/comm | grep -c sleep || true").await == "0" {
            return;
        }
    }
    panic!("{zombies} zombies left");
}
