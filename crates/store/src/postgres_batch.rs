//! The PostgreSQL backend's journal writer, with two connections:
//! - one of the caller's runtime, for batches committed from a task of the
//!   server's ([`BatchWriter::write_batch_async`]): a streamed event's
//!   commit, then its delivery, run where the event was made, with no hop
//!   to another thread and back (two cross-CPU wake-ups, 0.1–0.2 ms here);
//! - one driven by a small runtime of its own on the journal's thread, for
//!   what that thread takes over: retries while the database is away, and
//!   writes left queued. A blocking commit never runs on (or blocks) one of
//!   the server's async workers ([`BatchWriter::commits_inline`] is false).
//!
//! A batch is one statement ([`Rows::statement`], of the parts the batch
//! has), so one round trip and one commit (sessions' states in it make it a
//! transaction: their rows are read under lock and merged first; see
//! [`commit`]). Every write is idempotent — turns and items are upserts, state writes overwrite,
//! an event already stored is skipped — so a batch whose commit was cut off
//! by a lost connection is simply written again. While the database is
//! unreachable a batch is retried on a fresh connection for [`OUTAGE`], then
//! reported unavailable: the journal keeps it queued and tries again, so a
//! restart of PostgreSQL loses no write and leaves no turn unfinished.
//!
//! Once the process is a node of a cluster with other nodes running, the
//! statement also announces what it committed (each session's last event, the sessions whose state
//! changed) with `pg_notify`, delivered to the other nodes at its commit.

use crate::cluster::notices::{Notice, Sender};
use crate::error::unavailable;
use crate::postgres_docs::{Known, Merged};
use crate::postgres_rows::{Rows, STALE};
use crate::session_cache::SessionCache;
use crate::{BatchFuture, BatchWriter, Error, Fence, Result, Write};
use protocol::ids::SessionId;
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
    /// The connection of the server's runtime ([`BatchWriter::write_batch_async`]);
    /// taken out while a commit is under way, so one cut off is never reused.
    task_conn: Option<PgConnection>,
    options: PgConnectOptions,
    sessions: Arc<SessionCache>,
    sender: Arc<Sender>,
    /// The sessions' documents as this writer last committed them.
    known: Known,
}

impl PgWriter {
    /// A writer that connects on its first batch.
    pub(crate) fn new(options: PgConnectOptions, sessions: Arc<SessionCache>, sender: Arc<Sender>) -> Result<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::Writer(format!("cannot start the journal writer's runtime: {e}")))?;
        // Each batch statement's shape is planned once, not at every bind
        // (a custom plan of the statement cost 0.3–0.4 ms a batch here).
        let options = options.options([("plan_cache_mode", "force_generic_plan")]);
        Ok(Self {
            runtime: Some(runtime),
            conn: None,
            task_conn: None,
            options,
            sessions,
            sender,
            known: Known::default(),
        })
    }

    /// One attempt: connects if needed, then commits the batch; the sessions
    /// whose writes were left out come back.
    fn attempt(&mut self, writes: &[Write], fences: &[Fence]) -> std::result::Result<Vec<SessionId>, sqlx::Error> {
        let Some(runtime) = &self.runtime else { return Err(sqlx::Error::PoolClosed) };
        let (conn, options, sender, known) = (&mut self.conn, &self.options, &self.sender, &mut self.known);
        runtime.block_on(async {
            if conn.is_none() {
                *conn = Some(PgConnection::connect_with(options).await?);
            }
            let Some(conn) = conn.as_mut() else { return Err(sqlx::Error::PoolClosed) };
            commit(conn, writes, fences, sender, known).await
        })
    }

    /// The session cache takes the states a batch committed.
    fn committed(&self, writes: &[Write], refused: &[SessionId]) {
        self.sessions.set_states(writes.iter().filter_map(|w| match w {
            Write::SessionState { org_id, session_id, state } if !refused.contains(session_id) => {
                Some((org_id.as_str(), *session_id, state))
            }
            _ => None,
        }));
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
    fn write_batch(&mut self, writes: &[Write], fences: &[Fence], wait: bool) -> Result<Vec<SessionId>> {
        if writes.is_empty() {
            return Ok(Vec::new());
        }
        if !wait {
            return Err(Error::Writer("the PostgreSQL journal writer commits on the journal's thread only".into()));
        }
        let deadline = Instant::now() + OUTAGE;
        let mut pause = Duration::from_millis(50);
        let refused = loop {
            match self.attempt(writes, fences) {
                Ok(refused) => break refused,
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
        };
        self.committed(writes, &refused);
        Ok(refused)
    }

    fn commits_in_task(&self) -> bool {
        true
    }

    fn write_batch_async<'a>(&'a mut self, writes: &'a [Write], fences: &'a [Fence]) -> BatchFuture<'a> {
        Box::pin(async move {
            if writes.is_empty() {
                return Ok(Vec::new());
            }
            let mut conn = match self.task_conn.take() {
                Some(conn) => conn,
                None => PgConnection::connect_with(&self.options).await?,
            };
            let refused = commit(&mut conn, writes, fences, &self.sender, &mut self.known).await?;
            self.task_conn = Some(conn);
            self.committed(writes, &refused);
            Ok(refused)
        })
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
/// trip and one commit. Sessions' states are merged into their documents as
/// this writer last committed them, and written over those only
/// ([`Known`]); when one changed since, or is not known, the batch is a
/// transaction of three: the rows read under lock, merged here, then the one
/// statement that also writes them back. The statement leaves out the writes
/// of the fenced sessions whose lease this node no longer holds, and returns
/// them.
async fn commit(
    conn: &mut PgConnection,
    writes: &[Write],
    fences: &[Fence],
    sender: &Sender,
    known: &mut Known,
) -> std::result::Result<Vec<SessionId>, sqlx::Error> {
    let rows = batch_rows(writes, fences, sender)?;
    if rows.states.is_empty() {
        let mut statement = rows.statement(Vec::new(), None);
        return statement.build_query_as().fetch_one(&mut *conn).await.map(refused);
    }
    let rows = match known.merge(&rows.states).map_err(|e| sqlx::Error::Encode(Box::new(e)))? {
        Some(merged) => {
            let mut statement = rows.statement(merged.docs.clone(), Some(merged.expected.clone()));
            match statement.build_query_as().fetch_one(&mut *conn).await.map(refused) {
                Ok(refused) => {
                    known.committed(merged, &refused);
                    return Ok(refused);
                }
                Err(e) if e.as_database_error().and_then(|d| d.code()).is_some_and(|c| c == STALE) => {
                    known.forget(&merged);
                    batch_rows(writes, fences, sender)?
                }
                Err(e) => return Err(e),
            }
        }
        None => rows,
    };
    let mut tx = conn.begin().await?;
    let ids: Vec<String> = rows.states.iter().map(|(_, id, _)| id.to_string()).collect();
    let stored: Vec<(String, String, String)> =
        sqlx::query_as("SELECT id, org_id, doc FROM sessions WHERE id = ANY($1) ORDER BY id FOR UPDATE")
            .bind(&ids)
            .fetch_all(&mut *tx)
            .await?;
    let mut merged = Merged::default();
    for (id, org_id, doc) in stored {
        // The batch's last state of each session (in a session's own organization only).
        let Some(stored_id) = SessionId::parse(&id) else { continue };
        let state = rows.states.iter().rev().find(|(org, sid, _)| *org == org_id && *sid == stored_id);
        if let Some((_, _, state)) = state {
            let doc = crate::sql::set_state(&doc, state).map_err(|e| sqlx::Error::Encode(Box::new(e)))?;
            merged.docs.push((id, doc));
            merged.sessions.push((stored_id, org_id));
        }
    }
    let mut statement = rows.statement(merged.docs.clone(), None);
    let refused = statement.build_query_as().fetch_one(&mut *tx).await.map(refused)?;
    tx.commit().await?;
    known.committed(merged, &refused);
    Ok(refused)
}

/// A batch's rows, with the notices it announces and its fences.
fn batch_rows<'a>(
    writes: &'a [Write],
    fences: &[Fence],
    sender: &Sender,
) -> std::result::Result<Rows<'a>, sqlx::Error> {
    let mut rows = Rows::of(writes)?;
    if sender.announces_commits() {
        rows.notices = notices(writes, sender);
    }
    if let Some(node) = sender.node() {
        rows.fences = (node.to_string(), fences.iter().map(|f| (f.session_id.to_string(), f.epoch)).unzip());
    }
    Ok(rows)
}

/// The sessions whose writes the statement left out (its second column).
fn refused((_, sessions): (i64, Vec<String>)) -> Vec<SessionId> {
    sessions.iter().filter_map(|s| SessionId::parse(s)).collect()
}

/// What a batch announces: each session's last event, and each session whose state it wrote.
fn notices(writes: &[Write], sender: &Sender) -> (Vec<String>, Vec<String>) {
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
    let events = last.into_iter().map(|(session, seq)| (session, Notice::Events { session, seq }));
    let states = states.into_iter().map(|session| (session, Notice::Session(session)));
    events.chain(states).map(|(session, n)| (session.to_string(), sender.payload(&n))).unzip()
}

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
