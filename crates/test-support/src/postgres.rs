//! A real PostgreSQL for tests: `scripts/postgres` starts a private cluster
//! and exports its base URL as `REBYTE_TEST_DATABASE_URL`; tests take a fresh
//! database of it each ([`fresh_database`]), and may stop and start the
//! cluster's server ([`Cluster`]) to see what an outage does.

use sqlx::Connection;
use std::process::Command;

/// The variable that names the test cluster's base URL.
pub const URL_VAR: &str = "REBYTE_TEST_DATABASE_URL";

/// The test cluster's base URL; `None` when no cluster was started (tests on
/// PostgreSQL then skip, unless `REBYTE_REQUIRE_POSTGRES=1`, as scripts/test
/// sets for the store suite, makes a missing cluster a failure).
pub fn base_url() -> Option<String> {
    match std::env::var(URL_VAR) {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            let required = std::env::var("REBYTE_REQUIRE_POSTGRES").is_ok_and(|v| v == "1");
            assert!(!required, "{URL_VAR} is not set: scripts/postgres starts a cluster");
            eprintln!("skipped on PostgreSQL: {URL_VAR} is not set (see scripts/postgres)");
            None
        }
    }
}

/// `url` with its database name replaced by `name`.
pub fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let authority_start = base.find("://").map_or(0, |i| i + 3);
    let base = match base[authority_start..].find('/') {
        Some(slash) => &base[..authority_start + slash],
        None => base,
    };
    match query {
        Some(query) => format!("{base}/{name}?{query}"),
        None => format!("{base}/{name}"),
    }
}

/// Creates a new, empty database on the cluster at `base` and returns its URL.
pub async fn fresh_database(base: &str) -> String {
    let name = format!("rebyte_test_{}", uuid_like());
    let mut conn = sqlx::PgConnection::connect(base).await.unwrap_or_else(|e| panic!("connect to {base}: {e}"));
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut conn)
        .await
        .unwrap_or_else(|e| panic!("create database {name}: {e}"));
    let _ = conn.close().await;
    with_database(base, &name)
}

/// [`fresh_database`] for code outside a runtime (benches): through `psql`.
pub fn fresh_database_blocking(base: &str) -> String {
    let name = format!("rebyte_bench_{}", uuid_like());
    let psql = std::env::var("REBYTE_TEST_PG_BIN").map_or_else(|_| "psql".to_string(), |bin| format!("{bin}/psql"));
    let status = Command::new(psql).args([base, "-q", "-c", &format!("CREATE DATABASE {name}")]).status();
    assert!(status.is_ok_and(|s| s.success()), "psql could not create database {name} at {base}");
    with_database(base, &name)
}

/// A fresh database on the test cluster, or `None` (skip) without one.
pub async fn fresh() -> Option<String> {
    Some(fresh_database(&base_url()?).await)
}

fn uuid_like() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    format!("{}_{}_{}", std::process::id(), nanos, COUNTER.fetch_add(1, Ordering::SeqCst))
}

/// Everything the database at `url` holds, as `pg_dump` writes it (for tests
/// that look for plaintext secrets at rest).
pub fn dump(url: &str) -> Vec<u8> {
    let bin = std::env::var("REBYTE_TEST_PG_BIN").unwrap_or_else(|_| "/usr/bin".into());
    let out = Command::new(format!("{bin}/pg_dump")).arg(format!("--dbname={url}")).output();
    match out {
        Ok(out) if out.status.success() && !out.stdout.is_empty() => out.stdout,
        other => panic!("pg_dump {url} failed: {other:?}"),
    }
}

/// The test cluster's server, to stop and start (`pg_ctl`, as its owner).
#[derive(Debug, Clone)]
pub struct Cluster {
    data: String,
    bin: String,
    user: String,
}

impl Cluster {
    /// The cluster `scripts/postgres` started, if any.
    pub fn from_env() -> Option<Self> {
        let var = |name| std::env::var(name).ok().filter(|v: &String| !v.is_empty());
        Some(Self {
            data: var("REBYTE_TEST_PG_DATA")?,
            bin: var("REBYTE_TEST_PG_BIN")?,
            user: var("REBYTE_TEST_PG_USER")?,
        })
    }

    fn pg_ctl(&self, args: &[&str]) {
        let pg_ctl = format!("{}/pg_ctl", self.bin);
        let is_root = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n"));
        let mut command = if is_root {
            let mut c = Command::new("runuser");
            c.args(["-u", &self.user, "--", &pg_ctl]);
            c
        } else {
            Command::new(&pg_ctl)
        };
        let log = format!("{}/server.log", self.data);
        let status = command.args(["-D", &self.data, "-l", &log, "-w", "-t", "60"]).args(args).status();
        assert!(status.is_ok_and(|s| s.success()), "pg_ctl {args:?} failed");
    }

    /// Stops the server (fast shutdown: sessions are cut off) until the
    /// returned outage is ended, or dropped (a failing test leaves the
    /// cluster running for the others).
    pub fn stop(&self) -> Outage {
        self.pg_ctl(&["-m", "fast", "stop"]);
        Outage { cluster: Some(self.clone()) }
    }

    fn start(&self) {
        self.pg_ctl(&["start"]);
    }
}

/// The cluster's server, stopped.
#[derive(Debug)]
pub struct Outage {
    cluster: Option<Cluster>,
}

impl Outage {
    /// Starts the server again and waits until it accepts connections.
    pub fn end(mut self) {
        if let Some(cluster) = self.cluster.take() {
            cluster.start();
        }
    }
}

impl Drop for Outage {
    fn drop(&mut self) {
        if let Some(cluster) = self.cluster.take() {
            cluster.start();
        }
    }
}
