//! Commits in a task, against a real SQLite file behind a writer whose
//! commits are futures (as PostgreSQL's are): made and delivered on the
//! runtime's workers, in order; a refused or abandoned commit goes to the
//! journal's thread and loses nothing, as does one that stalls.

use crate::journal::Journal;
use protocol::event::{Event, EventBody, SessionError};
use protocol::ids::{EventId, SessionId};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use store::{BatchFuture, BatchWriter, Fence, SqliteStore, Store, Write};
use tokio::sync::Notify;

/// SQLite's writer, its commits made futures, refused or stalled on demand.
struct Futures {
    inner: Box<dyn BatchWriter>,
    /// How many commits to refuse before the next one goes through.
    refuse: Arc<AtomicUsize>,
    /// When set, the next commit never ends; `entered` is told it began.
    stall: Arc<AtomicBool>,
    entered: Arc<Notify>,
}

impl BatchWriter for Futures {
    fn write_batch(&mut self, writes: &[Write], fences: &[Fence], wait: bool) -> store::Result<Vec<SessionId>> {
        self.inner.write_batch(writes, fences, wait)
    }

    fn checkpoint(&mut self) -> store::Result<()> {
        self.inner.checkpoint()
    }

    fn commits_inline(&self) -> bool {
        false
    }

    fn commits_in_task(&self) -> bool {
        true
    }

    fn write_batch_async<'a>(&'a mut self, writes: &'a [Write], fences: &'a [Fence]) -> BatchFuture<'a> {
        Box::pin(async move {
            if self.stall.swap(false, Ordering::SeqCst) {
                self.entered.notify_one();
                std::future::pending::<()>().await;
            }
            if self.refuse.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok() {
                return Err(store::Error::Writer("refused by the test".into()));
            }
            self.inner.write_batch(writes, fences, false)
        })
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    store: Arc<dyn Store>,
    journal: Journal,
    /// Each delivered event's sequence number and the name of the thread that delivered it.
    delivered: Arc<Mutex<Vec<(i64, String)>>>,
    refuse: Arc<AtomicUsize>,
    stall: Arc<AtomicBool>,
    entered: Arc<Notify>,
    session: SessionId,
}

async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&dir.path().join("rebyte.db")).await.unwrap());
    let (refuse, stall, entered) = (Arc::default(), Arc::default(), Arc::default());
    let writer = Futures {
        inner: store.batch_writer().unwrap(),
        refuse: Arc::clone(&refuse),
        stall: Arc::clone(&stall),
        entered: Arc::clone(&entered),
    };
    let journal = Journal::start(Box::new(writer), Default::default()).unwrap();
    let delivered = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&delivered);
    journal.on_commit(Box::new(move |writes| {
        let by = std::thread::current().name().unwrap_or("").to_string();
        for w in writes {
            if let Write::Event { event, .. } = w {
                sink.lock().unwrap().push((event.event_id.seq(), by.clone()));
            }
        }
    }));
    Fixture { _dir: dir, store, journal, delivered, refuse, stall, entered, session: SessionId::new() }
}

impl Fixture {
    fn write(&self, seqs: std::ops::RangeInclusive<i64>) {
        for seq in seqs {
            let error =
                SessionError { code: None, message: format!("event {seq}"), param: None, kind: "warning".into() };
            let body = EventBody::Error { session_id: self.session, error };
            let event = Arc::new(Event::new(EventId::from_seq(seq), body));
            self.journal.write(Write::Event { session_id: self.session, event });
        }
    }

    async fn stored(&self) -> Vec<i64> {
        let events = self.store.events_after(self.session, 0, 100).await.unwrap();
        events.iter().map(|e| e.event_id.seq()).collect()
    }

    /// Writes one event at a time from `seq` on until a task, not the
    /// journal's thread, delivers one (once the thread has committed
    /// everything queued, tasks commit again); the last sequence number.
    async fn tasks_commit_again(&self, mut seq: i64) -> i64 {
        loop {
            self.write(seq..=seq);
            self.journal.flush().await.unwrap();
            if self.delivered().last() == Some(&(seq, false)) {
                return seq;
            }
            assert!(seq < 100, "tasks commit again once the thread has caught up");
            seq += 1;
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }

    /// The sequence numbers delivered, and whether the journal's thread delivered each.
    fn delivered(&self) -> Vec<(i64, bool)> {
        self.delivered.lock().unwrap().iter().map(|(seq, by)| (*seq, by == "rebyte-journal")).collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_of_the_runtime_commits_then_delivers_in_order() {
    let f = fixture().await;
    f.write(1..=3);
    f.journal.commit();
    f.write(4..=4);
    f.journal.commit_soon();
    f.journal.flush().await.unwrap();
    f.write(5..=6);
    f.journal.flush().await.unwrap();
    assert_eq!(f.stored().await, [1, 2, 3, 4, 5, 6]);
    let by_tasks: Vec<_> = (1..=6).map(|seq| (seq, false)).collect();
    assert_eq!(f.delivered(), by_tasks, "delivered once each, in order, by the runtime's workers");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_commit_goes_to_the_journal_thread_and_loses_nothing() {
    let f = fixture().await;
    f.refuse.store(1, Ordering::SeqCst);
    f.write(1..=2);
    f.journal.commit();
    f.journal.flush().await.unwrap();
    assert_eq!(f.delivered(), [(1, true), (2, true)], "the thread took the refused batch");
    let seq = f.tasks_commit_again(3).await;
    assert_eq!(f.stored().await, (1..=seq).collect::<Vec<_>>());
    assert_eq!(f.delivered().iter().map(|(seq, _)| *seq).collect::<Vec<_>>(), (1..=seq).collect::<Vec<_>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_dropped_with_its_runtime_is_made_by_the_journal_thread() {
    let f = fixture().await;
    f.stall.store(true, Ordering::SeqCst);
    // A runtime of its own commits, and ends while its task's commit waits.
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(async {
                f.write(1..=2);
                f.journal.commit();
                f.entered.notified().await;
            });
        });
    });
    let flushed = tokio::time::timeout(std::time::Duration::from_secs(10), f.journal.flush()).await;
    flushed.expect("the batch was queued again").unwrap();
    assert_eq!(f.stored().await, [1, 2]);
    assert_eq!(f.delivered().iter().map(|(seq, _)| *seq).collect::<Vec<_>>(), [1, 2], "delivered once each");
}

#[tokio::test]
async fn a_stalled_commit_is_taken_over_by_the_journal_thread() {
    let f = fixture().await;
    f.stall.store(true, Ordering::SeqCst);
    f.write(1..=2);
    f.journal.commit();
    f.entered.notified().await;
    // The task's commit now never ends. The clock, paused, moves only as the test says.
    tokio::time::pause();
    tokio::time::advance(std::time::Duration::from_millis(4900)).await;
    tokio::task::yield_now().await;
    // Real time for the journal's thread, had the batch been handed to it.
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(f.delivered(), [], "still the task's before its 5 s");
    tokio::time::advance(std::time::Duration::from_millis(200)).await;
    tokio::time::resume();
    let flushed = tokio::time::timeout(std::time::Duration::from_secs(10), f.journal.flush()).await;
    flushed.expect("the stalled batch was taken over").unwrap();
    assert_eq!(f.stored().await, [1, 2]);
    assert_eq!(f.delivered(), [(1, true), (2, true)], "the journal's thread committed the stalled batch");
    f.tasks_commit_again(3).await;
}
