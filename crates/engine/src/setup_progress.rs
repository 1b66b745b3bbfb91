//! The live progress of an environment's setup. While
//! [`sandbox::apply_setup_observed`] runs it is told each step and each piece
//! of output; it keeps the step and the log so far, writes them to the
//! environment's record (`setup`, `setup_log`) at most every [`WRITE_EVERY`]
//! so that `GET /v1/agents/environments/{id}` shows the log growing, and
//! broadcasts the output to the turns waiting for the environment, which pass
//! it on as `agent.session.environment.pending` events.

use crate::environments::Environments;
use crate::record::now;
use protocol::environment::{EnvironmentSetup, SetupState};
use protocol::ids::EnvironmentId;
use sandbox::{LogBuffer, SetupEvent};
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::{Notify, broadcast};
use tokio::time::Instant;

/// The longest a change waits before it is written; output arriving faster
/// is written together, so a chatty `npm install` is a few writes a second.
pub const WRITE_EVERY: Duration = Duration::from_millis(200);

/// Updates a slow waiter may fall behind by before it skips some.
const BACKLOG: usize = 256;

/// A piece of setup output, with where setup is now.
#[derive(Debug, Clone)]
pub struct SetupUpdate {
    pub setup: EnvironmentSetup,
    pub output: String,
}

/// What a new watcher starts from: where setup is and the log so far.
pub struct Watch {
    pub setup: Option<EnvironmentSetup>,
    pub log: String,
    /// What comes after `log`, nothing lost or repeated between them.
    pub updates: broadcast::Receiver<SetupUpdate>,
}

#[derive(Default)]
struct State {
    setup: Option<EnvironmentSetup>,
    log: LogBuffer,
    /// Changed since it was last written.
    dirty: bool,
}

/// One environment's setup as it runs.
pub struct SetupProgress {
    // One lock for the state and the broadcast, so that a watcher's snapshot
    // and its subscription see the same moment.
    state: Mutex<State>,
    tx: broadcast::Sender<SetupUpdate>,
    changed: Notify,
}

impl Default for SetupProgress {
    fn default() -> Self {
        Self { state: Mutex::default(), tx: broadcast::channel(BACKLOG).0, changed: Notify::new() }
    }
}

impl SetupProgress {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Setup starts with `setup` (the sandbox being created).
    pub fn begin(&self, setup: EnvironmentSetup) {
        let mut state = self.lock();
        state.setup = Some(setup);
        state.dirty = true;
    }

    /// Takes one report of [`sandbox::apply_setup_observed`].
    pub fn observe(&self, event: SetupEvent<'_>) {
        let mut state = self.lock();
        let State { setup: Some(setup), log, dirty } = &mut *state else { return };
        match event {
            SetupEvent::Step { name, command, index, .. } => {
                setup.step(name, command, u32::try_from(index).unwrap_or(u32::MAX), now());
            }
            SetupEvent::Log(text) => {
                log.push(text);
                // No receiver is no error: nobody waits.
                let _ = self.tx.send(SetupUpdate { setup: setup.clone(), output: text.to_string() });
            }
        }
        *dirty = true;
        drop(state);
        self.changed.notify_one();
    }

    /// Where setup is and the log so far, and the updates that follow.
    pub fn watch(&self) -> Watch {
        let state = self.lock();
        Watch { setup: state.setup.clone(), log: state.log.as_str().to_string(), updates: self.tx.subscribe() }
    }

    /// Setup ended in `state`: where it was and its whole log, if it had begun.
    /// What the record keeps, whichever progress was last written.
    pub fn finish(&self, outcome: SetupState, at: i64) -> Option<(EnvironmentSetup, String)> {
        let mut state = self.lock();
        state.dirty = false;
        let State { setup: Some(setup), log, .. } = &mut *state else { return None };
        setup.end(outcome, at);
        Some((setup.clone(), log.as_str().to_string()))
    }

    /// What changed since the last call.
    fn take_changes(&self) -> Option<(EnvironmentSetup, String)> {
        let mut state = self.lock();
        if !std::mem::take(&mut state.dirty) {
            return None;
        }
        Some((state.setup.clone()?, state.log.as_str().to_string()))
    }

    /// Runs `work` (the setup) and meanwhile writes its progress to the
    /// environment's record, at most every [`WRITE_EVERY`]. Nothing is written
    /// after `work` ends: the caller writes the outcome.
    pub async fn record_while<T>(
        &self,
        envs: &Environments,
        org_id: &str,
        env_id: &EnvironmentId,
        work: impl Future<Output = T>,
    ) -> T {
        tokio::pin!(work);
        let mut next_write = Instant::now();
        let mut waiting = false;
        loop {
            tokio::select! {
                biased;
                out = &mut work => return out,
                () = self.changed.notified(), if !waiting => waiting = true,
                () = tokio::time::sleep_until(next_write), if waiting => {
                    waiting = false;
                    next_write = Instant::now() + WRITE_EVERY;
                    if let Some((setup, log)) = self.take_changes()
                        && let Err(e) = envs.update(org_id, env_id, |r| {
                            r.setup = Some(setup);
                            r.setup_log = Some(log);
                        }).await
                    {
                        tracing::warn!(environment = %env_id, error = %e, "recording setup progress failed");
                    }
                }
            }
        }
    }
}
