//! Commits in a task of the caller's runtime, for a writer whose commits are
//! futures ([`store::BatchWriter::commits_in_task`]: PostgreSQL's).
//!
//! The task is spawned from the worker that queued the writes and runs there
//! once the caller waits, so the batch goes to the database, and its events
//! to their subscribers' tasks, with no hop to the journal's thread and back
//! (each a wake-up of another CPU). One task commits at a time: it takes the
//! writer out of its slot and puts it back when done (also when dropped
//! mid-commit, the batch then queued again: every write is idempotent), then
//! looks at the queue again, as an inline committer does. What it cannot
//! commit at once (an error, the database away, writes that keep coming) it
//! leaves to the journal's thread, which retries patiently.

use super::{Batch, INLINE_ROUNDS, Shared, fences, lock};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use store::{BatchWriter, Write};

/// How long a task's commit may take before the journal's thread takes the
/// batch over (the database stalled; the writer is the thread's meanwhile).
const STALLED: Duration = Duration::from_secs(5);

impl Shared {
    /// Commits what is queued in a task of the current runtime (at most one
    /// scheduled at a time), or on the journal's thread outside a runtime,
    /// while the database is away, or after a task's commit failed. The task
    /// runs next on the caller's worker once the caller waits (streamed text
    /// a reader waits for), or `after_others` it woke.
    pub(super) fn commit_in_task(self: &Arc<Self>, after_others: bool) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return self.hand_off() };
        if *self.unavailable.borrow() || self.retrying.load(Ordering::SeqCst) {
            return self.hand_off();
        }
        if self.scheduled.swap(true, Ordering::SeqCst) {
            return;
        }
        let shared = Arc::clone(self);
        runtime.spawn(async move {
            // Out of the worker's next slot, where no other worker can take
            // it: the tasks the caller woke (a turn's model request's
            // connection) run first, and an idle worker may commit meanwhile.
            if after_others {
                tokio::task::yield_now().await;
            }
            // Cleared first: a write queued from here on schedules again.
            shared.scheduled.store(false, Ordering::SeqCst);
            shared.drain_in_task().await;
        });
    }

    async fn drain_in_task(self: &Arc<Self>) {
        for _ in 0..INLINE_ROUNDS {
            // Taken (by a task or the thread): its holder looks at the queue again after letting go.
            let Some(writer) = self.take() else { return };
            let mut held = Held { shared: self, writer: Some(writer), batch: None };
            let committed = held.round().await;
            drop(held);
            if !committed {
                break;
            }
            if lock(&self.pending).is_empty() {
                return;
            }
        }
        self.hand_off();
    }

    /// Puts a batch a task could not commit back at the queue's front, for
    /// the journal's thread (the caller hands off).
    fn retry(&self, batch: Vec<Write>, epochs: Vec<Option<i64>>) {
        self.retrying.store(true, Ordering::SeqCst);
        self.requeue(batch, epochs);
    }

    /// The writer, unless another committer holds it.
    fn take(&self) -> Option<Box<dyn BatchWriter>> {
        self.writer.try_lock().ok()?.take()
    }
}

/// The writer taken out of its slot, and the batch in flight: both go back
/// when dropped.
struct Held<'a> {
    shared: &'a Shared,
    writer: Option<Box<dyn BatchWriter>>,
    batch: Option<Batch>,
}

impl Held<'_> {
    /// Commits one batch of what is queued and delivers it (true), or puts it
    /// back at the queue's front for the journal's thread (false).
    async fn round(&mut self) -> bool {
        let shared = self.shared;
        // The writer first: a batch taken from the queue is never left without one.
        let Some(writer) = self.writer.as_mut() else { return false };
        let (batch, epochs) = shared.next_batch();
        if batch.is_empty() {
            return true;
        }
        let fences = fences(&batch, &epochs);
        let began = Instant::now();
        let batch = &*self.batch.insert((batch, epochs)).0;
        let outcome = tokio::time::timeout(STALLED, writer.write_batch_async(batch, &fences)).await;
        let Some((batch, epochs)) = self.batch.take() else { return false };
        match outcome {
            Ok(Ok(refused)) => {
                shared.metrics.journal_committed(began.elapsed());
                shared.finish(&batch, Ok(refused));
                true
            }
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "journal: a task's commit failed; the journal thread takes the batch");
                shared.retry(batch, epochs);
                false
            }
            Err(_) => {
                tracing::warn!("journal: a task's commit stalled; the journal thread takes the batch");
                shared.retry(batch, epochs);
                false
            }
        }
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        // Dropped mid-commit (the runtime ending): the batch goes back first,
        // before the writer can commit what was queued after it.
        let abandoned = self.batch.take().map(|(batch, epochs)| self.shared.retry(batch, epochs)).is_some();
        if let Some(writer) = self.writer.take() {
            *lock(&self.shared.writer) = Some(writer);
        }
        if abandoned {
            self.shared.hand_off();
        }
    }
}

#[cfg(test)]
#[path = "journal_task_tests.rs"]
mod tests;
