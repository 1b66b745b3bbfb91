//! A long-lived process with piped stdio (an MCP server): its stdin as an
//! `AsyncWrite`, its stdout as an `AsyncRead`, and a handle to kill it and
//! observe its exit. Its stderr is kept as a bounded tail for diagnostics.

use super::{Connection, Killer, ProcEvent, Resume};
use crate::api::ExitStatus;
use crate::error::{Error, Result};
use crate::wire::{Frame, Kind};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, watch};

/// How much of a process's stderr is kept.
const STDERR_TAIL: usize = 64 << 10;

/// A started long-lived process.
pub struct StdioProcess {
    pub stdin: Box<dyn AsyncWrite + Send + Unpin>,
    pub stdout: Box<dyn AsyncRead + Send + Unpin>,
    pub handle: ProcessHandle,
}

type Status = Option<std::result::Result<ExitStatus, String>>;

/// Observes and kills a long-lived process; clones share it.
#[derive(Clone)]
pub struct ProcessHandle {
    killer: Killer,
    pid: i32,
    status: watch::Receiver<Status>,
    stderr: Arc<Mutex<VecDeque<u8>>>,
}

impl ProcessHandle {
    /// Its pid inside the sandbox (also its process group id).
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Kills its process group.
    pub async fn kill(&self) -> Result<()> {
        self.killer.kill().await
    }

    /// Its exit status, once it exited.
    pub fn try_status(&self) -> Option<ExitStatus> {
        self.status.borrow().as_ref().and_then(|s| s.as_ref().ok().copied())
    }

    /// Waits for it to exit.
    pub async fn wait(&self) -> Result<ExitStatus> {
        let mut rx = self.status.clone();
        let status = rx.wait_for(|s| s.is_some()).await.map_err(|_| Error::Gone("the process watcher ended".into()))?;
        match status.as_ref() {
            Some(Ok(s)) => Ok(*s),
            Some(Err(reason)) => Err(Error::Gone(reason.clone())),
            None => Err(Error::Gone("no exit status".into())),
        }
    }

    /// The last 64 KiB it wrote to stderr.
    pub fn stderr_tail(&self) -> Vec<u8> {
        self.stderr.lock().map(|t| t.iter().copied().collect()).unwrap_or_default()
    }
}

pub(crate) fn attach(
    conn: Arc<Connection>,
    id: u32,
    pid: i32,
    events: mpsc::UnboundedReceiver<ProcEvent>,
    resume: Option<Arc<dyn Resume>>,
) -> StdioProcess {
    let (stdin_user, stdin_pump) = tokio::io::duplex(64 << 10);
    let (stdout_pump, stdout_user) = tokio::io::duplex(256 << 10);
    let (status_tx, status) = watch::channel(None);
    let stderr = Arc::new(Mutex::new(VecDeque::new()));
    tokio::spawn(pump_stdin(conn.clone(), id, stdin_pump));
    tokio::spawn(pump_output(conn.clone(), id, events, stdout_pump, stderr.clone(), status_tx));
    StdioProcess {
        stdin: Box::new(stdin_user),
        stdout: Box::new(stdout_user),
        handle: ProcessHandle { killer: Killer::new(conn, id, resume), pid, status, stderr },
    }
}

async fn pump_stdin(conn: Arc<Connection>, id: u32, mut from: tokio::io::DuplexStream) {
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => {
                let _ = conn.send(&Frame::data(Kind::StdinEof, id, Vec::new()));
                return;
            }
            Ok(n) => {
                if conn.send(&Frame::data(Kind::Stdin, id, buf[..n].to_vec())).is_err() {
                    return;
                }
            }
        }
    }
}

async fn pump_output(
    conn: Arc<Connection>,
    id: u32,
    mut events: mpsc::UnboundedReceiver<ProcEvent>,
    mut stdout: tokio::io::DuplexStream,
    stderr: Arc<Mutex<VecDeque<u8>>>,
    status: watch::Sender<Status>,
) {
    let mut reader_gone = false;
    while let Some(event) = events.recv().await {
        match event {
            ProcEvent::Stdout(b) => {
                if !reader_gone && stdout.write_all(&b).await.is_err() {
                    reader_gone = true;
                }
                conn.ack(id, b.len() as u64);
            }
            ProcEvent::Stderr(b) => {
                if let Ok(mut tail) = stderr.lock() {
                    tail.extend(b.iter().copied());
                    let excess = tail.len().saturating_sub(STDERR_TAIL);
                    tail.drain(..excess);
                }
                conn.ack(id, b.len() as u64);
            }
            ProcEvent::Exited(e) => {
                let _ = status.send(Some(Ok(e.into())));
                return;
            }
            ProcEvent::Lost(reason) => {
                let _ = status.send(Some(Err(reason)));
                return;
            }
        }
    }
    let _ = status.send(Some(Err("the sandbox connection closed".into())));
}
