//! The backends under test: a store over a fresh database, its URL, raw SQL
//! for the few tests that change the schema under the store, and a journal
//! commit on a thread of its own (as the engine's journal thread commits).

use protocol::ids::SessionId;
use std::sync::Arc;
use store::{Fence, Store, Write};

pub struct Backend {
    pub store: Arc<dyn Store>,
    pub url: String,
    pub kind: Kind,
    _dir: Option<tempfile::TempDir>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    Sqlite,
    Postgres,
}

impl Backend {
    pub async fn sqlite() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("rebyte.db").display());
        let store = store::open(&url).await.unwrap();
        Self { store, url, kind: Kind::Sqlite, _dir: Some(dir) }
    }

    pub async fn postgres() -> Option<Self> {
        let url = test_support::postgres::fresh().await?;
        let store = store::open(&url).await.unwrap();
        Some(Self { store, url, kind: Kind::Postgres, _dir: None })
    }

    /// Runs SQL on a connection of its own, beside the store.
    pub async fn execute(&self, sql: &str) {
        use sqlx::Connection;
        match self.kind {
            Kind::Sqlite => {
                let mut conn = sqlx::SqliteConnection::connect(&self.url).await.unwrap();
                sqlx::raw_sql(sql).execute(&mut conn).await.unwrap();
            }
            Kind::Postgres => {
                let mut conn = sqlx::PgConnection::connect(&self.url).await.unwrap();
                sqlx::raw_sql(sql).execute(&mut conn).await.unwrap();
            }
        }
    }

    /// A journal writer kept across batches (as the journal keeps its own).
    pub fn writer(&self) -> Writer {
        Writer(Some(self.store.batch_writer().unwrap()))
    }

    /// Commits one journal batch, waiting, on a plain thread.
    pub fn commit(&self, writes: Vec<Write>) -> store::Result<()> {
        let refused = self.commit_fenced(writes, Vec::new())?;
        assert!(refused.is_empty(), "nothing fenced, nothing refused: {refused:?}");
        Ok(())
    }

    /// Commits one journal batch whose sessions in `fences` were written
    /// under this node's leases; the sessions refused come back.
    pub fn commit_fenced(&self, writes: Vec<Write>, fences: Vec<Fence>) -> store::Result<Vec<SessionId>> {
        let mut writer = self.store.batch_writer()?;
        std::thread::spawn(move || writer.write_batch(&writes, &fences, true)).join().unwrap()
    }
}

/// A journal writer that commits batch after batch, each on a plain thread.
pub struct Writer(Option<Box<dyn store::BatchWriter>>);

impl Writer {
    pub fn commit(&mut self, writes: Vec<Write>) -> store::Result<()> {
        let mut writer = self.0.take().unwrap();
        let (writer, done) = std::thread::spawn(move || {
            let done = writer.write_batch(&writes, &[], true);
            (writer, done)
        })
        .join()
        .unwrap();
        self.0 = Some(writer);
        assert!(done?.is_empty(), "nothing fenced, nothing refused");
        Ok(())
    }

    /// Whether the writer commits from a task of the caller's runtime.
    pub fn in_task(&self) -> bool {
        self.0.as_ref().unwrap().commits_in_task()
    }

    /// Commits one batch from this task (as the journal's tasks do).
    pub async fn commit_in_task(&mut self, writes: Vec<Write>) -> store::Result<()> {
        let refused = self.0.as_mut().unwrap().write_batch_async(&writes, &[]).await?;
        assert!(refused.is_empty(), "nothing fenced, nothing refused");
        Ok(())
    }

    /// Starts committing a batch from this task, and drops the commit after
    /// `wait` (the task ended under it); panics if it ended before.
    pub async fn abandon_in_task(&mut self, writes: Vec<Write>, wait: std::time::Duration) {
        let commit = self.0.as_mut().unwrap().write_batch_async(&writes, &[]);
        let ended = tokio::time::timeout(wait, commit).await;
        assert!(ended.is_err(), "the commit was to be cut off before its end");
    }
}
