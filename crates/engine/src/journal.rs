//! The journal: the engine's writes go through one ordered queue and are
//! committed in batches, one transaction per batch, through the store's
//! [`BatchWriter`] (a database connection of its own). After each batch the
//! delivery hook sees its writes (the bus broadcasts the batch's events from
//! there), so nothing reaches a live subscriber before it is on disk.
//!
//! Who commits, so that no thread hop stands between an event and its
//! subscribers and no async task ever waits on a lock:
//! - [`Journal::commit`] commits everything queued at once, on the caller's
//!   thread (streamed text), unless a commit is under way: that committer
//!   takes the new writes too before it lets go.
//! - [`Journal::commit_soon`] leaves it to a task of its own that runs once
//!   the caller waits (a turn about to call its model goes on at once).
//! - [`Journal::flush`] lets the tasks its caller started run first, then
//!   commits, and returns once everything queued before it is committed.
//! - A writer whose commits are futures (PostgreSQL's: a network round
//!   trip) never commits on the caller's thread: both ask a task of the
//!   caller's runtime to commit, which runs once the caller waits, and
//!   delivers from there ([`task`]).
//! - A commit that would have to wait for a database lock goes to the
//!   journal's own thread, which waits and retries; so does every commit
//!   that failed in a task. The thread also commits whatever was left
//!   queued and asks for checkpoints of the write-ahead log.
//!
//! In a cluster each write carries the epoch of its session's lease when it
//! was queued, and the store refuses a session's writes once another node
//! took its lease over ([`crate::fence`]): they are not delivered, and a
//! flush of them says so ([`Journal::refused`]).
//!
//! While the database cannot be reached (a PostgreSQL restart), a batch is
//! neither dropped nor delivered: it stays first in the queue and the journal
//! thread retries it until the database is back, so no write is lost and no
//! turn is left unfinished; meanwhile flushes fail at once with
//! [`FlushError::Unavailable`] instead of waiting.

use crate::fence::Leases;
use protocol::ids::SessionId;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};
use store::{BatchWriter, Fence, Write};
use telemetry::{Gauge, Metrics};
use tokio::sync::watch;

/// Writes taken into one transaction at most.
const BATCH: usize = 1024;
/// How often the journal thread looks for writes nobody committed and
/// whether the write-ahead log wants a checkpoint.
const TICK: Duration = Duration::from_millis(200);
/// Batches a task commits inline at most before the journal thread takes over.
const INLINE_ROUNDS: usize = 4;
/// Writes after which the write-ahead log is checkpointed even while commits
/// go on (a few megabytes of log, about SQLite's own default): a log copied
/// back in full is overwritten from its start, not grown.
const CHECKPOINT_AFTER: u64 = 500;
/// Failed batches remembered for their flushers.
const FAILURES: usize = 64;

/// A batch taken from the queue, with its writes' lease epochs.
type Batch = (Vec<Write>, Vec<Option<i64>>);

/// Called with each batch once it is committed (or failed for good).
pub type Deliver = Box<dyn Fn(&[Write]) + Send + Sync>;

/// Why a flush did not see its writes committed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FlushError {
    /// The batch holding them failed for good (logged).
    #[error("{0}")]
    Failed(String),
    /// The database cannot be reached now; the writes stay queued and are
    /// committed once it is back.
    #[error("the database is unavailable")]
    Unavailable,
    #[error("the journal has stopped")]
    Stopped,
}

/// The handle to the journal.
pub struct Journal {
    shared: Arc<Shared>,
}

struct Shared {
    /// Writes queued and not yet taken by a committer, oldest first, each
    /// with the epoch of the lease it was made under.
    pending: Mutex<VecDeque<(Write, Option<i64>)>>,
    /// The leases this node holds (writes are tagged with them).
    leases: Leases,
    /// The store connection; whoever holds it commits (a task committing
    /// takes it out: see [`task`]).
    writer: Mutex<Option<Box<dyn BatchWriter>>>,
    deliver: OnceLock<Deliver>,
    /// Writes queued so far (a position to flush to).
    queued: AtomicU64,
    /// Writes committed (or failed for good) so far, in queue order.
    committed: watch::Sender<u64>,
    /// Positions (first, last) of recent batches that failed, with the error.
    failures: Mutex<VecDeque<(u64, u64, String)>>,
    /// Positions (first, last) of recent batches in which the store refused
    /// some sessions' writes, with those sessions.
    refusals: Mutex<VecDeque<(u64, u64, Vec<SessionId>)>>,
    /// Whether the last attempt found the database unreachable (batches wait).
    unavailable: watch::Sender<bool>,
    /// Whether a task to commit is scheduled and not yet started.
    scheduled: AtomicBool,
    /// Set when a commit is handed to the journal thread; the thread waits on it.
    handoff: Mutex<bool>,
    /// Whether callers may commit on their own thread (the writer says; else
    /// every commit is the journal thread's).
    inline: bool,
    /// Whether commits run in a task of the caller's runtime (see [`task`]).
    in_task: bool,
    /// Set when a task's commit failed: the journal thread commits until
    /// it has committed everything queued.
    retrying: AtomicBool,
    wake: Condvar,
    /// Each batch's commit time goes here.
    metrics: Arc<Metrics>,
}

fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Journal {
    /// Starts the journal and its thread (the thread ends once the journal is
    /// dropped); its commits and queue depth go to `metrics`.
    pub fn start(batches: Box<dyn BatchWriter>, metrics: Arc<Metrics>) -> std::io::Result<Self> {
        let (inline, in_task) = (batches.commits_inline(), batches.commits_in_task());
        let shared = Arc::new(Shared {
            inline,
            in_task,
            retrying: AtomicBool::new(false),
            pending: Mutex::default(),
            leases: Leases::default(),
            writer: Mutex::new(Some(batches)),
            deliver: OnceLock::new(),
            queued: AtomicU64::new(0),
            committed: watch::Sender::new(0),
            failures: Mutex::default(),
            refusals: Mutex::default(),
            unavailable: watch::Sender::new(false),
            scheduled: AtomicBool::new(false),
            handoff: Mutex::new(false),
            wake: Condvar::new(),
            metrics: Arc::clone(&metrics),
        });
        let depth = Arc::downgrade(&shared);
        // Committed first: what is committed was queued before, so the difference never goes below zero.
        let read = move || {
            depth.upgrade().map_or(0, |s| {
                let committed = *s.committed.borrow();
                s.queued.load(Ordering::SeqCst).saturating_sub(committed)
            })
        };
        metrics.read(Gauge::JournalQueueDepth, Box::new(read));
        let weak = Arc::downgrade(&shared);
        std::thread::Builder::new().name("rebyte-journal".into()).spawn(move || background(weak))?;
        Ok(Self { shared })
    }

    /// Sets what sees each batch after its commit (once; later calls are ignored).
    pub fn on_commit(&self, deliver: Deliver) {
        let _ = self.shared.deliver.set(deliver);
    }

    /// Queues a write; the next [`Self::commit`] or [`Self::flush`] commits it
    /// (the journal thread does, at the latest, within a tick).
    pub fn write(&self, write: Write) {
        let epoch = self.shared.leases.epoch(write.session_id());
        // Counted under the queue's lock: positions follow the queue's order.
        let mut pending = lock(&self.shared.pending);
        pending.push_back((write, epoch));
        self.shared.queued.fetch_add(1, Ordering::SeqCst);
    }

    /// The leases this node holds, which tag the writes queued.
    pub fn leases(&self) -> &Leases {
        &self.shared.leases
    }

    /// Whether the store refused writes of `session` queued after position
    /// `since` (another node took the session over while this one was cut
    /// off), among the recent batches remembered.
    pub fn refused(&self, session: SessionId, since: u64) -> bool {
        lock(&self.shared.refusals).iter().any(|(_, last, sessions)| *last > since && sessions.contains(&session))
    }

    /// How many writes were queued so far: a position to [`Self::flush_to`].
    pub fn position(&self) -> u64 {
        self.shared.queued.load(Ordering::SeqCst)
    }

    /// Commits what is queued now, on this thread, unless another committer
    /// is at work (it takes these writes too) or the database is locked (the
    /// journal thread takes over). Never waits for a lock. For what a reader
    /// is waiting to see (streamed text).
    pub fn commit(&self) {
        self.shared.commit_now();
    }

    /// Commits what is queued as soon as the caller's task next waits: a
    /// task of its own does (at most one is scheduled at a time), so the
    /// caller goes on at once (a turn about to call its model). Outside a
    /// Tokio runtime, the journal thread does.
    pub fn commit_soon(&self) {
        if self.shared.in_task {
            return self.shared.commit_in_task(true);
        }
        if self.shared.scheduled.swap(true, Ordering::SeqCst) {
            return;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                let shared = Arc::clone(&self.shared);
                runtime.spawn(async move {
                    // Cleared first: a write queued from here on schedules again.
                    shared.scheduled.store(false, Ordering::SeqCst);
                    shared.commit_now();
                });
            }
            Err(_) => {
                self.shared.scheduled.store(false, Ordering::SeqCst);
                self.shared.hand_off();
            }
        }
    }

    /// Waits until every write queued before this call is committed.
    pub async fn flush(&self) -> Result<(), FlushError> {
        self.flush_to(self.position()).await
    }

    /// Waits until the first `position` writes are committed; an error when
    /// the batch holding the last of them failed, or at once while the
    /// database cannot be reached.
    pub async fn flush_to(&self, position: u64) -> Result<(), FlushError> {
        let shared = &self.shared;
        if *shared.committed.borrow() < position {
            let mut down = shared.unavailable.subscribe();
            if *down.borrow_and_update() {
                shared.hand_off();
                return Err(FlushError::Unavailable);
            }
            // Tasks this caller started (a turn's worker) run first, then the
            // commit happens here unless a committer already took it.
            tokio::task::yield_now().await;
            shared.commit_now();
            let mut rx = shared.committed.subscribe();
            tokio::select! {
                committed = rx.wait_for(|c| *c >= position) => {
                    committed.map_err(|_| FlushError::Stopped)?;
                }
                _ = down.wait_for(|d| *d) => return Err(FlushError::Unavailable),
            }
        }
        let failures = lock(&shared.failures);
        match failures.iter().find(|(first, last, _)| (first + 1..=*last).contains(&position)) {
            Some((_, _, e)) => Err(FlushError::Failed(e.clone())),
            None => Ok(()),
        }
    }
}

impl Shared {
    fn commit_now(self: &Arc<Self>) {
        if self.in_task {
            return self.commit_in_task(false);
        }
        if !self.inline {
            return self.hand_off();
        }
        for _ in 0..INLINE_ROUNDS {
            // Busy: the holder looks at the queue again after letting go.
            let Ok(mut slot) = self.writer.try_lock() else { return };
            let Some(writer) = slot.as_mut() else { return };
            let done = self.drain(writer.as_mut(), false, INLINE_ROUNDS);
            drop(slot);
            if !done {
                break;
            }
            if lock(&self.pending).is_empty() {
                return;
            }
        }
        // The database is locked, or writes keep coming (a task committing for
        // everyone would stall its own turn): the journal thread takes over.
        self.hand_off();
    }

    fn hand_off(&self) {
        let mut handoff = lock(&self.handoff);
        if !*handoff {
            *handoff = true;
            self.wake.notify_one();
        }
    }

    /// Commits queued writes until none are left, in `rounds` batches at
    /// most (false when some are left). With `patient` false a batch that
    /// cannot be committed at once goes back to the queue's front and false
    /// is returned; with it true, waits for locks and retries a few times
    /// before giving the batch up (reported to its flushers and logged).
    fn drain(&self, writer: &mut dyn BatchWriter, patient: bool, rounds: usize) -> bool {
        for _ in 0..rounds {
            let (batch, epochs) = self.next_batch();
            if batch.is_empty() {
                return true;
            }
            let fences = fences(&batch, &epochs);
            let began = Instant::now();
            let mut outcome = writer.write_batch(&batch, &fences, patient);
            if outcome.is_err() && !patient {
                self.requeue(batch, epochs);
                return false;
            }
            // A locked database clears; a few retries, then the error is final.
            for attempt in 0..3 {
                match &outcome {
                    Ok(_) => break,
                    Err(e) if e.is_unavailable() => break,
                    Err(_) => {}
                }
                std::thread::sleep(Duration::from_millis(20 << attempt));
                outcome = writer.write_batch(&batch, &fences, true);
            }
            match outcome {
                // Kept for the journal thread to retry until the database is back.
                Err(e) if e.is_unavailable() => {
                    if !self.unavailable.send_replace(true) {
                        tracing::error!(error = %e, "journal: the database is unavailable; writes wait for it");
                    }
                    self.requeue(batch, epochs);
                    // The writer waited a while already; a pause before the next round.
                    std::thread::sleep(Duration::from_millis(100));
                    return false;
                }
                outcome => {
                    if self.unavailable.send_replace(false) {
                        tracing::info!("journal: the database is back");
                    }
                    self.metrics.journal_committed(began.elapsed());
                    self.finish(&batch, outcome.map_err(|e| e.to_string()));
                }
            }
        }
        lock(&self.pending).is_empty()
    }

    /// The oldest queued writes, [`BATCH`] at most, with their lease epochs.
    fn next_batch(&self) -> Batch {
        let mut pending = lock(&self.pending);
        let n = pending.len().min(BATCH);
        pending.drain(..n).unzip()
    }

    /// Puts a batch back at the queue's front, in order.
    fn requeue(&self, batch: Vec<Write>, epochs: Vec<Option<i64>>) {
        let mut pending = lock(&self.pending);
        for queued in batch.into_iter().zip(epochs).rev() {
            pending.push_front(queued);
        }
    }

    /// Counts a batch as done and delivers it. A failed batch is delivered all
    /// the same: live subscribers keep seeing the session, and the failure is
    /// in the log and in its flushers' answers (the store cannot be written).
    /// The writes of sessions the store refused (another node holds their
    /// leases now) are not delivered: they were never committed.
    fn finish(&self, batch: &[Write], outcome: Result<Vec<SessionId>, String>) {
        let first = *self.committed.borrow();
        let last = first + batch.len() as u64;
        let mut kept = None;
        match outcome {
            Ok(refused) if refused.is_empty() => {}
            Ok(refused) => {
                self.leases.lose(&refused);
                kept = Some(batch.iter().filter(|w| !refused.contains(&w.session_id())).cloned().collect::<Vec<_>>());
                remember(&self.refusals, (first, last, refused));
            }
            Err(e) => {
                tracing::error!(error = %e, writes = batch.len(), "journal batch failed");
                remember(&self.failures, (first, last, e));
            }
        }
        if let Some(deliver) = self.deliver.get() {
            deliver(kept.as_deref().unwrap_or(batch));
        }
        self.committed.send_replace(last);
    }
}

/// Adds a recent batch's outcome, forgetting the oldest past [`FAILURES`].
fn remember<T>(recent: &Mutex<VecDeque<T>>, outcome: T) {
    let mut recent = lock(recent);
    if recent.len() == FAILURES {
        recent.pop_front();
    }
    recent.push_back(outcome);
}

/// A batch's fenced sessions: each one whose writes were made under a lease,
/// with the earliest epoch among them (a later one of this node's keeps
/// earlier epochs' writes; a lost lease's epoch keeps none).
fn fences(batch: &[Write], epochs: &[Option<i64>]) -> Vec<Fence> {
    let mut fences: Vec<Fence> = Vec::new();
    for (write, epoch) in batch.iter().zip(epochs) {
        let Some(epoch) = *epoch else { continue };
        let session_id = write.session_id();
        match fences.iter_mut().find(|f| f.session_id == session_id) {
            Some(fence) => fence.epoch = fence.epoch.min(epoch),
            None => fences.push(Fence { session_id, epoch }),
        }
    }
    fences
}

/// The journal thread: takes over commits that would wait for a lock, commits
/// what was left queued, and asks the writer for a checkpoint of the
/// write-ahead log (its connection does not make one while committing; see
/// [`BatchWriter::checkpoint`]): once commits pause for a tick, or after
/// [`CHECKPOINT_AFTER`] writes.
fn background(shared: std::sync::Weak<Shared>) {
    let (mut checkpointed, mut last_tick) = (0, 0);
    loop {
        let Some(shared) = shared.upgrade() else { return };
        {
            let handoff = lock(&shared.handoff);
            let (mut handoff, _) =
                shared.wake.wait_timeout_while(handoff, TICK, |h| !*h).unwrap_or_else(|e| e.into_inner());
            *handoff = false;
        }
        let mut slot = lock(&shared.writer);
        // A task is committing: it hands off what it leaves.
        let Some(writer) = slot.as_mut() else { continue };
        if shared.drain(writer.as_mut(), true, usize::MAX) {
            shared.retrying.store(false, Ordering::SeqCst);
        }
        let committed = *shared.committed.borrow();
        if committed != checkpointed && (committed == last_tick || committed - checkpointed >= CHECKPOINT_AFTER) {
            checkpointed = committed;
            if let Err(e) = writer.checkpoint() {
                tracing::warn!(error = %e, "write-ahead log checkpoint failed");
            }
            shared.drain(writer.as_mut(), true, usize::MAX);
        }
        last_tick = committed;
        drop(slot);
        // Writes queued while this thread held the connection are its to commit.
        if !lock(&shared.pending).is_empty() {
            *lock(&shared.handoff) = true;
        }
    }
}

#[path = "journal_task.rs"]
mod task;

#[cfg(test)]
#[path = "journal_tests.rs"]
mod tests;
