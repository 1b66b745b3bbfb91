//! Isolation: a command cannot read another environment's files or the
//! host's private files, cannot see host processes, cannot reach the
//! network when it is disabled, and cannot change the host toolchain.

use super::support::*;
use sandbox::NetworkPolicy;
use std::time::Duration;

#[tokio::test]
async fn a_command_cannot_read_another_environments_files() {
    let a = start("iso-a").await;
    let b = start("iso-b").await;
    sh(&*a.sandbox, "echo secret-of-a > only-in-a-7f3e.txt").await;
    let a_host = a.host_path("only-in-a-7f3e.txt");
    assert!(a_host.exists());
    let out = run(&*b.sandbox, &format!("cat {}", a_host.display())).await;
    assert!(!out.status.success());
    assert!(!out.stdout_str().contains("secret-of-a"));
    let found = run(&*b.sandbox, "find / -path /proc -prune -o -name 'only-in-a-*' -print 2>/dev/null; true").await;
    assert_eq!(found.stdout_str(), "", "b found a's file");
}

#[tokio::test]
async fn a_command_cannot_read_the_hosts_private_files() {
    let sb = start("iso-host").await;
    for path in ["/work", "/root/.cargo", "/root/.ssh", "/old_root", "/mnt", "/sys", "/var/lib"] {
        let out = run(&*sb.sandbox, &format!("ls {path}")).await;
        assert!(!out.status.success(), "{path} is visible: {}", out.stdout_str());
    }
    // /etc comes from the host, but its secrets are masked.
    if std::path::Path::new("/etc/shadow").exists() {
        assert_eq!(sh(&*sb.sandbox, "wc -c < /etc/shadow").await, "0");
    }
    // Only the sandbox's own skeleton and the host toolchain exist at the top.
    let toolchain = sandbox::local::Toolchain::detect();
    let mut allowed: Vec<String> =
        ["dev", "proc", "root", "run", "tmp", "var", "home", "usr", "etc", "workspace"].map(String::from).to_vec();
    for path in toolchain.dirs.iter().chain(toolchain.symlinks.iter().map(|(at, _)| at)) {
        if let Some(std::path::Component::Normal(top)) = path.components().nth(1) {
            allowed.push(top.to_string_lossy().into_owned());
        }
    }
    let root = sh(&*sb.sandbox, "ls -A /").await;
    for entry in root.lines() {
        assert!(allowed.iter().any(|a| a == entry), "unexpected /{entry}");
    }
}

#[tokio::test]
async fn a_command_cannot_see_host_processes() {
    let mut host = std::process::Command::new("sleep").arg("31.4159").spawn().unwrap();
    let sb = start("iso-ps").await;
    let found = run(&*sb.sandbox, "cat /proc/[0-9]*/cmdline | tr '\\0' ' ' | grep -c '[3]1.4159' || true").await;
    host.kill().unwrap();
    host.wait().unwrap();
    assert_eq!(found.stdout_str().trim(), "0");
    // PID 1 is the agent; the shell running this is one of very few processes.
    let pids = sh(&*sb.sandbox, "ls -d /proc/[0-9]* | wc -l").await;
    assert!(pids.parse::<u32>().unwrap() <= 4, "{pids} processes visible");
    assert!(sh(&*sb.sandbox, "cat /proc/1/comm").await.starts_with("rebyte"), "PID 1 is not the agent");
}

#[tokio::test]
async fn a_command_cannot_reach_the_network_when_it_is_disabled() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let probe = format!(
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2); print('connected')\""
    );
    let closed = start("net-off").await;
    let out = run(&*closed.sandbox, &probe).await;
    assert!(!out.status.success(), "connected with the network disabled");
    assert!(out.stderr_str().contains("refused") || out.stderr_str().contains("unreachable"), "{}", out.stderr_str());
    assert!(tokio::time::timeout(Duration::from_millis(200), listener.accept()).await.is_err());
    // Only loopback exists, and it is up (servers inside can still listen).
    let ifaces =
        sh(&*closed.sandbox, "ls /sys/class/net 2>/dev/null || cat /proc/net/dev | tail -n +3 | cut -d: -f1").await;
    assert_eq!(ifaces.split_whitespace().collect::<Vec<_>>(), ["lo"]);

    // Enabled networks do not reach the host's loopback either
    // (`enabled_network` has the control that reaches the internet).
    let open = start_with("net-on", |s| s.network = NetworkPolicy::Enabled).await;
    let out = run(&*open.sandbox, &probe).await;
    assert!(!out.status.success(), "connected to the host's loopback with the network enabled");
    assert!(tokio::time::timeout(Duration::from_millis(200), listener.accept()).await.is_err());
}

#[tokio::test]
async fn the_host_toolchain_is_read_only_and_cannot_be_remounted() {
    let sb = start("ro").await;
    for cmd in ["touch /usr/rebyte-test", "touch /etc/rebyte-test", "mount -o remount,rw /usr", "umount /usr"] {
        let out = run(&*sb.sandbox, cmd).await;
        assert!(!out.status.success(), "{cmd} succeeded");
    }
    assert!(!std::path::Path::new("/usr/rebyte-test").exists());
    // Root inside is the host's uid: kernel knobs it could otherwise write
    // by file permission alone are read-only or hidden.
    for cmd in [
        "echo 1 > /proc/sys/vm/drop_caches",
        "echo h > /proc/sysrq-trigger",
        "head -c1 /proc/kcore | wc -c | grep -qx 1",
    ] {
        let out = run(&*sb.sandbox, cmd).await;
        assert!(!out.status.success(), "{cmd} succeeded");
    }
    // Private /tmp and home are writable.
    sh(&*sb.sandbox, "echo x > /tmp/t && echo y > /root/h && cat /tmp/t /root/h").await;
    assert_eq!(sh(&*sb.sandbox, "grep -c ' /tmp tmpfs' /proc/mounts").await, "1");
}
