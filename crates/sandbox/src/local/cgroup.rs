//! Per-sandbox cgroups: detection of what the host offers (cgroup v2 or the
//! v1 `memory`, `pids`, `cpu` and `freezer` hierarchies, each on its own),
//! limits, freezing for pause/resume, and cleanup. With the `cpu` controller
//! each sandbox is one scheduling group (its processes share one fair share,
//! however many there are), optionally with a quota. Everything is best effort: a
//! controller the host does not delegate is reported and skipped.

use crate::api::Limits;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

const GROUP: &str = "rebyte-sandboxes";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    V1,
    V2,
}

/// Where sandboxes of one controller are created.
#[derive(Debug, Clone)]
struct Hierarchy {
    version: Version,
    /// `<mount>/<our cgroup>/rebyte-sandboxes`
    parent: PathBuf,
}

/// What the host offers, detected once per backend.
#[derive(Debug, Clone, Default)]
pub struct CgroupSupport {
    memory: Option<Hierarchy>,
    pids: Option<Hierarchy>,
    cpu: Option<Hierarchy>,
    freezer: Option<Hierarchy>,
    /// Why something is missing, for the backend's report.
    pub notes: Vec<String>,
}

impl CgroupSupport {
    pub fn has_memory(&self) -> bool {
        self.memory.is_some()
    }

    pub fn has_pids(&self) -> bool {
        self.pids.is_some()
    }

    pub fn has_cpu(&self) -> bool {
        self.cpu.is_some()
    }

    pub fn has_freezer(&self) -> bool {
        self.freezer.is_some()
    }

    /// No cgroups at all (configuration, or tests of the fallbacks).
    pub fn disabled() -> CgroupSupport {
        CgroupSupport { notes: vec!["cgroups disabled by configuration".into()], ..Default::default() }
    }

    /// Reads `/proc/self/mountinfo` and `/proc/self/cgroup`.
    pub fn detect() -> CgroupSupport {
        let mut s = CgroupSupport::default();
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let mut v2_mount = None;
        for controller in ["memory", "pids", "cpu", "freezer"] {
            let found = v1_mount(&mounts, controller).and_then(|(root, point)| {
                let own_path = own_path(&own, |ctrls| ctrls.split(',').any(|c| c == controller))?;
                Some(Hierarchy { version: Version::V1, parent: join(&point, &root, &own_path).join(GROUP) })
            });
            let slot = match controller {
                "memory" => &mut s.memory,
                "pids" => &mut s.pids,
                "cpu" => &mut s.cpu,
                _ => &mut s.freezer,
            };
            *slot = found;
        }
        if s.memory.is_none() || s.pids.is_none() || s.cpu.is_none() || s.freezer.is_none() {
            v2_mount = v2(&mounts, &own, &mut s.notes);
        }
        if let Some((base, controllers)) = v2_mount {
            let h = Hierarchy { version: Version::V2, parent: base.join(GROUP) };
            if s.freezer.is_none() {
                s.freezer = Some(h.clone());
            }
            if s.memory.is_none() && controllers.iter().any(|c| c == "memory") {
                s.memory = Some(h.clone());
            }
            if s.pids.is_none() && controllers.iter().any(|c| c == "pids") {
                s.pids = Some(h.clone());
            }
            if s.cpu.is_none() && controllers.iter().any(|c| c == "cpu") {
                s.cpu = Some(h);
            }
        }
        let slots =
            [("memory", &mut s.memory), ("pids", &mut s.pids), ("cpu", &mut s.cpu), ("freezer", &mut s.freezer)];
        for (name, slot) in slots {
            if let Some(h) = slot {
                if let Err(e) = std::fs::create_dir_all(&h.parent) {
                    s.notes.push(format!("{name}: cannot create {}: {e}", h.parent.display()));
                    *slot = None;
                }
            } else {
                s.notes.push(format!("{name}: no cgroup controller available"));
            }
        }
        s.sweep_stale();
        s
    }

    /// Removes sandbox cgroups left behind by a server that died: empty
    /// ones (rmdir refuses a cgroup with processes) older than a minute.
    fn sweep_stale(&self) {
        let minute_ago = std::time::SystemTime::now() - Duration::from_secs(60);
        for h in [&self.memory, &self.pids, &self.cpu, &self.freezer].into_iter().flatten() {
            let Ok(entries) = std::fs::read_dir(&h.parent) else { continue };
            for entry in entries.flatten() {
                let stale = entry.metadata().and_then(|m| m.modified()).is_ok_and(|t| t < minute_ago);
                if stale && entry.file_type().is_ok_and(|t| t.is_dir()) {
                    let _ = std::fs::remove_dir(entry.path().join("commands"));
                    let _ = std::fs::remove_dir(entry.path());
                }
            }
        }
    }
}

/// `(mount root, mount point)` of the v1 hierarchy carrying `controller`.
fn v1_mount(mountinfo: &str, controller: &str) -> Option<(String, PathBuf)> {
    mountinfo.lines().find_map(|line| {
        let (pre, post) = line.split_once(" - ")?;
        let mut post = post.split_whitespace();
        if post.next()? != "cgroup" {
            return None;
        }
        let opts = post.nth(1)?;
        if !opts.split(',').any(|o| o == controller) {
            return None;
        }
        let f: Vec<&str> = pre.split_whitespace().collect();
        Some((f.get(3)?.to_string(), PathBuf::from(f.get(4)?)))
    })
}

/// Our cgroup path in the hierarchy whose controller list matches.
fn own_path(own: &str, matches: impl Fn(&str) -> bool) -> Option<String> {
    own.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let _id = parts.next()?;
        let ctrls = parts.next()?;
        let path = parts.next()?;
        matches(ctrls).then(|| path.to_string())
    })
}

fn join(point: &Path, root: &str, own: &str) -> PathBuf {
    let rel = own.strip_prefix(root).unwrap_or(own).trim_start_matches('/');
    if rel.is_empty() { point.to_path_buf() } else { point.join(rel) }
}

/// The unified hierarchy: our cgroup's directory and the controllers that
/// its children can use (enabling them where the host allows).
fn v2(mountinfo: &str, own: &str, notes: &mut Vec<String>) -> Option<(PathBuf, Vec<String>)> {
    let (root, point) = mountinfo.lines().find_map(|line| {
        let (pre, post) = line.split_once(" - ")?;
        if post.split_whitespace().next()? != "cgroup2" {
            return None;
        }
        let f: Vec<&str> = pre.split_whitespace().collect();
        Some((f.get(3)?.to_string(), PathBuf::from(f.get(4)?)))
    })?;
    let own_path = own_path(own, |ctrls| ctrls.is_empty())?;
    let base = join(&point, &root, &own_path);
    let available = std::fs::read_to_string(base.join("cgroup.controllers")).unwrap_or_default();
    let wanted: Vec<String> =
        available.split_whitespace().filter(|c| matches!(*c, "memory" | "pids" | "cpu")).map(str::to_string).collect();
    let group = base.join(GROUP);
    let _ = std::fs::create_dir_all(&group);
    let mut enabled = Vec::new();
    for c in wanted {
        // Our own cgroup must delegate it, then the group passes it down.
        let ok = std::fs::write(base.join("cgroup.subtree_control"), format!("+{c}")).is_ok()
            && std::fs::write(group.join("cgroup.subtree_control"), format!("+{c}")).is_ok();
        if ok {
            enabled.push(c);
        } else {
            notes.push(format!("cgroup v2: cannot delegate {c} below {}", base.display()));
        }
    }
    Some((base, enabled))
}

/// Processes the sandbox's agent may start beyond its commands' limit: room
/// for the commands that clean up after a fork bomb.
pub const AGENT_HEADROOM: u64 = 32;

/// The name of the agent's spawn thread (`comm`), which the host puts into
/// the `commands` cgroup: see [`SandboxCgroup::enter`].
pub const SPAWN_THREAD: &str = "rebyte-spawn";

/// One directory of a sandbox's cgroup: its hierarchy and where it is now.
#[derive(Debug)]
struct Dir {
    version: Version,
    parent: PathBuf,
    path: PathBuf,
}

/// One sandbox's cgroup directories (one per hierarchy; on v2 one for all).
#[derive(Debug)]
pub struct SandboxCgroup {
    memory: Option<usize>,
    pids: Option<usize>,
    cpu: Option<usize>,
    freezer: Option<usize>,
    dirs: Vec<Dir>,
    /// `<pids dir>/commands` (v1), the cgroup every command runs in: its
    /// `pids.max` is the sandbox's limit, the sandbox's own is that plus
    /// [`AGENT_HEADROOM`], so the agent can always start one more process (a
    /// command that kills the others; migration into a full cgroup is
    /// allowed, forking inside it is not).
    commands: bool,
    /// The agent's spawn thread is in `commands`: the commands it forks start
    /// there, with no move of their own (see [`SandboxCgroup::enter`]).
    thread_placed: bool,
}

/// Which limits a cgroup enforces (the rest falls back to rlimits).
#[derive(Debug, Clone, Copy, Default)]
pub struct Enforced {
    pub memory: bool,
    pub pids: bool,
    /// The sandbox has a CPU quota.
    pub cpu: bool,
}

/// A fresh name for one start's directories (`<prefix>.<pid>.<n>`): a
/// restarted server, or a restarted sandbox, never meets the ones an old
/// start is still removing.
fn fresh_name(prefix: &str) -> String {
    static STARTS: AtomicU64 = AtomicU64::new(0);
    format!("{prefix}.{}.{}", std::process::id(), STARTS.fetch_add(1, Ordering::Relaxed))
}

impl SandboxCgroup {
    /// Makes the directories, with no limits yet, under a fresh name built on
    /// `prefix` (a sandbox id, or `pool` for a warm agent's); `None` if the
    /// host offers none.
    pub fn new(support: &CgroupSupport, prefix: &str) -> Option<SandboxCgroup> {
        let name = fresh_name(prefix);
        let mut cg = SandboxCgroup {
            memory: None,
            pids: None,
            cpu: None,
            freezer: None,
            dirs: Vec::new(),
            commands: false,
            thread_placed: false,
        };
        let hierarchies = [(&support.memory, 0), (&support.pids, 1), (&support.cpu, 2), (&support.freezer, 3)];
        for (h, slot) in hierarchies {
            let Some(h) = h else { continue };
            let at = match cg.dirs.iter().position(|d| d.parent == h.parent) {
                Some(at) => Some(at),
                None => {
                    let path = h.parent.join(&name);
                    match std::fs::create_dir(&path) {
                        Ok(()) => {
                            cg.dirs.push(Dir { version: h.version, parent: h.parent.clone(), path });
                            Some(cg.dirs.len() - 1)
                        }
                        Err(e) => {
                            tracing::debug!(error = %e, dir = %path.display(), "a sandbox cgroup could not be made");
                            None
                        }
                    }
                }
            };
            *match slot {
                0 => &mut cg.memory,
                1 => &mut cg.pids,
                2 => &mut cg.cpu,
                _ => &mut cg.freezer,
            } = at;
        }
        // v2's "no internal processes" rule would need the agent in a leaf of its own: not yet.
        if let Some(dir) = cg.pids.map(|i| &cg.dirs[i]).filter(|d| d.version == Version::V1) {
            cg.commands = std::fs::create_dir(dir.path.join("commands")).is_ok();
        }
        if cg.dirs.is_empty() { None } else { Some(cg) }
    }

    fn dir(&self, slot: Option<usize>) -> Option<&Dir> {
        self.dirs.get(slot?)
    }

    /// Renames the directories after the sandbox `id` (a warm agent's,
    /// named `pool.…` while it waited). Only v1 can rename a cgroup; where
    /// it cannot, a directory keeps its name, which nothing depends on.
    pub fn rename_for(&mut self, id: &str) {
        let name = fresh_name(id);
        for dir in self.dirs.iter_mut().filter(|d| d.version == Version::V1) {
            let to = dir.parent.join(&name);
            match std::fs::rename(&dir.path, &to) {
                Ok(()) => dir.path = to,
                Err(e) => tracing::debug!(error = %e, dir = %dir.path.display(), "a cgroup kept its pool name"),
            }
        }
    }

    /// Writes the limits; returns which ones the cgroup enforces.
    pub fn limit(&self, limits: &Limits) -> Enforced {
        let mut enforced = Enforced::default();
        if let (Some(dir), Some(bytes)) = (self.dir(self.memory), limits.memory_bytes) {
            let file = if dir.version == Version::V1 { "memory.limit_in_bytes" } else { "memory.max" };
            enforced.memory = std::fs::write(dir.path.join(file), bytes.to_string()).is_ok();
            if dir.version == Version::V2 {
                let _ = std::fs::write(dir.path.join("memory.swap.max"), "0");
            }
        }
        if let (Some(dir), Some(n)) = (self.dir(self.pids), limits.max_processes) {
            // The spawn thread counts where it is.
            let commands = n + u64::from(self.thread_placed);
            let limited = self.commands
                && std::fs::write(dir.path.join("commands").join("pids.max"), commands.to_string()).is_ok();
            let own = if limited { commands + AGENT_HEADROOM } else { n };
            enforced.pids = std::fs::write(dir.path.join("pids.max"), own.to_string()).is_ok();
        }
        if let (Some(dir), Some(millicores)) = (self.dir(self.cpu), limits.cpu_millicores) {
            // A quota per 100 ms period: `millicores` thousandths of one CPU.
            let quota = (millicores.max(10) * 100).to_string();
            enforced.cpu = match dir.version {
                Version::V1 => std::fs::write(dir.path.join("cpu.cfs_period_us"), "100000")
                    .and_then(|()| std::fs::write(dir.path.join("cpu.cfs_quota_us"), &quota))
                    .is_ok(),
                Version::V2 => std::fs::write(dir.path.join("cpu.max"), format!("{quota} 100000")).is_ok(),
            };
        }
        enforced
    }

    /// Moves the agent `pid` (before it runs anything) into every directory,
    /// and its spawn thread ([`SPAWN_THREAD`]) into `commands` (v1 moves
    /// single threads): every command the agent forks from that thread then
    /// starts where it belongs. A move is what costs here — on cgroup v1 the
    /// first one after a quiet moment waits for an RCU grace period (5–13
    /// ms) — so warm agents make theirs while they wait in the pool, and
    /// commands make none.
    pub fn enter(&mut self, pid: i32) -> std::io::Result<()> {
        for dir in &self.dirs {
            std::fs::write(dir.path.join("cgroup.procs"), pid.to_string())?;
        }
        if let (true, Some(dir)) = (self.commands, self.dir(self.pids)) {
            let placed = spawn_thread(pid)
                .is_some_and(|tid| std::fs::write(dir.path.join("commands").join("tasks"), tid.to_string()).is_ok());
            self.thread_placed = placed;
        }
        Ok(())
    }

    /// The `cgroup.procs` of `commands`, which a command forked elsewhere
    /// than the spawn thread joins (see [`crate::wire::InitConfig::command_cgroup`]).
    pub fn command_procs(&self) -> Option<PathBuf> {
        let dir = self.dir(self.pids).filter(|_| self.commands)?;
        Some(dir.path.join("commands").join("cgroup.procs"))
    }

    /// The agent's spawn thread is in `commands`.
    pub fn thread_placed(&self) -> bool {
        self.thread_placed
    }

    pub fn can_freeze(&self) -> bool {
        self.dir(self.freezer).is_some()
    }

    /// Freezes (or thaws) every process, waiting until the kernel is done.
    pub async fn set_frozen(&self, frozen: bool) -> std::io::Result<()> {
        let Some(Dir { version, path: dir, .. }) = self.dir(self.freezer) else {
            return Err(std::io::Error::other("no freezer cgroup"));
        };
        let (file, value, done_file, done) = match (version, frozen) {
            (Version::V1, true) => ("freezer.state", "FROZEN", "freezer.state", "FROZEN"),
            (Version::V1, false) => ("freezer.state", "THAWED", "freezer.state", "THAWED"),
            (Version::V2, true) => ("cgroup.freeze", "1", "cgroup.events", "frozen 1"),
            (Version::V2, false) => ("cgroup.freeze", "0", "cgroup.events", "frozen 0"),
        };
        std::fs::write(dir.join(file), value)?;
        for attempt in 0..2000 {
            let state = std::fs::read_to_string(dir.join(done_file))?;
            if state.lines().any(|l| l.trim() == done) {
                return Ok(());
            }
            // A v1 freezer can stay FREEZING when a task was forking or busy
            // in the kernel; the documented remedy is to write the state again.
            if attempt % 10 == 9 {
                std::fs::write(dir.join(file), value)?;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        Err(std::io::Error::other(format!("{} did not reach {done}", dir.display())))
    }

    /// Thaws synchronously (before a kill: frozen tasks cannot die).
    pub fn thaw_now(&self) {
        if let Some(Dir { version, path: dir, .. }) = self.dir(self.freezer) {
            let (file, value) =
                if *version == Version::V1 { ("freezer.state", "THAWED") } else { ("cgroup.freeze", "0") };
            let _ = std::fs::write(dir.join(file), value);
        }
    }

    /// Removes the directories once every process in them is gone.
    pub fn remove(&self) {
        let commands = self.dir(self.pids).filter(|_| self.commands).map(|d| d.path.join("commands"));
        for dir in commands.iter().chain(self.dirs.iter().map(|d| &d.path)) {
            for attempt in 0..50 {
                match std::fs::remove_dir(dir) {
                    Ok(()) => break,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                    Err(_) => std::thread::sleep(Duration::from_millis(if attempt < 10 { 1 } else { 10 })),
                }
            }
        }
    }
}

/// The agent's spawn thread, once it has started (the agent starts it first
/// thing after exec); `None` if it has not within a moment (an agent
/// program without one: its commands then join `commands` as they start).
fn spawn_thread(pid: i32) -> Option<i32> {
    let deadline = std::time::Instant::now() + Duration::from_millis(200);
    loop {
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
        for task in tasks.flatten() {
            let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
            if comm.trim_end() == SPAWN_THREAD {
                return task.file_name().to_str()?.parse().ok();
            }
        }
        if std::time::Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw";
    const OWN: &str = "8:pids:/\n4:memory:/process_api/abc\n0::/\n";

    #[test]
    fn v1_hierarchies_are_found_per_controller() {
        let (root, point) = v1_mount(MOUNTINFO, "memory").unwrap();
        let own = own_path(OWN, |c| c.split(',').any(|x| x == "memory")).unwrap();
        assert_eq!(join(&point, &root, &own), PathBuf::from("/sys/fs/cgroup/memory/process_api/abc"));
        let (root, point) = v1_mount(MOUNTINFO, "pids").unwrap();
        assert_eq!(join(&point, &root, "/"), PathBuf::from("/sys/fs/cgroup/pids"));
        assert!(v1_mount(MOUNTINFO, "freezer").is_none());
    }

    #[test]
    fn a_namespaced_mount_root_is_stripped_from_our_path() {
        assert_eq!(join(Path::new("/sys/fs/cgroup"), "/kube/pod1", "/kube/pod1/c"), PathBuf::from("/sys/fs/cgroup/c"));
    }
}
