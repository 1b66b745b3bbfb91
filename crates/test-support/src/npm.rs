//! The Node fixtures that the MCP tests and benches run (the reference MCP
//! servers from npm, pinned by each fixture directory's `package-lock.json`):
//! installed with `npm ci` on first use, once per process, so that a fresh
//! clone needs no manual step.

use std::path::Path;
use std::process::Command;
use std::sync::Mutex;

/// Why a fixture directory could not be made ready.
#[derive(Debug, thiserror::Error)]
pub enum NpmError {
    #[error("`npm` could not be started to install {dir} (install Node.js and npm): {source}")]
    Missing { dir: String, source: std::io::Error },
    #[error("`npm ci` in {dir} failed ({status}); run it by hand to see why")]
    Failed { dir: String, status: std::process::ExitStatus },
}

/// Runs `npm ci` in `dir` unless `probe` (a path under its `node_modules`)
/// already exists. Concurrent callers in one process wait for the first.
pub fn ensure_installed(dir: &Path, probe: &str) -> Result<(), NpmError> {
    // One install at a time: two `npm ci` in one directory would race.
    static LOCK: Mutex<()> = Mutex::new(());
    let _guard = LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if dir.join("node_modules").join(probe).exists() {
        return Ok(());
    }
    let shown = dir.display().to_string();
    let status = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund"])
        .current_dir(dir)
        .status()
        .map_err(|source| NpmError::Missing { dir: shown.clone(), source })?;
    if !status.success() {
        return Err(NpmError::Failed { dir: shown, status });
    }
    Ok(())
}
