//! The host's end of `sandbox-agent --remount` ([`crate::agent::remount`]):
//! starts the helper for one sandbox and maps its exit to an error.

use super::LocalConfig;
use crate::agent::remount::{BUSY, RemountSpec, Swap};
use crate::error::{Error, Result};

/// Gives the sandbox whose agent is `pid` new mounts (see
/// [`crate::Sandbox::remount`]).
pub(super) async fn remount(config: &LocalConfig, pid: i32, swaps: &[Swap]) -> Result<()> {
    let spec = RemountSpec { pid, swaps: swaps.to_vec() };
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
        Some(BUSY) => {
            Err(Error::Busy(format!("a process in the environment holds a file open for writing ({message})")))
        }
        _ => Err(Error::Create(format!("remount the workspace: {message}"))),
    }
}
