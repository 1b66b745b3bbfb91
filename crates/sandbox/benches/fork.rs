//! Forks of a running sandbox's workspace (`sandbox::layers`, issue 16):
//! a source of `FILES` files and `MIB` MiB in all, forked `FORKS` times while
//! it runs a process; each fork timed (source frozen, remounted, thawed) with
//! the disk it added (free blocks of the filesystem before and after, and
//! `du` of what the fork created), then one file of the newest fork read and
//! written. Prints a Markdown table.
//!
//! `cargo bench -p sandbox --bench fork` (env: `FILES`, default 10000; `MIB`,
//! default 500; `FORKS`, default 10; `BENCH_DIR`, default the temp dir: put it
//! on the filesystem of the data directory).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use sandbox::layers::LayerStore;
use sandbox::{ExecRequest, LocalBackend, LocalConfig, Sandbox, SandboxSpec};
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn free_bytes(p: &Path) -> u64 {
    let s = nix::sys::statvfs::statvfs(p).unwrap();
    s.blocks_available() * s.fragment_size()
}

fn du_kib(paths: &[&Path]) -> u64 {
    let out = std::process::Command::new("du").arg("-sk").arg("-c").args(paths).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().last().and_then(|l| l.split_whitespace().next()).and_then(|n| n.parse().ok()).unwrap_or(0)
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e3)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let (files, mib, forks) = (env_usize("FILES", 10_000), env_usize("MIB", 500), env_usize("FORKS", 10));
    let base = std::env::var("BENCH_DIR").map(std::path::PathBuf::from).unwrap_or_else(|_| std::env::temp_dir());
    let root = tempfile::tempdir_in(base).unwrap();
    let src = root.path().join("env_src");
    let workspace = src.join("workspace");
    let per_file = mib * (1 << 20) / files.max(1);
    let chunk: Vec<u8> = (0..per_file).map(|i| (i % 251) as u8).collect();
    let began = Instant::now();
    for i in 0..files {
        let dir = workspace.join(format!("d{:03}", i % 100));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::File::create(dir.join(format!("f{i:05}"))).unwrap().write_all(&chunk).unwrap();
    }
    nix::unistd::sync();
    let wrote = began.elapsed();

    let agent = env!("CARGO_BIN_EXE_rebyte-sandbox-agent");
    let backend = LocalBackend::new(LocalConfig::with_agent(agent, vec![]));
    let store = LayerStore::new(root.path());
    let mut spec = SandboxSpec::new(format!("bench-fork-{}", std::process::id()), &workspace);
    store.prepare(&src, &mut spec).unwrap();
    let source = backend.create_local(spec).await.unwrap();
    let _busy = source.exec(ExecRequest::new("while true; do sleep 0.1; done")).await.unwrap();

    println!("Source: {files} files, {} MiB ({per_file} bytes each), written in {} ms.\n", mib, ms(wrote));
    println!("| fork | ms (source frozen) | ms (whole call) | disk added, free blocks KiB | disk added, du KiB |");
    println!("| --- | --- | --- | --- | --- |");
    let mut totals = Vec::new();
    let mut last = None;
    for n in 0..forks {
        let dst = root.path().join(format!("env_fork{n}"));
        let free = free_bytes(root.path());
        let t = Instant::now();
        let forked = store.fork(&src, &dst, &*source).await.unwrap();
        let whole = t.elapsed();
        nix::unistd::sync();
        let added = free.saturating_sub(free_bytes(root.path())) / 1024;
        let du = du_kib(&[&dst, &src.join("workspace"), &src.join("work"), &src.join("layers.json")]);
        assert!(!forked.copied, "the fork was a copy");
        println!("| {} | {} | {} | {added} | {du} |", n + 1, ms(forked.frozen), ms(whole));
        totals.push(whole);
        // The source changes a file between forks, as a running one would.
        let out = source.exec(ExecRequest::new(format!("echo {n} > d000/f00000"))).await.unwrap().wait().await.unwrap();
        assert!(out.status.success());
        last = Some(dst);
    }
    totals.sort();
    println!("\np50 {} ms, max {} ms over {forks} forks.", ms(totals[totals.len() / 2]), ms(totals[totals.len() - 1]));

    let dst = last.unwrap();
    let mut spec = SandboxSpec::new(format!("bench-forked-{}", std::process::id()), dst.join("workspace"));
    store.prepare(&dst, &mut spec).unwrap();
    let fork = backend.create_local(spec).await.unwrap();
    let t = Instant::now();
    let out = fork.exec(ExecRequest::new("cat d050/f00050 | wc -c; echo x >> d050/f00050")).await.unwrap();
    let out = out.wait().await.unwrap();
    println!(
        "In the newest fork: read {} bytes and copied the file up on write in {} ms.",
        out.stdout_str().lines().next().unwrap_or("?"),
        ms(t.elapsed())
    );
    fork.destroy().await.unwrap();
    source.destroy().await.unwrap();
}
