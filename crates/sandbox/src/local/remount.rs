//! The host's end of `sandbox-agent --remount` ([`crate::agent::remount`]):
//! starts the helper for one sandbox and maps its exit to an error.

use super::LocalConfig;
use crate::agent::remount::{BUSY, RemountSpec};
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

fn text(p: &Path) -> Result<String> {
    p.to_str().map(str::to_string).ok_or_else(|| Error::Create(format!("path is not UTF-8: {}", p.display())))
}

/// Gives the sandbox whose agent is `pid` a new `/workspace` (see
/// [`crate::Sandbox::remount_workspace`]).
pub(super) async fn remount(
    config: &LocalConfig,
    pid: i32,
    lowers: &[PathBuf],
    upper: &Path,
    work: &Path,
) -> Result<()> {
    let spec = RemountSpec {
        pid,
        lowers: lowers.iter().map(|p| text(p)).collect::<Result<_>>()?,
        upper: text(upper)?,
        work: text(work)?,
    };
    let spec = serde_json::to_string(&spec).map_err(|e| Error::Protocol(e.to_string()))?;
    let out = tokio::process::Command::new(&config.agent_program)
        .args(&config.agent_args)
        .arg("--remount")
        .arg(spec)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| Error::io(format!("start {}", config.agent_program.display()), e))?;
    let message = String::from_utf8_lossy(&out.stderr).trim().to_string();
    match out.status.code() {
        Some(0) => Ok(()),
        Some(BUSY) => Err(Error::Busy(format!(
            "a process in the environment holds a file in /workspace open for writing ({message})"
        ))),
        _ => Err(Error::Create(format!("remount the workspace: {message}"))),
    }
}
