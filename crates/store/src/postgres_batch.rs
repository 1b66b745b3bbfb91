//! The PostgreSQL backend's journal writer: a connection of its own, driven
//! by a small runtime of its own on the journal's thread, so a commit never
//! runs on (or blocks) one of the server's async workers. It does not commit
//! inline ([`BatchWriter::commits_inline`] is false): the journal hands every
//! batch to its thread, which wakes within microseconds.
//!
//! A batch is one statement, so one round trip and one commit (sessions'
//! states in it make it a transaction: their rows are read under lock and
//! merged first; see [`commit`]). Every write is idempotent — turns and items are upserts, state writes overwrite,
//! an event already stored is skipped — so a batch whose commit was cut off
//! by a lost connection is simply written again. While the database is
//! unreachable a batch is retried on a fresh connection for [`OUTAGE`], then
//! reported unavailable: the journal keeps it queued and tries again, so a
//! restart of PostgreSQL loses no write and leaves no turn unfinished.
//!
//! Once the process is a node of a cluster with other nodes running, the
//! statement also announces what it committed (each session's last event, the sessions whose state
//! changed) with `pg_notify`, delivered to the other nodes at its commit.

use crate::cluster::notices::{CHANNEL, Notice, Sender};
use crate::error::unavailable;
use crate::session_cache::SessionCache;
use crate::{BatchWriter, Error, Result, Write};
use protocol::ids::SessionId;
use protocol::session::SessionState;
use sqlx::postgres::PgConnectOptions;
use sqlx::{Connection, PgConnection};
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    sender: Arc<Sender>,
}

impl PgWriter {
    /// A writer that connects on its first batch.
    pub(crate) fn new(options: PgConnectOptions, sessions: Arc<SessionCache>, sender: Arc<Sender>) -> Result<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::Writer(format!("cannot start the journal writer's runtime: {e}")))?;
        Ok(Self { runtime: Some(runtime), conn: None, options, sessions, sender })
    }

    /// One attempt: connects if needed, then commits the batch.
    fn attempt(&mut self, writes: &[Write]) -> std::result::Result<(), sqlx::Error> {
        let Some(runtime) = &self.runtime else { return Err(sqlx::Error::PoolClosed) };
        let (conn, options, sender) = (&mut self.conn, &self.options, &self.sender);
        runtime.block_on(async {
            if conn.is_none() {
                *conn = Some(PgConnection::connect_with(options).await?);
            }
            let Some(conn) = conn.as_mut() else { return Err(sqlx::Error::PoolClosed) };
            commit(conn, writes, sender).await
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

/// Every write of a batch in one statement (turns, items and events as
/// arrays, each table's rows in one `INSERT … SELECT FROM UNNEST`): one round
/// trip and one commit. A batch holding session states is a transaction of
/// three: their rows read under lock, merged here, then the one statement
/// that also writes them back.
async fn commit(conn: &mut PgConnection, writes: &[Write], sender: &Sender) -> std::result::Result<(), sqlx::Error> {
    let mut rows = Rows::of(writes)?;
    if sender.announces_commits() {
        rows.notices = notices(writes, sender);
    }
    if rows.states.is_empty() {
        return rows.statement(Vec::new()).execute(&mut *conn).await.map(drop);
    }
    let mut tx = conn.begin().await?;
    let ids: Vec<String> = rows.states.iter().map(|(_, id, _)| id.to_string()).collect();
    let stored: Vec<(String, String, String)> =
        sqlx::query_as("SELECT id, org_id, doc FROM sessions WHERE id = ANY($1) ORDER BY id FOR UPDATE")
            .bind(&ids)
            .fetch_all(&mut *tx)
            .await?;
    let mut merged = Vec::with_capacity(stored.len());
    for (id, org_id, doc) in stored {
        // The batch's last state of each session (in a session's own organization only).
        let stored_id = SessionId::parse(&id);
        let state = rows.states.iter().rev().find(|(org, sid, _)| *org == org_id && Some(*sid) == stored_id);
        if let Some((_, _, state)) = state {
            let doc = crate::sql::set_state(&doc, state).map_err(|e| sqlx::Error::Encode(Box::new(e)))?;
            merged.push((id, doc));
        }
    }
    rows.statement(merged).execute(&mut *tx).await?;
    tx.commit().await
}

/// A batch's writes as columns. A row written twice in one batch (an item
/// growing with each delta) is written once, with its last document, at the
/// place of its first write (so new rows keep their order).
#[derive(Default)]
struct Rows<'a> {
    turns: Columns<5>,
    items: Columns<5>,
    event_seqs: Vec<i64>,
    event_sessions: Vec<String>,
    event_docs: Vec<String>,
    states: Vec<(&'a str, SessionId, &'a SessionState)>,
    notices: Vec<String>,
}

/// What a batch announces: each session's last event, and each session whose state it wrote.
fn notices(writes: &[Write], sender: &Sender) -> Vec<String> {
    let mut last: Vec<(SessionId, i64)> = Vec::new();
    let mut states: Vec<SessionId> = Vec::new();
    for write in writes {
        match write {
            Write::Event { session_id, event } => match last.iter_mut().find(|(s, _)| s == session_id) {
                Some((_, seq)) => *seq = (*seq).max(event.event_id.seq()),
                None => last.push((*session_id, event.event_id.seq())),
            },
            Write::SessionState { session_id, .. } if !states.contains(session_id) => states.push(*session_id),
            _ => {}
        }
    }
    let events = last.into_iter().map(|(session, seq)| Notice::Events { session, seq });
    events.chain(states.into_iter().map(Notice::Session)).map(|n| sender.payload(&n)).collect()
}

/// Text columns of one table's rows, the first being the row's id.
struct Columns<const N: usize> {
    columns: [Vec<String>; N],
    index: std::collections::HashMap<String, usize>,
}

impl<const N: usize> Default for Columns<N> {
    fn default() -> Self {
        Self { columns: std::array::from_fn(|_| Vec::new()), index: Default::default() }
    }
}

impl<const N: usize> Columns<N> {
    /// Adds a row, or replaces the columns after the first of the row with its id.
    fn put(&mut self, row: [String; N]) {
        let id = row.first().cloned().unwrap_or_default();
        if let Some(&at) = self.index.get(&id) {
            for (column, value) in self.columns.iter_mut().zip(row).skip(1) {
                column[at] = value;
            }
            return;
        }
        let at = self.columns.first().map_or(0, Vec::len);
        self.index.insert(id, at);
        for (column, value) in self.columns.iter_mut().zip(row) {
            column.push(value);
        }
    }
}

impl<'a> Rows<'a> {
    fn of(writes: &'a [Write]) -> std::result::Result<Self, sqlx::Error> {
        let mut rows = Rows::default();
        for write in writes {
            match write {
                Write::Turn { org_id, turn } => rows.turns.put([
                    turn.id.to_string(),
                    org_id.clone(),
                    turn.session_id.to_string(),
                    turn.status.as_str().to_string(),
                    json(turn)?,
                ]),
                Write::Item { org_id, session_id, item } => rows.items.put([
                    item.id().to_string(),
                    org_id.clone(),
                    session_id.to_string(),
                    item.turn_id().to_string(),
                    json(item)?,
                ]),
                Write::SessionState { org_id, session_id, state } => rows.states.push((org_id, *session_id, state)),
                Write::Event { session_id, event } => {
                    rows.event_seqs.push(event.event_id.seq());
                    rows.event_sessions.push(session_id.to_string());
                    rows.event_docs.push(json(event.as_ref())?);
                }
            }
        }
        Ok(rows)
    }

    /// The one statement: every table's rows, and the merged session documents.
    fn statement(
        self,
        sessions: Vec<(String, String)>,
    ) -> sqlx::query::Query<'static, sqlx::Postgres, sqlx::postgres::PgArguments> {
        let (session_ids, session_docs): (Vec<String>, Vec<String>) = sessions.into_iter().unzip();
        let mut query = sqlx::query(BATCH);
        for column in self.turns.columns.into_iter().chain(self.items.columns) {
            query = query.bind(column);
        }
        query
            .bind(self.event_seqs)
            .bind(self.event_sessions)
            .bind(self.event_docs)
            .bind(session_ids)
            .bind(session_docs)
            .bind(CHANNEL)
            .bind(self.notices)
    }
}

/// A batch as one statement (each part is empty when the batch has no such writes).
const BATCH: &str = "WITH turn_rows AS (\
    INSERT INTO turns (id, org_id, session_id, status, doc) \
    SELECT * FROM UNNEST($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) \
    ON CONFLICT (id) DO UPDATE SET status = excluded.status, doc = excluded.doc), \
item_rows AS (\
    INSERT INTO items (id, org_id, session_id, turn_id, doc) \
    SELECT * FROM UNNEST($6::text[], $7::text[], $8::text[], $9::text[], $10::text[]) \
    ON CONFLICT (id) DO UPDATE SET doc = excluded.doc), \
event_rows AS (\
    INSERT INTO events (seq, session_id, doc) \
    SELECT * FROM UNNEST($11::bigint[], $12::text[], $13::text[]) \
    ON CONFLICT (seq) DO NOTHING), \
session_rows AS (\
    UPDATE sessions SET doc = merged.doc FROM UNNEST($14::text[], $15::text[]) AS merged (id, doc) \
    WHERE sessions.id = merged.id), \
notices AS (SELECT pg_notify($16, n) FROM UNNEST($17::text[]) AS n) \
SELECT (SELECT count(*) FROM notices)";

/// Rewrites a session's document as `merge` makes it from the stored one,
/// the row locked in between (the caller's transaction): the JSON types'
/// functions cannot hold U+0000, so the merge is not done in SQL. False when
/// the session no longer exists.
pub(crate) async fn rewrite_session(
    conn: &mut PgConnection,
    org_id: &str,
    session_id: SessionId,
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
