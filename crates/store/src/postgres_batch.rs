//! The PostgreSQL backend's journal writer: a connection of its own, driven
//! by a small runtime of its own on the journal's thread, so a commit never
//! runs on (or blocks) one of the server's async workers. It does not commit
//! inline ([`BatchWriter::commits_inline`] is false): the journal hands every
//! batch to its thread, which wakes within microseconds.
//!
//! A batch is one transaction (one write: one autocommit statement, unless
//! it is a session's state, which is read, merged and written back under
//! the row's lock). Every
//! write is idempotent — turns and items are upserts, state writes overwrite,
//! an event already stored is skipped — so a batch whose commit was cut off
//! by a lost connection is simply written again. While the database is
//! unreachable a batch is retried on a fresh connection for [`OUTAGE`], then
//! reported unavailable: the journal keeps it queued and tries again, so a
//! restart of PostgreSQL loses no write and leaves no turn unfinished.

use crate::error::unavailable;
use crate::session_cache::SessionCache;
use crate::{BatchWriter, Error, Result, Write, event_seq};
use sqlx::postgres::PgConnectOptions;
use sqlx::{Connection, PgConnection};
use std::sync::Arc;
use std::time::{Duration, Instant};
use uuid::Uuid;

/// How long one call keeps retrying a batch while the database is
/// unreachable (a blip passes unnoticed; a longer outage is the journal's).
const OUTAGE: Duration = Duration::from_secs(2);

/// The writer: its runtime and connection, and the session cache its state
/// writes update.
pub(crate) struct PgWriter {
    runtime: Option<tokio::runtime::Runtime>,
    conn: Option<PgConnection>,
    options: PgConnectOptions,
    sessions: Arc<SessionCache>,
}

impl PgWriter {
    /// A writer that connects on its first batch.
    pub(crate) fn new(options: PgConnectOptions, sessions: Arc<SessionCache>) -> Result<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::Writer(format!("cannot start the journal writer's runtime: {e}")))?;
        Ok(Self { runtime: Some(runtime), conn: None, options, sessions })
    }

    /// One attempt: connects if needed, then commits the batch.
    fn attempt(&mut self, writes: &[Write]) -> std::result::Result<(), sqlx::Error> {
        let Some(runtime) = &self.runtime else { return Err(sqlx::Error::PoolClosed) };
        let (conn, options) = (&mut self.conn, &self.options);
        runtime.block_on(async {
            if conn.is_none() {
                *conn = Some(PgConnection::connect_with(options).await?);
            }
            let Some(conn) = conn.as_mut() else { return Err(sqlx::Error::PoolClosed) };
            match writes {
                [only] if !matches!(only, Write::SessionState { .. }) => apply(conn, only).await,
                _ => {
                    let mut tx = conn.begin().await?;
                    for write in writes {
                        apply(&mut tx, write).await?;
                    }
                    tx.commit().await
                }
            }
        })
    }
}

impl Drop for PgWriter {
    fn drop(&mut self) {
        self.conn = None;
        // Allowed anywhere, also inside another runtime (a plain drop is not).
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl BatchWriter for PgWriter {
    fn write_batch(&mut self, writes: &[Write], wait: bool) -> Result<()> {
        if writes.is_empty() {
            return Ok(());
        }
        if !wait {
            return Err(Error::Writer("the PostgreSQL journal writer commits on the journal's thread only".into()));
        }
        let deadline = Instant::now() + OUTAGE;
        let mut pause = Duration::from_millis(50);
        loop {
            match self.attempt(writes) {
                Ok(()) => break,
                Err(e) if unavailable(&e) && Instant::now() < deadline => {
                    tracing::warn!(error = %e, "journal: database unavailable, retrying the batch");
                    self.conn = None;
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_secs(1));
                }
                Err(e) => {
                    if unavailable(&e) {
                        self.conn = None;
                    }
                    return Err(e.into());
                }
            }
        }
        self.sessions.set_states(writes.iter().filter_map(|w| match w {
            Write::SessionState { org_id, session_id, state } => Some((org_id.as_str(), *session_id, state)),
            _ => None,
        }));
        Ok(())
    }

    fn checkpoint(&mut self) -> Result<()> {
        Ok(())
    }

    fn commits_inline(&self) -> bool {
        false
    }
}

/// One write, on the connection or inside its transaction.
async fn apply(conn: &mut PgConnection, write: &Write) -> std::result::Result<(), sqlx::Error> {
    let query = match write {
        Write::Turn { org_id, turn } => sqlx::query(
            "INSERT INTO turns (id, org_id, session_id, status, doc) VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT (id) DO UPDATE SET status = excluded.status, doc = excluded.doc",
        )
        .bind(&turn.id)
        .bind(org_id)
        .bind(&turn.session_id)
        .bind(turn.status.as_str())
        .bind(json(turn)?),
        Write::Item { org_id, session_id, item } => sqlx::query(
            "INSERT INTO items (id, org_id, session_id, turn_id, doc) VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT (id) DO UPDATE SET doc = excluded.doc",
        )
        .bind(item.id())
        .bind(org_id)
        .bind(session_id.to_string())
        .bind(item.turn_id())
        .bind(json(item)?),
        Write::SessionState { org_id, session_id, state } => {
            let set = |stored: &str| crate::sql::set_state(stored, state);
            return rewrite_session(conn, org_id, *session_id, set).await.map(drop);
        }
        Write::Event { session_id, event } => {
            sqlx::query("INSERT INTO events (seq, session_id, doc) VALUES ($1, $2, $3) ON CONFLICT (seq) DO NOTHING")
                .bind(event_seq(&event.event_id).unwrap_or_default())
                .bind(session_id.to_string())
                .bind(json(event.as_ref())?)
        }
    };
    query.execute(&mut *conn).await?;
    Ok(())
}

/// Rewrites a session's document as `merge` makes it from the stored one,
/// the row locked in between (the caller's transaction): the JSON types'
/// functions cannot hold U+0000, so the merge is not done in SQL. False when
/// the session no longer exists.
pub(crate) async fn rewrite_session(
    conn: &mut PgConnection,
    org_id: &str,
    session_id: Uuid,
    merge: impl FnOnce(&str) -> Result<String>,
) -> std::result::Result<bool, sqlx::Error> {
    let stored: Option<(String,)> = sqlx::query_as("SELECT doc FROM sessions WHERE id = $1 AND org_id = $2 FOR UPDATE")
        .bind(session_id.to_string())
        .bind(org_id)
        .fetch_optional(&mut *conn)
        .await?;
    let Some((stored,)) = stored else { return Ok(false) };
    let doc = merge(&stored).map_err(|e| sqlx::Error::Encode(Box::new(e)))?;
    sqlx::query("UPDATE sessions SET doc = $1 WHERE id = $2 AND org_id = $3")
        .bind(doc)
        .bind(session_id.to_string())
        .bind(org_id)
        .execute(&mut *conn)
        .await?;
    Ok(true)
}

/// A document for a bind (an error becomes sqlx's: the statement cannot be sent).
fn json<T: serde::Serialize + ?Sized>(value: &T) -> std::result::Result<String, sqlx::Error> {
    serde_json::to_string(value).map_err(|e| sqlx::Error::Encode(Box::new(e)))
}
