//! Opening a connection over stdio: from any byte-stream pair (a process in a sandbox hands over
//! its stdout and stdin), or by spawning a process on the host (tests, local tools).

use super::{Connection, Timeouts, errors, handler::Handler};
use crate::config::StdioConfig;
use crate::error::{McpError, Result, Step};
use rmcp::service::{RoleClient, RunningService, serve_client_with_ct};
use rmcp::transport::{IntoTransport, TokioChildProcess};
use std::process::Stdio;
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, BufReader};
use tokio_util::sync::CancellationToken;

/// Runs the MCP handshake on `transport` within the `initialize` timeout.
pub(super) async fn handshake<T, E, A>(
    label: &Arc<str>,
    transport: T,
    timeouts: &Timeouts,
) -> Result<RunningService<RoleClient, Handler>>
where
    T: IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let cancel = CancellationToken::new();
    let serve = serve_client_with_ct(Handler::new(label.clone()), transport, cancel.clone());
    match tokio::time::timeout(timeouts.initialize, serve).await {
        Ok(Ok(service)) => Ok(service),
        Ok(Err(error)) => Err(errors::from_initialize(label, error)),
        Err(_) => {
            cancel.cancel();
            Err(McpError::Timeout { server: label.to_string(), step: Step::Initialize, after: timeouts.initialize })
        }
    }
}

impl Connection {
    /// Connects to a server whose stdout is `reader` and stdin is `writer` (newline-delimited
    /// JSON-RPC), wherever the process runs. Closing the connection closes `writer`.
    pub async fn connect_stdio<R, W>(label: impl Into<String>, reader: R, writer: W, timeouts: Timeouts) -> Result<Self>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let label: Arc<str> = Arc::from(label.into());
        let service = handshake(&label, (reader, writer), &timeouts).await?;
        Ok(Connection::from_service(label, service, timeouts, None))
    }

    /// Spawns `config.command` on the host (inheriting the host environment plus `config.env`)
    /// and connects to it over its stdin/stdout. Its stderr is logged at debug level. The process
    /// is stopped when the connection is terminated or dropped.
    pub async fn spawn_stdio(label: impl Into<String>, config: &StdioConfig, timeouts: Timeouts) -> Result<Self> {
        let label: Arc<str> = Arc::from(label.into());
        let mut command = tokio::process::Command::new(&config.command);
        command.args(&config.args);
        if let Some(cwd) = &config.cwd {
            command.current_dir(cwd);
        }
        for (name, value) in &config.env {
            command.env(name, value.expose());
        }
        let (process, stderr) = TokioChildProcess::builder(command)
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| McpError::Spawn { server: label.to_string(), message: format!("{}: {e}", config.command) })?;
        if let Some(stderr) = stderr {
            let server = label.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    tracing::debug!(server = %server, "stderr: {line}");
                }
            });
        }
        let service = handshake(&label, process, &timeouts).await?;
        Ok(Connection::from_service(label, service, timeouts, None))
    }
}
