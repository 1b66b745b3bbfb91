//! The journal: the engine's writes go through one ordered queue that a
//! writer task commits in batches, one transaction per batch. A running turn
//! never waits on the disk; whoever must read what was written — a caller
//! that needs its submission durable, a handler about to read a turn, an
//! event replay — awaits [`Journal::flush`], which returns once everything
//! queued before it is committed. After each batch the writer hands its
//! writes to the delivery hook (the bus broadcasts the batch's events from
//! there), so nothing reaches a live subscriber before it is on disk.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use store::{Store, Write};
use tokio::sync::{mpsc, oneshot};

/// Writes taken into one transaction at most.
const BATCH: usize = 1024;

enum Op {
    Write(Box<Write>),
    Flush(oneshot::Sender<Result<(), String>>),
}

/// Called with each batch once it is committed (or failed for good).
pub type Deliver = Box<dyn Fn(&[Write]) + Send + Sync>;

/// The handle to the writer task.
pub struct Journal {
    tx: mpsc::UnboundedSender<Op>,
    deliver: Arc<OnceLock<Deliver>>,
    /// Writes queued so far, and writes committed so far: a flush with
    /// nothing outstanding returns without a round trip to the writer.
    queued: Arc<AtomicU64>,
    committed: Arc<AtomicU64>,
}

impl Journal {
    /// Starts the writer task.
    pub fn start(store: Arc<dyn Store>) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let committed = Arc::new(AtomicU64::new(0));
        let deliver = Arc::new(OnceLock::new());
        tokio::spawn(writer(store, rx, Arc::clone(&committed), Arc::clone(&deliver)));
        Self { tx, deliver, queued: Arc::new(AtomicU64::new(0)), committed }
    }

    /// Sets what sees each batch after its commit (once; later calls are ignored).
    pub fn on_commit(&self, deliver: Deliver) {
        let _ = self.deliver.set(deliver);
    }

    /// Queues a write.
    pub fn write(&self, write: Write) {
        self.queued.fetch_add(1, Ordering::SeqCst);
        if self.tx.send(Op::Write(Box::new(write))).is_err() {
            tracing::error!("the journal writer has stopped; a write was lost");
        }
    }

    /// How many writes were queued so far: a position to [`Self::flush_to`].
    pub fn position(&self) -> u64 {
        self.queued.load(Ordering::SeqCst)
    }

    /// Waits until every write queued before this call is committed.
    pub async fn flush(&self) -> Result<(), String> {
        self.flush_to(self.position()).await
    }

    /// Waits until the first `position` writes are committed.
    pub async fn flush_to(&self, position: u64) -> Result<(), String> {
        if self.committed.load(Ordering::SeqCst) >= position {
            return Ok(());
        }
        let (tx, rx) = oneshot::channel();
        self.tx.send(Op::Flush(tx)).map_err(|_| "the journal writer has stopped".to_string())?;
        rx.await.map_err(|_| "the journal writer has stopped".to_string())?
    }
}

async fn writer(
    store: Arc<dyn Store>,
    mut rx: mpsc::UnboundedReceiver<Op>,
    committed: Arc<AtomicU64>,
    deliver: Arc<OnceLock<Deliver>>,
) {
    let mut writes = Vec::with_capacity(BATCH);
    let mut waiters = Vec::new();
    while let Some(first) = rx.recv().await {
        let mut next = Some(first);
        while let Some(op) = next.take() {
            match op {
                Op::Write(w) => writes.push(*w),
                Op::Flush(w) => waiters.push(w),
            }
            if writes.len() < BATCH {
                next = rx.try_recv().ok();
            }
        }
        let mut outcome = Ok(());
        // A failed batch is retried a few times (a locked database clears);
        // after that the error is reported to every waiter and logged.
        for attempt in 0..3 {
            outcome = store.write_batch(&writes).await.map_err(|e| e.to_string());
            if outcome.is_ok() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20 << attempt)).await;
        }
        if let Err(e) = &outcome {
            // Delivered all the same: live subscribers keep seeing the session, and the
            // failure is in the log (the store cannot be written at all).
            tracing::error!(error = %e, writes = writes.len(), "journal batch failed");
        }
        committed.fetch_add(writes.len() as u64, Ordering::SeqCst);
        if let Some(deliver) = deliver.get() {
            deliver(&writes);
        }
        writes.clear();
        for w in waiters.drain(..) {
            let _ = w.send(outcome.clone());
        }
    }
}
