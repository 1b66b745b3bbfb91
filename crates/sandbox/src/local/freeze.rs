//! Pause and resume of one local sandbox: the cgroup freezer where the host
//! has one (every process, the agent included, stops), SIGSTOP/SIGCONT by
//! the agent otherwise; and the state every operation checks first, so
//! that any use of a paused sandbox (a kill too) resumes it.

use super::cgroup::SandboxCgroup;
use crate::api::SandboxState;
use crate::client::{Connection, Resume};
use crate::error::{Error, Result};
use crate::wire::Request;
use async_trait::async_trait;
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

pub(crate) struct Freezer {
    id: String,
    conn: Arc<Connection>,
    cgroup: Option<Arc<SandboxCgroup>>,
    /// True once the agent was reaped.
    exited: watch::Receiver<bool>,
    // Read without awaiting; changed only while `transition` is held.
    state: Mutex<SandboxState>,
    transition: tokio::sync::Mutex<()>,
}

impl Freezer {
    pub fn new(
        id: String,
        conn: Arc<Connection>,
        cgroup: Option<Arc<SandboxCgroup>>,
        exited: watch::Receiver<bool>,
    ) -> Self {
        Freezer {
            id,
            conn,
            cgroup,
            exited,
            state: Mutex::new(SandboxState::Running),
            transition: tokio::sync::Mutex::new(()),
        }
    }

    pub fn state(&self) -> SandboxState {
        if *self.exited.borrow() || self.conn.closed().is_some() {
            return SandboxState::Gone;
        }
        *self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn set_state(&self, s: SandboxState) {
        *self.state.lock().unwrap_or_else(|p| p.into_inner()) = s;
    }

    pub fn gone(&self) -> Error {
        Error::Gone(self.conn.closed().unwrap_or_else(|| format!("sandbox {} was destroyed", self.id)))
    }

    async fn freeze(&self, frozen: bool) -> Result<()> {
        match &self.cgroup {
            Some(cg) if cg.can_freeze() => {
                cg.set_frozen(frozen).await.map_err(|e| Error::io("freeze the sandbox cgroup", e))
            }
            _ => {
                let request = if frozen { Request::Pause } else { Request::Resume };
                self.conn.request(&request, Vec::new()).await.map(drop)
            }
        }
    }

    pub async fn pause(&self) -> Result<()> {
        let _t = self.transition.lock().await;
        match self.state() {
            SandboxState::Gone => Err(self.gone()),
            SandboxState::Paused => Ok(()),
            SandboxState::Running => {
                self.freeze(true).await?;
                self.set_state(SandboxState::Paused);
                Ok(())
            }
        }
    }

    pub async fn resume(&self) -> Result<()> {
        let _t = self.transition.lock().await;
        match self.state() {
            SandboxState::Gone => Err(self.gone()),
            SandboxState::Running => Ok(()),
            SandboxState::Paused => {
                self.freeze(false).await?;
                self.set_state(SandboxState::Running);
                Ok(())
            }
        }
    }

    /// Marks the sandbox gone; returns a guard that keeps pause and resume
    /// out while the caller tears it down.
    pub async fn mark_gone(&self) -> tokio::sync::MutexGuard<'_, ()> {
        let guard = self.transition.lock().await;
        self.set_state(SandboxState::Gone);
        guard
    }
}

#[async_trait]
impl Resume for Freezer {
    async fn ensure_running(&self) -> Result<()> {
        match self.state() {
            SandboxState::Running => Ok(()),
            SandboxState::Paused => self.resume().await,
            SandboxState::Gone => Err(self.gone()),
        }
    }
}
