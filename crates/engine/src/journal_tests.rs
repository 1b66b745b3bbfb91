//! The journal against a real SQLite file: ordering, delivery after commit,
//! hand-off when the database is locked, the thread's safety net, failures.

use super::*;
use protocol::event::{Event, EventBody, SessionError};
use protocol::ids::SessionId;
use std::sync::Arc;
use std::time::Instant;
use store::{SqliteStore, Store};

struct Fixture {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
    store: Arc<dyn Store>,
    journal: Journal,
    /// Each delivered event's sequence number and the thread that delivered it.
    delivered: Arc<Mutex<Vec<(i64, std::thread::ThreadId)>>>,
    session: SessionId,
}

async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rebyte.db");
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).await.unwrap());
    let journal = Journal::start(store.batch_writer().unwrap(), Default::default()).unwrap();
    let delivered = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&delivered);
    journal.on_commit(Box::new(move |writes| {
        for w in writes {
            if let Write::Event { event, .. } = w {
                sink.lock().unwrap().push((event.event_id.seq(), std::thread::current().id()));
            }
        }
    }));
    Fixture { _dir: dir, path, store, journal, delivered, session: SessionId::new() }
}

impl Fixture {
    fn event(&self, seq: i64) -> Write {
        let error = SessionError { code: None, message: format!("event {seq}"), param: None, kind: "warning".into() };
        let body = EventBody::Error { session_id: self.session, error };
        Write::Event {
            session_id: self.session,
            event: Arc::new(Event::new(protocol::ids::EventId::from_seq(seq), body)),
        }
    }

    async fn stored(&self) -> Vec<i64> {
        let events = self.store.events_after(self.session, 0, 100).await.unwrap();
        events.iter().map(|e| e.event_id.seq()).collect()
    }

    fn delivered(&self) -> Vec<i64> {
        self.delivered.lock().unwrap().iter().map(|(seq, _)| *seq).collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_stores_then_delivers_in_order_before_it_returns() {
    let f = fixture().await;
    for seq in 1..=3 {
        f.journal.write(f.event(seq));
    }
    assert!(f.delivered().is_empty(), "nothing is delivered before a commit");
    f.journal.commit();
    assert_eq!(f.delivered(), vec![1, 2, 3], "committed and delivered on the caller's thread");
    assert_eq!(f.stored().await, vec![1, 2, 3]);
    assert_eq!(f.journal.position(), 3);
    f.journal.flush().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locked_database_hands_the_commit_to_the_thread_and_delivers_nothing_before() {
    let f = fixture().await;
    let lock = rusqlite::Connection::open(&f.path).unwrap();
    lock.execute_batch("BEGIN IMMEDIATE").unwrap();
    f.journal.write(f.event(1));
    let started = Instant::now();
    f.journal.commit();
    assert!(started.elapsed() < Duration::from_millis(500), "commit never waits for a lock");
    let flush = f.journal.flush();
    tokio::pin!(flush);
    let waited = tokio::time::timeout(Duration::from_millis(300), &mut flush).await;
    assert!(waited.is_err(), "the flush waits while the database is locked");
    assert!(f.delivered().is_empty(), "nothing reaches a subscriber before its commit");
    lock.execute_batch("COMMIT").unwrap();
    tokio::time::timeout(Duration::from_secs(10), flush)
        .await
        .expect("the thread commits once the lock is gone")
        .unwrap();
    assert_eq!(f.delivered(), vec![1]);
    assert_eq!(f.stored().await, vec![1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_nobody_commits_are_committed_by_the_thread() {
    let f = fixture().await;
    f.journal.write(f.event(7));
    let deadline = Instant::now() + Duration::from_secs(5);
    while f.stored().await.is_empty() {
        assert!(Instant::now() < deadline, "the journal thread commits leftovers within a tick");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(f.delivered(), vec![7]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commit_soon_commits_once_the_caller_waits() {
    let f = fixture().await;
    f.journal.write(f.event(1));
    f.journal.commit_soon();
    f.journal.write(f.event(2));
    f.journal.commit_soon();
    f.journal.flush().await.unwrap();
    assert_eq!(f.stored().await, vec![1, 2]);
    assert_eq!(f.delivered(), vec![1, 2]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_that_cannot_be_stored_fails_its_flush_and_not_the_next() {
    let f = fixture().await;
    f.journal.write(f.event(1));
    f.journal.flush().await.unwrap();
    // The same sequence number again: the store refuses it for good.
    f.journal.write(f.event(1));
    let error = f.journal.flush().await.unwrap_err().to_string();
    assert!(error.contains("UNIQUE"), "{error}");
    f.journal.write(f.event(2));
    f.journal.flush().await.unwrap();
    assert_eq!(f.stored().await, vec![1, 2]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_commits_a_bounded_amount_inline_and_the_thread_takes_the_rest() {
    let f = fixture().await;
    let total = (INLINE_ROUNDS * INLINE_ROUNDS * BATCH + 500) as i64;
    for seq in 1..=total {
        f.journal.write(f.event(seq));
    }
    f.journal.commit();
    f.journal.flush().await.unwrap();
    assert_eq!(f.store.max_event_seq().await.unwrap(), total);
    let delivered = f.delivered();
    assert_eq!(delivered.len(), total as usize);
    assert!(delivered.windows(2).all(|w| w[0] < w[1]), "delivered in order");
    let me = std::thread::current().id();
    let inline = f.delivered.lock().unwrap().iter().filter(|(_, by)| *by == me).count();
    assert!(inline <= INLINE_ROUNDS * INLINE_ROUNDS * BATCH, "the caller committed {inline} writes itself");
}
