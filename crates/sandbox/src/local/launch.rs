//! Starting one local sandbox: the init configuration (binds, masks, env,
//! rlimits), the cgroup, the clone into new namespaces with the uid/gid
//! maps written before the agent runs, and the handshake.

use super::LocalConfig;
use super::cgroup::{CgroupSupport, Enforced};
use super::network::Network;
use super::pool::{Pending, Pool};
use super::sandbox::{AgentProcess, LocalSandbox};
use crate::api::{NetworkPolicy, Rlimit, SandboxSpec, WORKSPACE};
use crate::client::Connection;
use crate::error::{Error, Result};
use crate::wire::{BindSpec, Frame, InitConfig, Kind};
use nix::sys::socket::{AddressFamily, SockFlag, SockType, socketpair};
use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::fd::AsFd;
use std::path::Path;
use std::sync::Arc;

const DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"];

fn valid_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn path_str(p: &Path) -> Result<String> {
    p.to_str().map(str::to_string).ok_or_else(|| Error::Create(format!("path is not UTF-8: {}", p.display())))
}

/// The agent's init configuration for `spec` on this host.
pub(super) fn init_config(config: &LocalConfig, spec: &SandboxSpec, enforced: Enforced) -> Result<InitConfig> {
    let mut binds = Vec::new();
    let mut overlays = Vec::new();
    match (spec.workspace_lowers.as_slice(), &spec.workspace_work) {
        ([], _) => binds.push(BindSpec {
            source: path_str(&spec.workspace)?,
            target: WORKSPACE.into(),
            writable: true,
            device: false,
        }),
        (lowers, Some(work)) => overlays.push(crate::layers::overlay(lowers, &spec.workspace, work, WORKSPACE)?),
        (_, None) => return Err(Error::Create("workspace layers need a work directory".into())),
    }
    match (&spec.home, spec.home_lowers.as_slice(), &spec.home_work) {
        (Some(home), [], _) => {
            binds.push(BindSpec { source: path_str(home)?, target: "/root".into(), writable: true, device: false })
        }
        (Some(home), lowers, Some(work)) => overlays.push(crate::layers::overlay(lowers, home, work, "/root")?),
        (None, [], _) => {}
        _ => return Err(Error::Create("home layers need a home and a work directory".into())),
    }
    // After the workspace, which holds their mount points.
    for (source, target) in &spec.read_only {
        if !target.starts_with(&format!("{WORKSPACE}/")) || target.split('/').any(|c| c == "..") {
            return Err(Error::Create(format!("a read-only bind must be inside {WORKSPACE}: {target}")));
        }
        binds.push(BindSpec { source: path_str(source)?, target: target.clone(), writable: false, device: false });
    }
    if let Some(dir) = &spec.writable_system {
        let (var, layers) = super::system::layout(dir, &config.toolchain)?;
        binds.push(var);
        overlays.extend(layers);
    }
    let overlaid = |p: &str| overlays.iter().any(|o| o.target == p);
    for dir in &config.toolchain.dirs {
        let p = path_str(dir)?;
        if !overlaid(&p) {
            binds.push(BindSpec { source: p.clone(), target: p, writable: false, device: false });
        }
    }
    for dev in DEVICES.iter().filter(|d| Path::new(d).exists()) {
        binds.push(BindSpec { source: dev.to_string(), target: dev.to_string(), writable: true, device: true });
    }
    let mut env: BTreeMap<String, String> = [
        ("PATH", config.toolchain.path.as_str()),
        ("HOME", "/root"),
        ("USER", "root"),
        ("LOGNAME", "root"),
        ("SHELL", "/bin/sh"),
        ("LANG", "C.UTF-8"),
        ("TMPDIR", "/tmp"),
        ("NPM_CONFIG_PREFIX", "/root/.npm-global"),
        ("NPM_CONFIG_UPDATE_NOTIFIER", "false"),
        ("PIP_DISABLE_PIP_VERSION_CHECK", "1"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    env.extend(config.toolchain.env.iter().cloned());
    env.extend(spec.env.clone());
    let limits = &spec.limits;
    let mut rlimits = vec![(Rlimit::Core, 0)];
    if let Some(n) = limits.max_file_bytes {
        rlimits.push((Rlimit::Fsize, n));
    }
    if let (false, Some(n)) = (enforced.memory, limits.memory_bytes) {
        rlimits.push((Rlimit::Data, n));
    }
    if let (false, Some(n)) = (enforced.pids, limits.max_processes) {
        rlimits.push((Rlimit::Nproc, n));
    }
    let masks = config.toolchain.masks.iter().map(|m| path_str(m)).collect::<Result<Vec<_>>>()?;
    let symlinks = config
        .toolchain
        .symlinks
        .iter()
        .map(|(at, to)| Ok((path_str(at)?, path_str(to)?)))
        .collect::<Result<Vec<_>>>()?;
    Ok(InitConfig {
        binds,
        overlays,
        masks,
        symlinks,
        hostname: "rebyte".into(),
        loopback: spec.network.private_namespace(),
        tmp_bytes: limits.tmp_bytes,
        tmpfs_home: spec.home.is_none(),
        rlimits,
        env,
        egress: None,
        dial_socket: None,
        command_cgroup: None,
        command_thread: false,
        veth: None,
    })
}

/// Root inside is the server's uid and gid outside.
fn write_id_maps(pid: i32) -> std::io::Result<()> {
    let uid = nix::unistd::geteuid().as_raw();
    let gid = nix::unistd::getegid().as_raw();
    std::fs::write(format!("/proc/{pid}/uid_map"), format!("0 {uid} 1\n"))?;
    if uid != 0 {
        // An unprivileged parent may only map its gid after denying setgroups.
        std::fs::write(format!("/proc/{pid}/setgroups"), "deny")?;
    }
    std::fs::write(format!("/proc/{pid}/gid_map"), format!("0 {gid} 1\n"))
}

/// Clones a new agent into fresh namespaces; it waits for its init frame.
pub(super) fn spawn_agent(config: &LocalConfig, network: NetworkPolicy) -> Result<Pending> {
    let mut argv = vec![
        CString::new(config.agent_program.as_os_str().as_encoded_bytes())
            .map_err(|_| Error::Create("agent path contains NUL".into()))?,
    ];
    for a in &config.agent_args {
        argv.push(CString::new(a.as_bytes()).map_err(|_| Error::Create("agent argument contains NUL".into()))?);
    }
    let envp: Vec<CString> = Vec::new();
    let mut flags =
        libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWIPC | libc::CLONE_NEWUTS;
    if network.private_namespace() {
        flags |= libc::CLONE_NEWNET;
    }
    let (host_end, agent_end) =
        socketpair(AddressFamily::Unix, SockType::Stream, None, SockFlag::SOCK_CLOEXEC).map_err(Error::from)?;
    let spawned = crate::sys::spawn_namespaced(flags as u64, &argv[0], &argv, &envp, agent_end.as_fd(), write_id_maps)
        .map_err(|e| Error::Create(format!("start the agent {}: {e}", config.agent_program.display())))?;
    Ok(Pending::new(spawned, std::os::unix::net::UnixStream::from(host_end)))
}

pub(super) async fn launch(
    config: &Arc<LocalConfig>,
    cgroups: &CgroupSupport,
    pool: &Arc<Pool>,
    spec: SandboxSpec,
) -> Result<LocalSandbox> {
    if !valid_id(&spec.id) {
        return Err(Error::Create(format!("invalid sandbox id {:?}", spec.id)));
    }
    std::fs::create_dir_all(&spec.workspace).map_err(|e| Error::io("create the workspace directory", e))?;
    if let Some(home) = &spec.home {
        std::fs::create_dir_all(home).map_err(|e| Error::io("create the home directory", e))?;
    }
    let began = std::time::Instant::now();
    // Agents differ only in whether they have a network namespace.
    let clone_as = if spec.network.private_namespace() { NetworkPolicy::Disabled } else { NetworkPolicy::Enabled };
    let (mut pending, warm) = match pool.take(clone_as) {
        Some(p) => (p, true),
        None => (spawn_agent(config, clone_as)?, false),
    };
    let took = began.elapsed();
    // From here on, dropping `pending` kills the agent and removes its cgroup.
    let enforced = pending.claim_cgroup(cgroups, &spec.id, &spec.limits)?;
    let claimed = began.elapsed();
    let mut init = init_config(config, &spec, enforced)?;
    if let Some(cg) = pending.cgroup() {
        init.command_cgroup = cg.command_procs().map(|p| p.display().to_string());
        init.command_thread = cg.thread_placed();
    }
    let mut network = Network::prepare(&spec, &mut init)?;
    // Network access enabled: the veth goes into the agent's namespace before it reads `init`.
    if let Some(n) = network.as_mut() {
        n.attach(&config.network, pending.pid(), &mut init).await?;
    }
    let init = Frame::json(Kind::Init, 0, &init, Vec::new())?;
    let prepared = began.elapsed();
    let (spawned, stream, cgroup) =
        pending.into_parts().ok_or_else(|| Error::Create("the agent was already used".into()))?;
    let stream = stream
        .set_nonblocking(true)
        .and_then(|()| tokio::net::UnixStream::from_std(stream))
        .map_err(|e| Error::io("agent socket", e));
    let handshake = match stream {
        Ok(stream) => {
            let (r, w) = stream.into_split();
            Connection::handshake(r, w, Some(init), config.ready_timeout).await
        }
        Err(e) => Err(e),
    };
    let process = AgentProcess::watch(spawned, cgroup);
    // Refilled only now, so the clone does not compete with this start.
    pool.refill(config, clone_as);
    match handshake {
        Ok((conn, hello)) => {
            let setup = std::time::Duration::from_micros(hello.setup_us);
            tracing::debug!(
                sandbox = %spec.id,
                warm,
                take_us = took.as_micros() as u64,
                cgroup_us = (claimed - took).as_micros() as u64,
                init_us = (prepared - claimed).as_micros() as u64,
                handshake_us = (began.elapsed() - prepared).as_micros() as u64,
                agent_setup_us = hello.setup_us,
                "sandbox start phases"
            );
            Ok(LocalSandbox::new(spec.id, conn, process, spec.limits, enforced, setup, network).with_helper(config))
        }
        Err(e) => {
            process.kill_and_wait().await;
            match process.exec_error() {
                Some(exec) => Err(Error::Create(format!("exec {}: {exec}", config.agent_program.display()))),
                None => Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_safe_path_components() {
        assert!(valid_id("env_01H-abc"));
        assert!(!valid_id("../x"));
        assert!(!valid_id(""));
        assert!(!valid_id(&"a".repeat(65)));
    }

    #[test]
    fn init_config_binds_workspace_first_and_toolchain_read_only() {
        let config = LocalConfig::with_agent("/bin/true", vec![]);
        let spec = SandboxSpec::new("t1", "/srv/env/t1");
        let init = init_config(&config, &spec, Enforced { memory: true, pids: false, cpu: false }).unwrap();
        assert_eq!(init.binds[0].target, "/workspace");
        assert!(init.binds[0].writable);
        assert!(init.binds.iter().filter(|b| !b.device && b.target != "/workspace").all(|b| !b.writable));
        assert!(init.loopback && init.tmpfs_home);
        assert!(init.rlimits.contains(&(Rlimit::Nproc, 1024)));
        assert!(!init.rlimits.iter().any(|(r, _)| *r == Rlimit::Data));
        assert_eq!(init.env["HOME"], "/root");
    }

    #[test]
    fn read_only_binds_come_after_the_workspace_and_stay_inside_it() {
        let config = LocalConfig::with_agent("/bin/true", vec![]);
        let mut spec = SandboxSpec::new("t3", "/srv/env/t3/workspace");
        spec.read_only = vec![("/srv/env/t3/skills".into(), "/workspace/.agents/skills".into())];
        let init = init_config(&config, &spec, Enforced { memory: true, pids: false, cpu: false }).unwrap();
        let at = init.binds.iter().position(|b| b.target == "/workspace/.agents/skills").unwrap();
        assert!(at > 0 && !init.binds[at].writable);
        assert_eq!(init.binds[at].source, "/srv/env/t3/skills");
        for outside in ["/etc/skills", "/workspace/../etc"] {
            spec.read_only = vec![("/srv/env/t3/skills".into(), outside.into())];
            assert!(init_config(&config, &spec, Enforced { memory: true, pids: false, cpu: false }).is_err());
        }
    }

    #[test]
    fn a_writable_system_overlays_the_system_dirs_and_binds_a_var_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let config = LocalConfig::with_agent("/bin/true", vec![]);
        let mut spec = SandboxSpec::new("t2", dir.path().join("workspace"));
        spec.writable_system = Some(dir.path().join("system"));
        let init = init_config(&config, &spec, Enforced { memory: true, pids: true, cpu: false });
        if !nix::unistd::geteuid().is_root() {
            assert!(init.unwrap_err().to_string().contains("root"));
            return;
        }
        let init = init.unwrap();
        let usr = init.overlays.iter().find(|o| o.target == "/usr").unwrap();
        assert_eq!(usr.lower, "/usr");
        assert!(usr.upper.starts_with(dir.path().join("system/upper").to_str().unwrap()));
        assert!(!init.binds.iter().any(|b| b.target == "/usr"), "/usr is overlaid, not bound");
        let var = init.binds.iter().find(|b| b.target == "/var").unwrap();
        assert!(var.writable);
        assert!(dir.path().join("system/var/tmp").is_dir());
        let plain =
            init_config(&config, &SandboxSpec::new("t3", "/srv/x"), Enforced { memory: true, pids: true, cpu: false });
        assert!(plain.unwrap().overlays.is_empty());
    }
}
