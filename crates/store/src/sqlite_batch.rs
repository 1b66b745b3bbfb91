//! The SQLite backend's journal writer: a connection of its own (rusqlite,
//! blocking) that the engine's journal commits through. A batch commits in
//! one call on the committer's thread — no hop through an async pool or a
//! worker thread per statement — so a committed event reaches its
//! subscribers a few tens of microseconds after it was queued. A batch of
//! one write is a single autocommit statement; a larger one is one
//! transaction. Statements are prepared once and cached on the connection.
//! The connection never checkpoints on commit (a checkpoint syncs the disk):
//! [`BatchWriter::checkpoint`] asks the [`Checkpointer`]'s thread for one.

use crate::session_cache::SessionCache;
use crate::sqlite_checkpoint::Checkpointer;
use crate::{BatchWriter, Error, Fence, Result, Write};
use protocol::ids::SessionId;
use rusqlite::{Connection, OpenFlags, params};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The writer: its connection, and the session cache its state writes update.
pub(crate) struct SqliteWriter {
    conn: Connection,
    sessions: Arc<SessionCache>,
    /// Whether the connection now waits for locks (its busy timeout is set).
    waits: bool,
    checkpoints: Checkpointer,
}

/// How long a waiting commit waits for another connection's lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

impl SqliteWriter {
    /// Opens the database file at `path` (already created and migrated by the
    /// store) with the store's settings.
    pub(crate) fn open(path: &Path, sessions: Arc<SessionCache>) -> Result<Self> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
        let conn = Connection::open_with_flags(path, flags).map_err(writer_error)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(writer_error)?;
        // The same settings as the pool's connections (see `SqliteStore::open`).
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; \
             PRAGMA wal_autocheckpoint = 0;",
        )
        .map_err(writer_error)?;
        conn.set_prepared_statement_cache_capacity(16);
        let checkpoints = Checkpointer::start(path, flags)?;
        Ok(Self { conn, sessions, waits: true, checkpoints })
    }
}

impl BatchWriter for SqliteWriter {
    /// One process alone on its file: no other node can hold a lease, so
    /// `fences` refuse nothing.
    fn write_batch(&mut self, writes: &[Write], _fences: &[Fence], wait: bool) -> Result<Vec<SessionId>> {
        if wait != self.waits {
            self.conn.busy_timeout(if wait { BUSY_TIMEOUT } else { Duration::ZERO }).map_err(writer_error)?;
            self.waits = wait;
        }
        match writes {
            [] => return Ok(Vec::new()),
            [only] => apply(&self.conn, only)?,
            _ => {
                // `BEGIN` and `COMMIT` from the statement cache too: parsing
                // them again would cost as much as a write of the batch.
                run_cached(&self.conn, "BEGIN IMMEDIATE")?;
                let applied = writes.iter().try_for_each(|write| apply(&self.conn, write));
                if let Err(e) = applied.and_then(|()| run_cached(&self.conn, "COMMIT")) {
                    if !self.conn.is_autocommit() {
                        let _ = run_cached(&self.conn, "ROLLBACK");
                    }
                    return Err(e);
                }
            }
        }
        self.sessions.set_states(writes.iter().filter_map(|w| match w {
            Write::SessionState { org_id, session_id, state } => Some((org_id.as_str(), *session_id, state)),
            _ => None,
        }));
        Ok(Vec::new())
    }

    fn checkpoint(&mut self) -> Result<()> {
        self.checkpoints.ask()
    }
}

/// Runs a statement without parameters through the connection's statement cache.
fn run_cached(conn: &Connection, sql: &str) -> Result<()> {
    conn.prepare_cached(sql).and_then(|mut stmt| stmt.raw_execute()).map_err(writer_error)?;
    Ok(())
}

fn writer_error(e: rusqlite::Error) -> Error {
    Error::Writer(e.to_string())
}

/// One write, on the connection or inside its transaction.
fn apply(conn: &Connection, write: &Write) -> Result<()> {
    let run = |sql: &str, params: &[&dyn rusqlite::ToSql]| -> Result<()> {
        conn.prepare_cached(sql).and_then(|mut stmt| stmt.execute(params)).map_err(writer_error)?;
        Ok(())
    };
    match write {
        Write::Turn { org_id, turn } => run(
            "INSERT INTO turns (id, org_id, session_id, status, doc) VALUES (?, ?, ?, ?, ?) \
             ON CONFLICT(id) DO UPDATE SET status = excluded.status, doc = excluded.doc",
            params![
                turn.id.to_string(),
                org_id,
                turn.session_id.to_string(),
                turn.status.as_str(),
                serde_json::to_string(turn)?
            ],
        ),
        Write::Item { org_id, session_id, item } => run(
            "INSERT INTO items (id, org_id, session_id, turn_id, doc) VALUES (?, ?, ?, ?, ?) \
             ON CONFLICT(id) DO UPDATE SET doc = excluded.doc",
            params![
                item.id(),
                org_id,
                session_id.to_string(),
                item.turn_id().to_string(),
                serde_json::to_string(item)?
            ],
        ),
        Write::SessionState { org_id, session_id, state } => run(
            "UPDATE sessions SET doc = json_set(doc, '$.status', json(?), '$.error', json(?), \
               '$.last_active_at', ?, '$.usage', json(?), '$.required_actions', json(?)) \
             WHERE id = ? AND org_id = ?",
            params![
                serde_json::to_string(&state.status)?,
                serde_json::to_string(&state.error)?,
                state.last_active_at,
                serde_json::to_string(&state.usage)?,
                serde_json::to_string(&state.required_actions)?,
                session_id.to_string(),
                org_id,
            ],
        ),
        Write::Event { session_id, event } => run(
            "INSERT INTO events (seq, session_id, doc) VALUES (?, ?, ?)",
            params![event.event_id.seq(), session_id.to_string(), event.json()?.as_ref()],
        ),
    }
}

#[cfg(test)]
mod tests {
    use crate::SqliteStore;

    #[tokio::test]
    async fn an_in_memory_database_is_refused_with_the_reason() {
        for url in ["sqlite::memory:", "sqlite://x.db?mode=memory"] {
            let error = SqliteStore::open_url(url).await.err().map(|e| e.to_string()).unwrap_or_default();
            assert!(error.contains("in-memory database is not supported"), "{url}: {error}");
        }
    }
}
