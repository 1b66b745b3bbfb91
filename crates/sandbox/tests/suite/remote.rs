//! The agent protocol is transport-agnostic: the same agent, started with
//! `--listen`, serves a host over TCP (what a remote backend — a pod, a VM —
//! would do), with no namespaces of the local backend involved.

use sandbox::client::Connection;
use sandbox::wire::{Frame, InitConfig, Kind};
use sandbox::{ExecEvent, ExecRequest};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};

#[tokio::test]
async fn the_agent_serves_commands_over_tcp_for_a_remote_backend() {
    let mut agent = tokio::process::Command::new(env!("CARGO_BIN_EXE_rebyte-sandbox-agent"))
        .args(["--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(agent.stdout.take().unwrap()).lines();
    let line = lines.next_line().await.unwrap().unwrap();
    let addr = line.strip_prefix("listening on ").unwrap().to_string();

    let (r, w) = tokio::net::TcpStream::connect(&addr).await.unwrap().into_split();
    let init = InitConfig {
        binds: vec![],
        overlays: vec![],
        masks: vec![],
        symlinks: vec![],
        hostname: String::new(),
        loopback: false,
        tmp_bytes: 0,
        tmpfs_home: false,
        rlimits: vec![],
        env: [("PATH".to_string(), "/usr/bin:/bin".to_string()), ("WHERE".to_string(), "remote".to_string())].into(),
        egress: None,
        dial_socket: None,
        command_cgroup: None,
        command_thread: false,
        veth: None,
    };
    let init = Frame::json(Kind::Init, 0, &init, vec![]).unwrap();
    let (conn, hello) = Connection::handshake(r, w, Some(init), Duration::from_secs(10)).await.unwrap();
    assert_eq!(hello.version, sandbox::wire::PROTOCOL_VERSION);

    let out =
        conn.exec(ExecRequest::new("echo over tcp from $WHERE").cwd("/"), None).await.unwrap().wait().await.unwrap();
    assert_eq!(out.stdout_str(), "over tcp from remote\n");
    assert!(out.status.success());

    let mut exec = conn.exec(ExecRequest::new("sleep 600").cwd("/"), None).await.unwrap();
    exec.kill().await.unwrap();
    let status = loop {
        if let Some(ExecEvent::Exit(s)) = exec.next().await.unwrap() {
            break s;
        }
    };
    assert!(status.killed);

    // The host hanging up ends the agent.
    drop(exec);
    drop(conn);
    let status = tokio::time::timeout(Duration::from_secs(5), agent.wait()).await.unwrap().unwrap();
    assert!(status.success());
}
