//! The host side of an `enabled` sandbox's network: a veth pair (`rbv<n>` on
//! the host, `eth0` in the sandbox's network namespace) with a /30 of the
//! operator's pool, IPv4 forwarding, and host-side nftables rules in the
//! table `inet rebyte` that the sandboxed processes cannot touch:
//!
//! - input: from a sandbox only DNS to its own veth address (the forwarder
//!   of `local::dns`); the host's loopback and every other local address
//!   are refused;
//! - forward: per sandbox a chain `sb<n>` (through the verdict map
//!   `sandboxes`): its own source address only, no IPv6, never the pool
//!   (other sandboxes), then the operator's allowed ranges, then the
//!   blocked ranges ([`BLOCKED`]: private, link-local, CGNAT, `0/8`,
//!   loopback, multicast and reserved), then the internet; nothing may open
//!   a connection towards a sandbox;
//! - postrouting: masquerade of the pools' sources.
//!
//! The veth dies with the sandbox's network namespace; [`Veth`]'s drop
//! removes the link and the sandbox's chain, and the first sandbox of a
//! process removes chains whose link is gone (a killed server's).
//! Everything is done with `ip` and `nft` (a few milliseconds a sandbox).

use crate::error::{Error, Result};
use rand::Rng;
use std::collections::HashSet;
use std::io::Write;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::str::FromStr;
use std::sync::Mutex;

/// What an `enabled` sandbox never reaches unless the operator allows it.
pub const BLOCKED: &[&str] = &[
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.168.0.0/16",
    "224.0.0.0/3",
];

const TABLE: &str = "inet rebyte";
const REJECT: &str = "reject with icmpx type admin-prohibited";

/// An IPv4 range, `a.b.c.d/len`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Cidr {
    pub addr: Ipv4Addr,
    pub prefix: u8,
}

impl Ipv4Cidr {
    fn size(self) -> u64 {
        1u64 << (32 - u32::from(self.prefix))
    }
}

impl FromStr for Ipv4Cidr {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let (addr, prefix) = s.split_once('/').unwrap_or((s, "32"));
        let addr: Ipv4Addr = addr.parse().map_err(|_| format!("{s:?} is not an IPv4 range (a.b.c.d/len)"))?;
        let prefix: u8 = prefix.parse().ok().filter(|p| *p <= 32).ok_or_else(|| format!("{s:?}: bad prefix length"))?;
        let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
        if u32::from(addr) & !mask != 0 {
            return Err(format!("{s:?} has bits set past its prefix length"));
        }
        Ok(Ipv4Cidr { addr, prefix })
    }
}

impl std::fmt::Display for Ipv4Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// How `enabled` sandboxes are networked (`LocalConfig::network`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkConfig {
    /// Where each sandbox's /30 comes from (default `10.200.0.0/16`).
    pub pool: Ipv4Cidr,
    /// Ranges of [`BLOCKED`] the sandboxes may reach anyway (never the
    /// host's own addresses, nor the pool).
    pub allow: Vec<Ipv4Cidr>,
}

impl Default for NetworkConfig {
    fn default() -> Self {
        NetworkConfig { pool: Ipv4Cidr { addr: Ipv4Addr::new(10, 200, 0, 0), prefix: 16 }, allow: Vec::new() }
    }
}

/// Indexes this process holds (a link of another process is seen in sysfs).
static HELD: Mutex<Option<HashSet<u32>>> = Mutex::new(None);
/// Whether the table exists and left-overs were removed, in this process.
static HOST_READY: Mutex<bool> = Mutex::new(false);

fn held() -> std::sync::MutexGuard<'static, Option<HashSet<u32>>> {
    HELD.lock().unwrap_or_else(|p| p.into_inner())
}

/// One sandbox's veth pair and rules, removed on drop.
#[derive(Debug)]
pub(crate) struct Veth {
    index: u32,
    ifindex: Option<String>,
    pub host: Ipv4Addr,
    pub sandbox: Ipv4Addr,
}

impl Veth {
    pub fn name(&self) -> String {
        format!("rbv{}", self.index)
    }

    /// Creates the pair with `eth0` in the network namespace of `pid` (an
    /// agent still waiting for its init frame) and installs its rules.
    pub fn create(config: &NetworkConfig, pid: i32) -> Result<Veth> {
        prepare_host()?;
        if config.pool.prefix > 30 {
            return Err(Error::Create(format!("the sandbox address pool {} is smaller than a /30", config.pool)));
        }
        let slots = (config.pool.size() / 4).min(u64::from(u32::MAX)) as u32;
        let start: u32 = rand::rng().random_range(0..slots);
        for attempt in 0..slots {
            let index = (start + attempt) % slots;
            if link_exists(index) || !held().get_or_insert_with(HashSet::new).insert(index) {
                continue;
            }
            let base = u32::from(config.pool.addr) + index * 4;
            let mut veth =
                Veth { index, ifindex: None, host: Ipv4Addr::from(base + 1), sandbox: Ipv4Addr::from(base + 2) };
            let name = veth.name();
            let script = format!(
                "link add {name} type veth peer name eth0 netns {pid}\naddr add {}/30 dev {name}\nlink set {name} up\n",
                veth.host
            );
            match run("ip", &["-batch", "-"], &script) {
                Ok(()) => {}
                Err(e) if e.contains("File exists") => {
                    // Another process took it between the check and the add.
                    veth.index = u32::MAX;
                    held().get_or_insert_with(HashSet::new).remove(&index);
                    continue;
                }
                Err(e) => {
                    held().get_or_insert_with(HashSet::new).remove(&index);
                    return Err(Error::Create(format!("create the sandbox's network link: {e}")));
                }
            }
            veth.ifindex = std::fs::read_to_string(sys_net(&name).join("ifindex")).ok();
            // Forwarding for this link (the global switch is on, see prepare_host); no IPv6 on the host side.
            write_sysctl(&format!("net/ipv4/conf/{name}/forwarding"), "1")?;
            let _ = write_sysctl(&format!("net/ipv6/conf/{name}/disable_ipv6"), "1");
            run("nft", &["-f", "-"], &veth.rules(config))
                .map_err(|e| Error::Create(format!("install the sandbox's network rules: {e}")))?;
            return Ok(veth);
        }
        Err(Error::Create(format!("no free sandbox address in the pool {}", config.pool)))
    }

    /// The sandbox's chain and map entry (idempotent: a left-over of the
    /// same index is replaced).
    fn rules(&self, config: &NetworkConfig) -> String {
        let (n, pool) = (self.index, config.pool);
        let mut s = format!(
            "add element {TABLE} pools {{ {pool} }}\nadd chain {TABLE} sb{n}\nflush chain {TABLE} sb{n}\n\
             add rule {TABLE} sb{n} ip saddr != {} drop\n\
             add rule {TABLE} sb{n} meta nfproto ipv6 {REJECT}\n\
             add rule {TABLE} sb{n} ip daddr {pool} {REJECT}\n",
            self.sandbox
        );
        if !config.allow.is_empty() {
            let allow: Vec<String> = config.allow.iter().map(|c| c.to_string()).collect();
            s += &format!("add rule {TABLE} sb{n} ip daddr {{ {} }} accept\n", allow.join(", "));
        }
        s += &format!(
            "add rule {TABLE} sb{n} ip daddr {{ {} }} {REJECT}\nadd rule {TABLE} sb{n} accept\n\
             add element {TABLE} sandboxes {{ \"rbv{n}\" : jump sb{n} }}\n",
            BLOCKED.join(", ")
        );
        s
    }
}

impl Drop for Veth {
    fn drop(&mut self) {
        if self.index == u32::MAX {
            return;
        }
        let (index, ifindex) = (self.index, self.ifindex.take());
        // Tens of milliseconds (a veth's removal waits for the kernel): not
        // on the caller's thread, which may be an async worker.
        std::thread::spawn(move || {
            let name = format!("rbv{index}");
            let now = std::fs::read_to_string(sys_net(&name).join("ifindex")).ok();
            // A link of that name that is not ours belongs to a newer sandbox.
            if now.is_none() || now == ifindex {
                let _ = run("nft", &["-f", "-"], &remove_script(index));
                if now.is_some() {
                    let _ = run("ip", &["link", "del", &name], "");
                }
            }
            held().get_or_insert_with(HashSet::new).remove(&index);
        });
    }
}

/// Removes one sandbox's chain and map entry, whether or not they exist.
fn remove_script(n: u32) -> String {
    format!(
        "add chain {TABLE} sb{n}\nadd element {TABLE} sandboxes {{ \"rbv{n}\" : jump sb{n} }}\n\
         delete element {TABLE} sandboxes {{ \"rbv{n}\" }}\ndelete chain {TABLE} sb{n}\n"
    )
}

/// The table, its base chains and IPv4 forwarding, once per process; then
/// the chains of sandboxes whose link is gone are removed.
pub(crate) fn prepare_host() -> Result<()> {
    let mut ready = HOST_READY.lock().unwrap_or_else(|p| p.into_inner());
    if *ready {
        return Ok(());
    }
    let t = TABLE;
    let base = format!(
        "add table {t}\nadd map {t} sandboxes {{ type ifname : verdict; }}\n\
         add set {t} pools {{ type ipv4_addr; flags interval; auto-merge; }}\n\
         add chain {t} input {{ type filter hook input priority filter - 5; policy accept; }}\n\
         add chain {t} forward {{ type filter hook forward priority filter - 5; policy accept; }}\n\
         add chain {t} postrouting {{ type nat hook postrouting priority srcnat; policy accept; }}\n\
         flush chain {t} input\nflush chain {t} forward\nflush chain {t} postrouting\n\
         add rule {t} input iifname \"rbv*\" meta l4proto {{ udp, tcp }} th dport 53 fib daddr . iif type local accept\n\
         add rule {t} input iifname \"rbv*\" {REJECT}\n\
         add rule {t} forward iifname \"rbv*\" iifname vmap @sandboxes\n\
         add rule {t} forward iifname \"rbv*\" {REJECT}\n\
         add rule {t} forward oifname \"rbv*\" ct state established,related accept\n\
         add rule {t} forward oifname \"rbv*\" {REJECT}\n\
         add rule {t} postrouting oifname != \"rbv*\" ip saddr @pools masquerade\n"
    );
    run("nft", &["-f", "-"], &base).map_err(|e| {
        Error::Create(format!(
            "network access `enabled` needs the server to run as root with nftables installed (`nft`): {e}"
        ))
    })?;
    if std::fs::read_to_string("/proc/sys/net/ipv4/ip_forward").map(|v| v.trim() == "0").unwrap_or(true) {
        write_sysctl("net/ipv4/ip_forward", "1")?;
        tracing::warn!("IPv4 forwarding turned on (net.ipv4.ip_forward=1) for sandboxes with network access");
    }
    remove_stale_rules();
    *ready = true;
    Ok(())
}

/// Removes the chains (and map entries) of sandboxes whose link is gone — a
/// killed server's — and says how many. A live sandbox's link exists before
/// its chain, so it is never taken for one.
pub fn remove_stale_rules() -> usize {
    let Ok(chains) = output("nft", &["list", "table", "inet", "rebyte"]) else { return 0 };
    stale_chains(&chains).into_iter().filter(|n| run("nft", &["-f", "-"], &remove_script(*n)).is_ok()).count()
}

/// `sb<n>` chains in `nft list table` output whose link `rbv<n>` is gone.
fn stale_chains(listing: &str) -> Vec<u32> {
    listing
        .lines()
        .filter_map(|l| l.trim().strip_prefix("chain sb")?.strip_suffix(" {")?.parse().ok())
        .filter(|n| !link_exists(*n))
        .collect()
}

fn sys_net(name: &str) -> PathBuf {
    Path::new("/sys/class/net").join(name)
}

fn link_exists(index: u32) -> bool {
    sys_net(&format!("rbv{index}")).exists()
}

fn write_sysctl(key: &str, value: &str) -> Result<()> {
    std::fs::write(Path::new("/proc/sys").join(key), value)
        .map_err(|e| Error::io(format!("set {}", key.replace('/', ".")), e))
}

/// `ip` and `nft` live in `/usr/sbin` on Debian, often not on a user's PATH.
fn program(name: &str) -> PathBuf {
    ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.exists())
        .unwrap_or_else(|| PathBuf::from(name))
}

/// Runs `name args` with `stdin`; the error is its stderr.
fn run(name: &str, args: &[&str], stdin: &str) -> std::result::Result<(), String> {
    let mut child = Command::new(program(name))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{name}: {e}"))?;
    if let Some(mut input) = child.stdin.take() {
        input.write_all(stdin.as_bytes()).map_err(|e| format!("{name}: {e}"))?;
    }
    let out = child.wait_with_output().map_err(|e| format!("{name}: {e}"))?;
    if out.status.success() { Ok(()) } else { Err(format!("{name}: {}", String::from_utf8_lossy(&out.stderr).trim())) }
}

fn output(name: &str, args: &[&str]) -> std::result::Result<String, String> {
    let out = Command::new(program(name)).args(args).output().map_err(|e| format!("{name}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!("{name}: {}", String::from_utf8_lossy(&out.stderr).trim()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_and_refuse_host_bits() {
        let c: Ipv4Cidr = "172.31.254.0/24".parse().unwrap();
        assert_eq!((c.addr, c.prefix, c.to_string()), (Ipv4Addr::new(172, 31, 254, 0), 24, "172.31.254.0/24".into()));
        assert_eq!("10.1.2.3".parse::<Ipv4Cidr>().unwrap().prefix, 32);
        assert!("10.1.2.3/24".parse::<Ipv4Cidr>().is_err());
        assert!("10.0.0.0/33".parse::<Ipv4Cidr>().is_err());
        assert!("fd00::/8".parse::<Ipv4Cidr>().is_err());
    }

    #[test]
    fn rules_block_the_pool_before_the_allowed_ranges() {
        let config = NetworkConfig { allow: vec!["10.1.0.0/16".parse().unwrap()], ..Default::default() };
        let veth =
            Veth { index: u32::MAX, ifindex: None, host: [10, 200, 0, 1].into(), sandbox: [10, 200, 0, 2].into() };
        let rules = veth.rules(&config);
        let pool = rules.find("ip daddr 10.200.0.0/16").unwrap();
        let allow = rules.find("10.1.0.0/16 } accept").unwrap();
        let blocked = rules.find("169.254.0.0/16").unwrap();
        assert!(pool < allow && allow < blocked, "{rules}");
        assert!(rules.contains("ip saddr != 10.200.0.2 drop"));
    }

    #[test]
    fn stale_chains_are_those_without_a_link() {
        let listing = "table inet rebyte {\n\tchain input {\n\t}\n\tchain sb4000000 {\n\t}\n\tchain sbx {\n\t}\n}\n";
        assert_eq!(stale_chains(listing), vec![4000000]);
    }
}
