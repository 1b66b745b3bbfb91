//! What skills cost an environment: its first initialization with one
//! 1 MiB skill (incompressible bytes beside a `SKILL.md`, stored as the
//! server stores it) against the same environment without it, interleaved
//! in one run, real SQLite store and real sandboxes; the unpacking alone;
//! and the catalog's size per skill.
//!
//! `cargo bench -p engine --bench skills` (env: `ITER`, default 40; `MIB`,
//! the skill's size, default 1). Prints Markdown tables.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use engine::environments::{Environments, EnvironmentsConfig};
use engine::skill_catalog::{SkillEntry, render};
use protocol::environment::{EnvironmentRecord, EnvironmentStatus};
use protocol::ids::EnvironmentId;
use protocol::skill::{HostedSkill, content_key, skill_md_path};
use std::io::{Cursor, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};
use store::Store;

const ORG: &str = "org_bench";

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn pct(v: &[Duration], p: f64) -> f64 {
    let mut v = v.to_vec();
    v.sort();
    v[((v.len() as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1e3
}

fn row(name: &str, v: &[Duration], target: &str) -> String {
    format!("| {name} | {} | {:.2} | {:.2} | {:.2} | {target} |", v.len(), pct(v, 0.5), pct(v, 0.9), pct(v, 0.99))
}

/// A skill zip: SKILL.md and `mib` MiB of incompressible bytes, deflated.
fn skill_zip(mib: usize) -> Vec<u8> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut noise = vec![0u8; mib << 20];
    for chunk in noise.chunks_mut(8) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        chunk.copy_from_slice(&state.to_le_bytes()[..chunk.len()]);
    }
    let mut z = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    z.start_file("SKILL.md", options.unix_permissions(0o644)).unwrap();
    z.write_all(b"---\nname: big\ndescription: A large skill.\n---\n# Big\n").unwrap();
    z.start_file("data/noise.bin", options.unix_permissions(0o644)).unwrap();
    z.write_all(&noise).unwrap();
    z.start_file("scripts/run.sh", options.unix_permissions(0o755)).unwrap();
    z.write_all(b"#!/bin/sh\necho run\n").unwrap();
    z.finish().unwrap().into_inner()
}

fn record(id: &EnvironmentId, skilled: bool) -> EnvironmentRecord {
    EnvironmentRecord {
        id: id.clone(),
        created_at: 0,
        status: EnvironmentStatus::Pending,
        error: None,
        owner_session: None,
        shared: false,
        metadata: Default::default(),
        config: Default::default(),
        files: Vec::new(),
        skills: if skilled {
            vec![HostedSkill::Inline { name: "big".into(), description: "A large skill.".into() }]
        } else {
            Vec::new()
        },
        setup_log: None,
        node: None,
        template: None,
        forked_from: None,
        name: None,
        setup: None,
        vault_ids: Vec::new(),
    }
}

fn main() {
    // The sandboxes' agent is this executable (`LocalConfig::default()` runs
    // `/proc/self/exe sandbox-agent`, as the server runs itself).
    if std::env::args().nth(1).as_deref() == Some("sandbox-agent") {
        sandbox::agent::main();
    }
    let iter = env_usize("ITER", 40);
    let mib = env_usize("MIB", 1);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async move {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> = Arc::new(store::SqliteStore::open(&dir.path().join("bench.db")).await.unwrap());
        let backend: Arc<dyn sandbox::Backend> = Arc::new(sandbox::LocalBackend::new(sandbox::LocalConfig::default()));
        let config = EnvironmentsConfig {
            root: dir.path().join("environments"),
            setup_timeout: Duration::from_secs(30),
            idle_pause: Duration::from_secs(3600),
            limits: sandbox::Limits::default(),
            live_per_org: None,
            disk: None,
        };
        let envs = Environments::new(Arc::clone(&store), backend, config, Arc::new(telemetry::Metrics::default()));
        let zip = skill_zip(mib);
        let (mut plain, mut skilled, mut unpack) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..iter + 2 {
            for with_skill in [false, true] {
                let id = EnvironmentId::new();
                store.put_environment(ORG, &record(&id, with_skill)).await.unwrap();
                if with_skill {
                    store.put_environment_content(ORG, &id, &content_key("big"), &zip).await.unwrap();
                }
                // Each start gets a warm agent (the pool refills in the background after a use).
                tokio::time::sleep(Duration::from_millis(150)).await;
                let began = Instant::now();
                let sandbox = envs.sandbox(ORG, &id).await.unwrap();
                let took = began.elapsed();
                if with_skill {
                    let md = sandbox.read_file("/workspace/.agents/skills/big/SKILL.md").await.unwrap();
                    assert!(md.starts_with(b"---"));
                }
                envs.destroy(&id, true).await;
                // The first two rounds warm the agents and the page cache.
                if i >= 2 {
                    if with_skill { skilled.push(took) } else { plain.push(took) }
                }
            }
            let out = dir.path().join(format!("unpack-{i}"));
            let began = Instant::now();
            engine::environment_contents::unpack(&zip, &out).unwrap();
            if i >= 2 {
                unpack.push(began.elapsed());
            }
            std::fs::remove_dir_all(&out).unwrap();
        }
        println!("One {mib} MiB skill ({} KiB zipped), {iter} runs each, interleaved:\n", zip.len() >> 10);
        println!("| measure | n | p50 ms | p90 ms | p99 ms | target |\n| --- | --- | --- | --- | --- | --- |");
        println!("{}", row("first initialization, no skill", &plain, "baseline"));
        println!("{}", row(&format!("first initialization, one {mib} MiB skill"), &skilled, ""));
        println!("{}", row("unpacking alone (read zip, write files, modes)", &unpack, ""));
        let added = pct(&skilled, 0.5) - pct(&plain, 0.5);
        println!("\nadded by the skill at p50: {added:.2} ms (target ≤ 20 ms)\n");

        println!("| skills | names + descriptions + paths, bytes | catalog bytes | per skill over its own | target |");
        println!("| --- | --- | --- | --- | --- |");
        for n in [1usize, 5, 20] {
            let skills: Vec<SkillEntry> = (0..n)
                .map(|i| {
                    let name = format!("skill-{i}");
                    SkillEntry { path: skill_md_path(&name), description: format!("Does task number {i} well."), name }
                })
                .collect();
            let own: usize = skills.iter().map(|s| s.name.len() + s.description.len() + s.path.len()).sum();
            let text = render(&skills);
            println!("| {n} | {own} | {} | {:.1} | ≤ 40 |", text.len(), (text.len() - own) as f64 / n as f64);
        }
    });
}
