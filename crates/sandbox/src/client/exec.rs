//! A running command seen from the host: its output as it comes, its exit,
//! and a handle that kills its process group.

use super::{Connection, ProcEvent};
use crate::api::ExitStatus;
use crate::error::{Error, Result};
use crate::wire::{Reply, Request};
use bytes::Bytes;
use std::sync::Arc;
use tokio::sync::mpsc;

/// Acknowledge consumed output in batches of this many bytes.
const ACK_EVERY: u64 = 256 << 10;

/// One event of a running command, in order; `Exit` is the last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecEvent {
    Stdout(Bytes),
    Stderr(Bytes),
    Exit(ExitStatus),
}

/// Everything a command printed, and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecOutput {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub status: ExitStatus,
}

impl ExecOutput {
    pub fn stdout_str(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    pub fn stderr_str(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
}

/// Makes sure the sandbox runs before a request that must not wait for a
/// resume (a kill of a paused sandbox's command).
#[async_trait::async_trait]
pub trait Resume: Send + Sync {
    async fn ensure_running(&self) -> Result<()>;
}

/// Kills a command's whole process group (and nothing else). Cheap to clone
/// and usable while another task reads the output.
#[derive(Clone)]
pub struct Killer {
    conn: Arc<Connection>,
    id: u32,
    resume: Option<Arc<dyn Resume>>,
}

impl Killer {
    pub(crate) fn new(conn: Arc<Connection>, id: u32, resume: Option<Arc<dyn Resume>>) -> Self {
        Killer { conn, id, resume }
    }

    /// SIGKILL to the process group. Succeeds if it already exited.
    pub async fn kill(&self) -> Result<()> {
        self.signal(None).await
    }

    /// Any signal to the process group (e.g. `libc::SIGTERM`).
    pub async fn signal(&self, signal: Option<i32>) -> Result<()> {
        if let Some(r) = &self.resume {
            r.ensure_running().await?;
        }
        match self.conn.request(&Request::Kill { process: self.id, signal }, Vec::new()).await? {
            (Reply::Ok, _) => Ok(()),
            (other, _) => Err(Error::Protocol(format!("unexpected reply to kill: {other:?}"))),
        }
    }
}

/// A running command. Read it with [`Execution::next`] or [`Execution::wait`].
/// Dropping it early lets the command run on, its output discarded.
pub struct Execution {
    conn: Arc<Connection>,
    resume: Option<Arc<dyn Resume>>,
    id: u32,
    pid: i32,
    events: mpsc::UnboundedReceiver<ProcEvent>,
    consumed: u64,
    done: bool,
}

impl Execution {
    pub(crate) fn new(
        conn: Arc<Connection>,
        id: u32,
        pid: i32,
        events: mpsc::UnboundedReceiver<ProcEvent>,
        resume: Option<Arc<dyn Resume>>,
    ) -> Self {
        Execution { conn, resume, id, pid, events, consumed: 0, done: false }
    }

    /// The shell's pid inside the sandbox (also its process group id).
    pub fn pid(&self) -> i32 {
        self.pid
    }

    pub fn killer(&self) -> Killer {
        Killer::new(self.conn.clone(), self.id, self.resume.clone())
    }

    pub async fn kill(&self) -> Result<()> {
        self.killer().kill().await
    }

    /// The next chunk of output or the exit; `None` after the exit.
    pub async fn next(&mut self) -> Result<Option<ExecEvent>> {
        if self.done {
            return Ok(None);
        }
        let event = match self.events.recv().await {
            Some(e) => e,
            None => {
                self.done = true;
                return Err(Error::Gone("the sandbox connection closed".into()));
            }
        };
        let (out, n) = match event {
            ProcEvent::Stdout(b) => (ExecEvent::Stdout(b.clone()), b.len()),
            ProcEvent::Stderr(b) => (ExecEvent::Stderr(b.clone()), b.len()),
            ProcEvent::Exited(e) => {
                self.done = true;
                return Ok(Some(ExecEvent::Exit(e.into())));
            }
            ProcEvent::Lost(reason) => {
                self.done = true;
                return Err(Error::Gone(reason));
            }
        };
        self.consumed += n as u64;
        if self.consumed >= ACK_EVERY {
            self.conn.ack(self.id, self.consumed);
            self.consumed = 0;
        }
        Ok(Some(out))
    }

    /// Collects all output and the exit status.
    pub async fn wait(mut self) -> Result<ExecOutput> {
        let mut stdout = Vec::new();
        let mut stderr = Vec::new();
        loop {
            match self.next().await? {
                Some(ExecEvent::Stdout(b)) => stdout.extend_from_slice(&b),
                Some(ExecEvent::Stderr(b)) => stderr.extend_from_slice(&b),
                Some(ExecEvent::Exit(status)) => return Ok(ExecOutput { stdout, stderr, status }),
                None => return Err(Error::Protocol("output ended without an exit".into())),
            }
        }
    }
}

impl Drop for Execution {
    fn drop(&mut self) {
        if !self.done {
            // Nobody reads any more: let the agent discard instead of blocking.
            self.conn.ack(self.id, u64::MAX);
        }
    }
}
