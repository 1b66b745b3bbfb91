//! Builders shared by the suite: a local backend running this crate's agent
//! binary, sandboxes over temporary directories, and command helpers.

use sandbox::{ExecOutput, ExecRequest, LocalBackend, LocalConfig, Sandbox, SandboxSpec};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

pub fn backend() -> LocalBackend {
    LocalBackend::new(LocalConfig::with_agent(env!("CARGO_BIN_EXE_rebyte-sandbox-agent"), vec![]))
}

/// A sandbox over a fresh temporary directory, destroyed with it.
pub struct TestSandbox {
    pub dir: tempfile::TempDir,
    pub sandbox: Arc<sandbox::local::LocalSandbox>,
}

impl std::ops::Deref for TestSandbox {
    type Target = sandbox::local::LocalSandbox;
    fn deref(&self) -> &Self::Target {
        &self.sandbox
    }
}

impl TestSandbox {
    /// The host path of a file in this sandbox's `/workspace`.
    pub fn host_path(&self, rel: &str) -> std::path::PathBuf {
        self.dir.path().join("workspace").join(rel)
    }
}

pub fn unique_id(prefix: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!("test-{prefix}-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

pub async fn start(prefix: &str) -> TestSandbox {
    start_with(prefix, |_| {}).await
}

pub async fn start_with(prefix: &str, edit: impl FnOnce(&mut SandboxSpec)) -> TestSandbox {
    start_on(&backend(), prefix, edit).await
}

/// A backend that uses no cgroups: rlimits and SIGSTOP/SIGCONT instead.
pub fn backend_without_cgroups() -> LocalBackend {
    let mut config = LocalConfig::with_agent(env!("CARGO_BIN_EXE_rebyte-sandbox-agent"), vec![]);
    config.use_cgroups = false;
    LocalBackend::new(config)
}

pub async fn start_on(backend: &LocalBackend, prefix: &str, edit: impl FnOnce(&mut SandboxSpec)) -> TestSandbox {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = SandboxSpec::new(unique_id(prefix), dir.path().join("workspace"));
    edit(&mut spec);
    let sandbox = backend.create_local(spec).await.unwrap();
    TestSandbox { dir, sandbox }
}

/// Runs a command to completion.
pub async fn run(sandbox: &dyn Sandbox, command: &str) -> ExecOutput {
    sandbox.exec(ExecRequest::new(command)).await.unwrap().wait().await.unwrap()
}

/// Runs a command and returns its trimmed stdout, asserting success.
pub async fn sh(sandbox: &dyn Sandbox, command: &str) -> String {
    let out = run(sandbox, command).await;
    assert!(
        out.status.success(),
        "{command}: {:?}\nstdout: {}\nstderr: {}",
        out.status,
        out.stdout_str(),
        out.stderr_str()
    );
    out.stdout_str().trim().to_string()
}
