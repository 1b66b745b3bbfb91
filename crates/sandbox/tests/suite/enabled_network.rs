//! `enabled` networks reach the internet, not the host: a sandbox cannot
//! connect to the host's loopback, the host end of its veth, the host's own
//! address, another sandbox, link-local or private addresses — servers on a
//! test network namespace routed from the host stand in for a metadata
//! service, a private network and the public internet (the control: NAT
//! works) — unless the operator allows a range. Needs root and `nft`/`ip`
//! (scripts/test installs them): without them these tests fail, they do not
//! skip.

use super::support::{backend, run, sh, start_on};
use sandbox::local::{Ipv4Cidr, LocalSandbox};
use sandbox::{LocalBackend, LocalConfig, NetworkPolicy, Sandbox};
use std::io::Write;
use std::net::{Ipv4Addr, TcpListener};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

const METADATA: Ipv4Addr = Ipv4Addr::new(169, 254, 169, 254);
const PRIVATE: Ipv4Addr = Ipv4Addr::new(172, 31, 254, 1);
const PUBLIC: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 1);
const PORT: u16 = 8080;

fn ip(args: &str) {
    let out = Command::new("/usr/sbin/ip").args(args.split_whitespace()).output().expect("/usr/sbin/ip (iproute2)");
    assert!(out.status.success(), "ip {args}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A network namespace routed from the host holding servers on the three
/// stand-in addresses, each answering `hello from <address>`. One at a
/// time on this machine (the addresses and routes are the host's): a lock
/// file is held while it lives.
struct TestNet {
    name: String,
    link: String,
    _lock: nix::fcntl::Flock<std::fs::File>,
}

impl TestNet {
    fn create() -> TestNet {
        assert!(nix::unistd::geteuid().is_root(), "these tests need root (veth pairs, nftables)");
        let nft = ["/usr/sbin/nft", "/sbin/nft"].iter().any(|p| std::path::Path::new(p).exists());
        assert!(nft, "network access `enabled` needs nftables: apt-get install nftables");
        let lock = std::fs::File::create("/tmp/rebyte-test-netns.lock").unwrap();
        // Blocks until another test process is done with it.
        let lock = nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusive).map_err(|(_, e)| e).unwrap();
        static N: AtomicU32 = AtomicU32::new(0);
        let k = N.fetch_add(1, Ordering::Relaxed);
        let name = format!("rbt-{}-{k}", std::process::id());
        let link = format!("rbt{:x}x{k}", std::process::id() & 0xfffff);
        ip(&format!("netns add {name}"));
        ip(&format!("link add {link} type veth peer name eth0 netns {name}"));
        ip(&format!("addr add 198.18.254.1/30 dev {link}"));
        ip(&format!("link set {link} up"));
        for a in ["198.18.254.2/30", "169.254.169.254/32", "172.31.254.1/32", "203.0.113.1/32"] {
            ip(&format!("-n {name} addr add {a} dev eth0"));
        }
        ip(&format!("-n {name} link set eth0 up"));
        ip(&format!("-n {name} link set lo up"));
        ip(&format!("-n {name} route add default via 198.18.254.1"));
        for a in [METADATA, PRIVATE, PUBLIC] {
            ip(&format!("route add {a}/32 via 198.18.254.2 dev {link}"));
        }
        let _ = std::fs::write(format!("/proc/sys/net/ipv4/conf/{link}/forwarding"), "1");
        // The servers: sockets made in the namespace stay in it.
        let ns = std::fs::File::open(format!("/run/netns/{name}")).unwrap();
        let listeners = std::thread::spawn(move || {
            // On this thread only.
            nix::sched::setns(&ns, nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
            [METADATA, PRIVATE, PUBLIC].map(|a| (a, TcpListener::bind((a, PORT)).unwrap()))
        })
        .join()
        .unwrap();
        for (addr, listener) in listeners {
            serve_hello(listener, addr.to_string());
        }
        TestNet { name, link, _lock: lock }
    }
}

impl Drop for TestNet {
    fn drop(&mut self) {
        let _ = Command::new("/usr/sbin/ip").args(["link", "del", &self.link]).status();
        let _ = Command::new("/usr/sbin/ip").args(["netns", "del", &self.name]).status();
    }
}

/// Answers each connection with `hello from <label>` on a thread of its own.
fn serve_hello(listener: TcpListener, label: String) {
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let _ = writeln!(conn, "hello from {label}");
        }
    });
}

/// What the sandbox got from `addr:port`: the greeting or `FAILED: <why>`.
async fn probe(sb: &LocalSandbox, addr: &str, port: u16) -> String {
    let cmd = format!("timeout 5 bash -c 'exec 3<>/dev/tcp/{addr}/{port} && head -n1 <&3' 2>&1 || echo FAILED");
    run(sb, &cmd).await.stdout_str().trim().to_string()
}

fn enabled(s: &mut sandbox::SandboxSpec) {
    s.network = NetworkPolicy::Enabled;
}

/// The host's address on its default route.
fn host_ip() -> String {
    let probe = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
    probe.connect("192.0.2.1:9").expect("a default route");
    probe.local_addr().unwrap().ip().to_string()
}

#[tokio::test]
async fn an_enabled_network_reaches_the_internet_but_not_the_host_link_local_or_private_ranges() {
    let net = TestNet::create();
    // The host's loopback and every local address: one listener on all of them.
    let host = TcpListener::bind("0.0.0.0:0").unwrap();
    let port = host.local_addr().unwrap().port();
    serve_hello(host, "the host".into());
    let backend = backend();
    let sb = start_on(&backend, "net-nat", enabled).await;

    // The control: a "public" address behind the host answers, through NAT.
    assert_eq!(probe(&sb, &PUBLIC.to_string(), PORT).await, "hello from 203.0.113.1");

    let gateway = sh(&*sb.sandbox, "ip route show default | cut -d' ' -f3").await;
    assert!(gateway.starts_with("10.200."), "the default route goes through the veth: {gateway}");
    for (what, addr, port) in [
        ("the host's loopback", "127.0.0.1".to_string(), port),
        ("the host end of the veth", gateway.clone(), port),
        ("the host's own address", host_ip(), port),
        ("a link-local metadata address", METADATA.to_string(), PORT),
        ("a private address", PRIVATE.to_string(), PORT),
    ] {
        let got = probe(&sb, &addr, port).await;
        assert!(got.contains("FAILED"), "{what} ({addr}:{port}) was reached: {got}");
    }
    // Nor another sandbox, on its address from the same pool.
    let other = start_on(&backend, "net-nat-b", enabled).await;
    let other_ip = sh(&*other.sandbox, "ip -4 -o addr show eth0 | awk '{print $4}' | cut -d/ -f1").await;
    let greeter = "import socket\ns = socket.socket()\ns.bind(('0.0.0.0', 8081))\ns.listen()\nprint('up', flush=True)\n\
                   while True:\n    c, _ = s.accept()\n    c.send(b'hello from the other sandbox\\n')\n    c.close()\n";
    other.sandbox.write_file("/workspace/greeter.py", greeter.as_bytes().to_vec()).await.unwrap();
    sh(&*other.sandbox, "(python3 /workspace/greeter.py > /tmp/up &) ; for i in $(seq 50); do grep -q up /tmp/up && exit; sleep 0.1; done; exit 1").await;
    assert_eq!(probe(&other, "127.0.0.1", 8081).await, "hello from the other sandbox");
    assert!(probe(&sb, &other_ip, 8081).await.contains("FAILED"), "another sandbox was reached at {other_ip}");

    // The server's own connections "from the environment" obey the same rules.
    assert!(sb.connect(&METADATA.to_string(), PORT).await.is_err(), "the host-side dial reached link-local");
    let mut stream = sb.connect(&PUBLIC.to_string(), PORT).await.unwrap();
    let mut got = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut stream, &mut got).await.unwrap();
    assert_eq!(got, "hello from 203.0.113.1\n");

    // DNS: the sandbox's resolver is the forwarder on the host end of its veth.
    assert_eq!(sh(&*sb.sandbox, "awk '/^nameserver/{print $2}' /etc/resolv.conf").await, gateway);
    let resolved = run(&*sb.sandbox, "getent ahostsv4 deb.debian.org | head -n1").await;
    assert!(!resolved.stdout_str().trim().is_empty(), "no DNS answer: {}", resolved.stderr_str());

    // Stopping the sandbox removes its link and its rules.
    let link = host_link_with(&gateway);
    assert!(std::path::Path::new(&format!("/sys/class/net/{link}")).exists());
    let chain = format!("sb{}", link.trim_start_matches("rbv"));
    let chain_listed = || {
        let listed = Command::new("/usr/sbin/nft").args(["list", "table", "inet", "rebyte"]).output().unwrap();
        String::from_utf8_lossy(&listed.stdout).contains(&format!("chain {chain} {{"))
    };
    assert!(chain_listed(), "{chain} while the sandbox runs");
    sb.sandbox.destroy().await.unwrap();
    drop(sb);
    let gone = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while (std::path::Path::new(&format!("/sys/class/net/{link}")).exists() || chain_listed())
        && std::time::Instant::now() < gone
    {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(!std::path::Path::new(&format!("/sys/class/net/{link}")).exists(), "{link} is left");
    assert!(!chain_listed(), "{chain} is left");
    drop(net);
}

/// The host link holding `addr`.
fn host_link_with(addr: &str) -> String {
    let out = Command::new("/usr/sbin/ip").args(["-o", "-4", "addr", "show", "to", addr]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).split_whitespace().nth(1).unwrap().to_string()
}

#[tokio::test]
async fn the_operators_allowed_ranges_are_reached_and_nothing_else() {
    let _net = TestNet::create();
    let mut config = LocalConfig::with_agent(env!("CARGO_BIN_EXE_rebyte-sandbox-agent"), vec![]);
    config.network.allow = vec!["172.31.254.0/24".parse::<Ipv4Cidr>().unwrap()];
    let backend = LocalBackend::new(config);
    let sb = start_on(&backend, "net-allow", enabled).await;
    assert_eq!(probe(&sb, &PRIVATE.to_string(), PORT).await, "hello from 172.31.254.1");
    assert!(probe(&sb, &METADATA.to_string(), PORT).await.contains("FAILED"));
    // A warm agent (the pool is per backend) is networked the same way.
    let warm = start_on(&backend, "net-allow-warm", enabled).await;
    assert_eq!(probe(&warm, &PUBLIC.to_string(), PORT).await, "hello from 203.0.113.1");
    // Paused and resumed, it is still networked.
    warm.sandbox.pause().await.unwrap();
    warm.sandbox.resume().await.unwrap();
    assert_eq!(probe(&warm, &PUBLIC.to_string(), PORT).await, "hello from 203.0.113.1");
}

#[test]
fn rules_left_by_a_killed_server_are_removed() {
    let n = 4_000_000 + std::process::id() % 100_000;
    let plant = format!(
        "add table inet rebyte\nadd map inet rebyte sandboxes {{ type ifname : verdict; }}\n\
         add chain inet rebyte sb{n}\nadd element inet rebyte sandboxes {{ \"rbv{n}\" : jump sb{n} }}\n"
    );
    let mut nft = Command::new("/usr/sbin/nft")
        .args(["-f", "-"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("nft (nftables) is installed");
    nft.stdin.take().unwrap().write_all(plant.as_bytes()).unwrap();
    assert!(nft.wait().unwrap().success());
    let listed = || {
        let out = Command::new("/usr/sbin/nft").args(["list", "table", "inet", "rebyte"]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(listed().contains(&format!("chain sb{n} {{")));
    // Another test's backend start sweeps too and may remove the planted
    // chain first: what matters is that it is gone after this sweep.
    sandbox::local::remove_stale_rules();
    let after = listed();
    assert!(!after.contains(&format!("sb{n}")), "{after}");
}
