//! Sandbox speed and footprint against raw `unshare` in the same run:
//! first use → ready, first command, warm command round trip, file round
//! trip, and N idle sandboxes alive at once (host overhead per sandbox).
//!
//! `cargo bench -p sandbox --bench sandbox` (env: `ITER`, default 200;
//! `IDLE`, default 500; `AGENT` and `AGENT_ARGS` to run another agent
//! executable, e.g. `target/release/rebyte` with `sandbox-agent`). Prints a
//! Markdown table.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use sandbox::local::LocalSandbox;
use sandbox::{ExecRequest, LocalBackend, LocalConfig, Sandbox, SandboxSpec};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

struct Stats(Vec<Duration>);

impl Stats {
    fn pct(&self, p: f64) -> Duration {
        let mut v = self.0.clone();
        v.sort();
        v[((v.len() as f64 - 1.0) * p).round() as usize]
    }

    fn row(&self, name: &str, target: &str) -> String {
        let ms = |d: Duration| format!("{:.2}", d.as_secs_f64() * 1e3);
        format!(
            "| {name} | {} | {} | {} | {} | {target} |",
            self.0.len(),
            ms(self.pct(0.5)),
            ms(self.pct(0.9)),
            ms(self.pct(0.99))
        )
    }
}

fn raise_nofile() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    if let Ok((_, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
    }
}

fn mem_available_kib() -> u64 {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    meminfo
        .lines()
        .find(|l| l.starts_with("MemAvailable:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// A `/proc/<pid>/smaps_rollup` or `/proc/<pid>/status` field, in KiB.
fn proc_kib(pid: i32, file: &str, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/{file}"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn own_memcg() -> Option<PathBuf> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = own.lines().find_map(|l| {
        let mut p = l.splitn(3, ':');
        let (_, ctrls, path) = (p.next()?, p.next()?, p.next()?);
        ctrls.split(',').any(|c| c == "memory").then(|| path.to_string())
    })?;
    Some(PathBuf::from(format!("/sys/fs/cgroup/memory{path}")))
}

fn read_u64(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Charge of a sandbox's memory cgroup (user and kernel memory), if any.
fn memcg_bytes(id: &str) -> Option<u64> {
    read_u64(&own_memcg()?.join("rebyte-sandboxes").join(id).join("memory.usage_in_bytes"))
}

/// This process moved into a memory cgroup (v1) of its own, so that what
/// sandboxes cost the host — agents, their cgroups, and the kernel objects
/// charged to the creating side (namespaces, mounts, page tables, stacks) —
/// is counted in one place, apart from other processes on the machine.
struct MemScope {
    dir: PathBuf,
    original: PathBuf,
}

impl MemScope {
    fn enter() -> Option<MemScope> {
        let original = own_memcg()?;
        let dir = original.join(format!("sandbox-bench-{}", std::process::id()));
        std::fs::create_dir(&dir).ok()?;
        std::fs::write(dir.join("cgroup.procs"), std::process::id().to_string()).ok()?;
        Some(MemScope { dir, original })
    }

    fn usage(&self) -> u64 {
        read_u64(&self.dir.join("memory.usage_in_bytes")).unwrap_or(0)
    }
}

impl Drop for MemScope {
    fn drop(&mut self) {
        let _ = std::fs::write(self.original.join("cgroup.procs"), std::process::id().to_string());
        let _ = std::fs::remove_dir(self.dir.join("rebyte-sandboxes"));
        let _ = std::fs::remove_dir(&self.dir);
    }
}

struct Bench {
    /// The default configuration: one warm agent per network policy.
    backend: LocalBackend,
    /// No warm agents: clone and exec on demand.
    cold: LocalBackend,
    root: tempfile::TempDir,
    n: usize,
}

impl Bench {
    async fn create(&self, tag: &str) -> Arc<LocalSandbox> {
        self.create_on(&self.backend, tag).await
    }

    async fn create_on(&self, backend: &LocalBackend, tag: &str) -> Arc<LocalSandbox> {
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let id = format!("bench-{tag}-{}-{n}", std::process::id());
        let spec = SandboxSpec::new(id.clone(), self.root.path().join(&id));
        backend.create_local(spec).await.unwrap()
    }
}

static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

async fn run(sb: &dyn Sandbox, cmd: &str) {
    let out = sb.exec(ExecRequest::new(cmd)).await.unwrap().wait().await.unwrap();
    assert!(out.status.success(), "{cmd}: {:?}", out.status);
}

fn main() {
    raise_nofile();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(bench());
}

/// The crate's agent binary, or `AGENT` (e.g. `target/release/rebyte`)
/// started with the arguments in `AGENT_ARGS` (e.g. `sandbox-agent`).
fn backend(warm_agents: usize) -> LocalBackend {
    let program = std::env::var("AGENT").unwrap_or_else(|_| env!("CARGO_BIN_EXE_rebyte-sandbox-agent").to_string());
    let args =
        std::env::var("AGENT_ARGS").map(|a| a.split_whitespace().map(String::from).collect()).unwrap_or_default();
    let mut config = LocalConfig::with_agent(program, args);
    config.warm_agents = warm_agents;
    LocalBackend::new(config)
}

async fn bench() {
    let iter = env_usize("ITER", 200);
    let idle = env_usize("IDLE", 500);
    let bench = Bench { backend: backend(1), cold: backend(0), root: tempfile::tempdir().unwrap(), n: iter };
    let mut rows = Vec::new();

    // Warm up caches (binary pages, dentries) for every side.
    for _ in 0..10 {
        std::process::Command::new("unshare").args(["-mpfnui", "--fork", "true"]).status().unwrap();
        for backend in [&bench.backend, &bench.cold] {
            let sb = bench.create_on(backend, "warmup").await;
            sb.destroy().await.unwrap();
        }
    }

    // Interleave the three so that machine noise hits them alike. A warm
    // agent is refilled in the background after each use, as in a server.
    let (mut raw, mut ready, mut first_cmd, mut agent_setup) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut cold, mut cold_cmd) = (Vec::new(), Vec::new());
    for _ in 0..bench.n {
        let t = Instant::now();
        let status = std::process::Command::new("unshare").args(["-mpfnui", "--fork", "true"]).status().unwrap();
        raw.push(t.elapsed());
        assert!(status.success());

        let t = Instant::now();
        let sb = bench.create("ready").await;
        ready.push(t.elapsed());
        agent_setup.push(sb.agent_setup_time());
        run(&*sb, "true").await;
        first_cmd.push(t.elapsed());
        sb.destroy().await.unwrap();

        let t = Instant::now();
        let sb = bench.create_on(&bench.cold, "cold").await;
        cold.push(t.elapsed());
        run(&*sb, "true").await;
        cold_cmd.push(t.elapsed());
        sb.destroy().await.unwrap();
    }
    let raw = Stats(raw);
    let ready = Stats(ready);
    let cold = Stats(cold);
    rows.push(raw.row("raw `unshare -mpfnui --fork true` (spawn → exit)", "baseline"));
    rows.push(ready.row("first use → ready (`create`, no setup; warm agent, the default)", "p50 ≤ 10 ms and ≤ 2× raw"));
    rows.push(Stats(agent_setup).row("  of which: agent setup inside (mounts, pivot, caps)", ""));
    rows.push(Stats(first_cmd).row("first use → first command (`true`) done", ""));
    rows.push(
        cold.row("first use → ready, cold (`warm_agents = 0`: clone + exec on demand)", "p50 ≤ 10 ms and ≤ 2× raw"),
    );
    rows.push(Stats(cold_cmd).row("first use → first command done, cold", ""));

    // Warm round trips on one sandbox.
    let sb = bench.create("warm-rt").await;
    let mut rt = Vec::new();
    for _ in 0..(bench.n * 5) {
        let t = Instant::now();
        run(&*sb, "true").await;
        rt.push(t.elapsed());
    }
    rows.push(Stats(rt).row("command round trip, warm (`sh -c true`)", "p50 ≤ 3 ms"));
    let mut files = Vec::new();
    let data = vec![7u8; 4096];
    for i in 0..(bench.n * 5) {
        let t = Instant::now();
        sb.write_file(&format!("f{}", i % 10), data.clone()).await.unwrap();
        assert_eq!(sb.read_file(&format!("f{}", i % 10)).await.unwrap().len(), 4096);
        files.push(t.elapsed());
    }
    rows.push(Stats(files).row("file write + read 4 KiB, warm", ""));
    sb.destroy().await.unwrap();

    // Idle sandboxes alive at once, counted in a memory cgroup of our own
    // (entered only now: it must not change the timings above).
    let scope = MemScope::enter();
    let bench = Bench { backend: backend(1), cold: backend(0), ..bench };
    tokio::time::sleep(Duration::from_millis(500)).await;
    let self_pid = std::process::id() as i32;
    let (avail_before, rss_before) = (mem_available_kib(), proc_kib(self_pid, "status", "VmRSS:"));
    let scoped_before = scope.as_ref().map(MemScope::usage);
    let t = Instant::now();
    let mut alive = Vec::with_capacity(idle);
    for _ in 0..idle {
        alive.push(bench.create("idle").await);
    }
    let created = t.elapsed();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (avail_after, rss_after) = (mem_available_kib(), proc_kib(self_pid, "status", "VmRSS:"));
    let scoped_after = scope.as_ref().map(MemScope::usage);
    let t = Instant::now();
    for sb in &alive {
        run(&**sb, "true").await;
    }
    let all_answer = t.elapsed();
    let pss: u64 = alive.iter().map(|s| proc_kib(s.agent_pid(), "smaps_rollup", "Pss:")).sum();
    let rss: u64 = alive.iter().map(|s| proc_kib(s.agent_pid(), "status", "VmRSS:")).sum();
    let memcg: Vec<u64> = alive.iter().filter_map(|s| memcg_bytes(s.id())).collect();
    let per = |kib: u64| format!("{:.2} MiB ({} KiB)", kib as f64 / 1024.0 / idle as f64, kib / idle as u64);
    let host_delta = avail_before.saturating_sub(avail_after);
    for sb in &alive {
        sb.destroy().await.unwrap();
    }
    drop(alive);
    drop(scope);

    println!("\n### Sandbox (issue 4)\n");
    println!(
        "ITER={} IDLE={idle}, {} cores, agent {}\n",
        bench.n,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        std::env::var("AGENT").unwrap_or_else(|_| "rebyte-sandbox-agent".into())
    );
    println!("| measure | n | p50 ms | p90 ms | p99 ms | target |");
    println!("| --- | --- | --- | --- | --- | --- |");
    for r in rows {
        println!("{r}");
    }
    let ratio = |s: &Stats| s.pct(0.5).as_secs_f64() / raw.pct(0.5).as_secs_f64();
    println!(
        "\nfirst use → ready p50 / raw unshare p50 = {:.2}× (warm agent), {:.2}× (cold)\n",
        ratio(&ready),
        ratio(&cold)
    );
    println!("| {idle} idle sandboxes at once | value |");
    println!("| --- | --- |");
    println!("| created one after another in | {:.2} s |", created.as_secs_f64());
    println!("| all answered a command (`true`, sequentially) in | {:.2} s |", all_answer.as_secs_f64());
    if let (Some(before), Some(after)) = (scoped_before, scoped_after) {
        let kib = after.saturating_sub(before) / 1024;
        println!(
            "| **host memory per sandbox** (charge of the benchmark's own memory cgroup: agents, sandbox cgroups, kernel objects of both sides) | {} |",
            per(kib)
        );
    }
    println!("| host MemAvailable drop per sandbox (whole machine, noisy) | {} |", per(host_delta));
    println!("| agent PSS per sandbox | {} |", per(pss));
    println!("| agent RSS per sandbox | {} |", per(rss));
    if memcg.len() == idle {
        println!(
            "| sandbox memory cgroup charge (user + kernel) per sandbox | {} |",
            per(memcg.iter().sum::<u64>() / 1024)
        );
    }
    println!("| server-side RSS growth per sandbox (tasks, buffers) | {} |", per(rss_after.saturating_sub(rss_before)));
}
