//! The PostgreSQL journal's batch as one statement: a batch's writes as
//! columns ([`Rows`]), and the statement that writes them, made of the parts
//! the batch has and no others (a streamed delta's batch is one item and its
//! events: it neither plans nor runs the parts for turns, sessions' states,
//! notices or fences). Each table's rows go in as arrays, in one
//! `INSERT … SELECT FROM UNNEST`; sqlx prepares each shape once per connection.

use crate::Write;
use crate::cluster::notices::CHANNEL;
use protocol::ids::SessionId;
use protocol::session::SessionState;
use sqlx::{Postgres, QueryBuilder};

/// A batch's writes as columns. A row written twice in one batch (an item
/// growing with each delta) is written once, with its last document, at the
/// place of its first write (so new rows keep their order).
#[derive(Default)]
pub(crate) struct Rows<'a> {
    turns: Columns<5>,
    items: Columns<5>,
    event_seqs: Vec<i64>,
    event_sessions: Vec<String>,
    event_docs: Vec<String>,
    pub(crate) states: Vec<(&'a str, SessionId, &'a SessionState)>,
    /// Each notice's session, and the notice.
    pub(crate) notices: (Vec<String>, Vec<String>),
    /// This node, and the fenced sessions with the epoch each one's lease must have.
    pub(crate) fences: (String, (Vec<String>, Vec<i64>)),
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
    fn is_empty(&self) -> bool {
        self.columns.first().is_none_or(Vec::is_empty)
    }

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
    /// The writes' columns (states kept as they are: the caller merges them).
    pub(crate) fn of(writes: &'a [Write]) -> std::result::Result<Self, sqlx::Error> {
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
                    rows.event_docs.push(event.json().map_err(encode)?.to_string());
                }
            }
        }
        Ok(rows)
    }

    /// The one statement: the batch's rows, and the merged session documents
    /// (`sessions`: each id with its document). With `expected` (each
    /// session's document as the merge read it), a document is written only
    /// over that one, and the statement fails with `division_by_zero`
    /// ([`STALE`]) when any was not: nothing of it is committed, and the
    /// caller merges again from the rows read under lock. With fences, `held`
    /// share-locks the lease rows of the fenced sessions that this node still
    /// holds as the epoch their writes were made under or a later one, so none
    /// changes hands before the commit; every part leaves out the rows (and
    /// notices) of the others, which the statement returns. It returns the
    /// number of notices sent and those sessions.
    pub(crate) fn statement(
        self,
        sessions: Vec<(String, String)>,
        expected: Option<Vec<String>>,
    ) -> QueryBuilder<'static, Postgres> {
        let mut q = QueryBuilder::new("");
        let mut parts = Parts::default();
        let (node, (fenced, epochs)) = self.fences;
        let fenced_any = !fenced.is_empty();
        if fenced_any {
            parts.next(&mut q, "held AS (SELECT l.session_id FROM session_leases l JOIN UNNEST(");
            q.push_bind(fenced.clone()).push("::text[], ").push_bind(epochs);
            q.push("::bigint[]) AS f (session_id, epoch) ON l.session_id = f.session_id AND l.node_id = ");
            q.push_bind(node).push(" AND l.epoch >= f.epoch FOR SHARE OF l)");
            parts.next(&mut q, "lost AS (SELECT f.s FROM UNNEST(");
            q.push_bind(fenced).push("::text[]) AS f (s) WHERE f.s NOT IN (SELECT session_id FROM held))");
        }
        // The condition that leaves out the lost sessions' rows (none without fences).
        let unless_lost = |clause: &str, column: &str| {
            if fenced_any { format!(" {clause} {column} NOT IN (SELECT s FROM lost)") } else { String::new() }
        };
        let kept = unless_lost("WHERE", "r.session_id");
        let kept = kept.as_str();
        let turns = Upsert { part: "turn_rows", table: "turns", names: "id, org_id, session_id, status, doc" };
        turns.push(&mut q, &mut parts, self.turns, kept, "status = excluded.status, doc = excluded.doc");
        let items = Upsert { part: "item_rows", table: "items", names: "id, org_id, session_id, turn_id, doc" };
        items.push(&mut q, &mut parts, self.items, kept, "doc = excluded.doc");
        if !self.event_seqs.is_empty() {
            parts.next(&mut q, "event_rows AS (INSERT INTO events (seq, session_id, doc) SELECT * FROM UNNEST(");
            q.push_bind(self.event_seqs).push("::bigint[], ").push_bind(self.event_sessions);
            q.push("::text[], ").push_bind(self.event_docs).push("::text[]) AS r (seq, session_id, doc)");
            q.push(kept).push(" ON CONFLICT (seq) DO NOTHING)");
        }
        // Whether every session expected is written, as a number to divide by (0: a stale merge).
        let mut written = String::new();
        if !sessions.is_empty() {
            let (ids, docs): (Vec<String>, Vec<String>) = sessions.into_iter().unzip();
            parts.next(&mut q, "session_rows AS (UPDATE sessions SET doc = merged.doc FROM UNNEST(");
            q.push_bind(ids.clone()).push("::text[], ").push_bind(docs).push("::text[]");
            match expected {
                Some(expected) => {
                    q.push(", ").push_bind(expected).push("::text[]) AS merged (id, doc, expected)");
                    q.push(" WHERE sessions.id = merged.id AND sessions.doc = merged.expected");
                    q.push(unless_lost("AND", "merged.id")).push(" RETURNING sessions.id)");
                    parts.next(&mut q, "expected AS (SELECT k.id FROM UNNEST(");
                    q.push_bind(ids).push("::text[]) AS k (id)").push(unless_lost("WHERE", "k.id")).push(")");
                    written = " + (SELECT 0 * (1 / ((SELECT count(*) FROM session_rows) = \
                               (SELECT count(*) FROM expected))::int))"
                        .into();
                }
                None => {
                    q.push(") AS merged (id, doc) WHERE sessions.id = merged.id");
                    q.push(unless_lost("AND", "merged.id")).push(")");
                }
            }
        }
        let (notice_sessions, notices) = self.notices;
        let notifying = !notices.is_empty();
        if notifying {
            parts.next(&mut q, "notices AS (SELECT pg_notify(");
            q.push_bind(CHANNEL).push(", n.n) FROM UNNEST(").push_bind(notices).push("::text[], ");
            q.push_bind(notice_sessions).push("::text[]) AS n (n, s)");
            q.push(unless_lost("WHERE", "n.s")).push(")");
        }
        // A `SELECT` part runs only when read: the notices are counted.
        q.push(if notifying { " SELECT (SELECT count(*) FROM notices)" } else { " SELECT 0::bigint" });
        q.push(written);
        q.push(if fenced_any { ", ARRAY(SELECT s FROM lost)" } else { ", ARRAY[]::text[]" });
        q
    }
}

/// The error code of a statement whose sessions' documents were not the
/// ones its merge expected (`division_by_zero`, which nothing else in a
/// batch's statement can raise).
pub(crate) const STALE: &str = "22012";

/// The `WITH` list being written: the first part opens it, the others follow a comma.
#[derive(Default)]
struct Parts {
    any: bool,
}

impl Parts {
    fn next(&mut self, q: &mut QueryBuilder<'static, Postgres>, part: &str) {
        q.push(if std::mem::replace(&mut self.any, true) { ", " } else { "WITH " });
        q.push(part);
    }
}

/// A part writing one table's rows, each row's id first (an upsert).
struct Upsert {
    part: &'static str,
    table: &'static str,
    /// The table's columns, in the rows' order.
    names: &'static str,
}

impl Upsert {
    /// The part for `rows` (none when there are none): `kept` filters them,
    /// `update` says what a row already stored takes from the new one.
    fn push<const N: usize>(
        &self,
        q: &mut QueryBuilder<'static, Postgres>,
        parts: &mut Parts,
        rows: Columns<N>,
        kept: &str,
        update: &str,
    ) {
        if rows.is_empty() {
            return;
        }
        let Upsert { part, table, names } = self;
        parts.next(q, &format!("{part} AS (INSERT INTO {table} ({names}) SELECT * FROM UNNEST("));
        binds(q, rows.columns);
        q.push(format!(") AS r ({names}){kept} ON CONFLICT (id) DO UPDATE SET {update})"));
    }
}

/// Text columns as `UNNEST`'s arguments.
fn binds<const N: usize>(q: &mut QueryBuilder<'static, Postgres>, columns: [Vec<String>; N]) {
    for (i, column) in columns.into_iter().enumerate() {
        if i > 0 {
            q.push(", ");
        }
        q.push_bind(column).push("::text[]");
    }
}

/// A document for a bind (an error becomes sqlx's: the statement cannot be sent).
fn json<T: serde::Serialize + ?Sized>(value: &T) -> std::result::Result<String, sqlx::Error> {
    serde_json::to_string(value).map_err(encode)
}

/// A document that cannot be made: the statement cannot be sent.
pub(crate) fn encode(e: serde_json::Error) -> sqlx::Error {
    sqlx::Error::Encode(Box::new(e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::event::{Event, EventBody, SessionError};
    use protocol::ids::{EventId, TurnId};
    use protocol::turn::Turn;
    use std::sync::Arc;

    fn event(session_id: SessionId, seq: i64) -> Write {
        let error = SessionError { code: None, message: "m".into(), param: None, kind: "warning".into() };
        let body = EventBody::Error { session_id, error };
        Write::Event { session_id, event: Arc::new(Event::new(EventId::from_seq(seq), body)) }
    }

    #[test]
    fn a_statement_holds_only_the_parts_its_batch_has() {
        let session_id = SessionId::new();
        let events = [event(session_id, 1), event(session_id, 2)];
        let sql = Rows::of(&events).expect("rows").statement(Vec::new(), None).sql().to_string();
        assert!(sql.starts_with("WITH event_rows AS (INSERT INTO events"), "{sql}");
        for absent in ["turns", "items", "sessions", "pg_notify", "lost", "session_leases"] {
            assert!(!sql.contains(absent), "{absent} in {sql}");
        }

        let turn = Turn::queued(TurnId::new(), session_id, "agent", 0);
        let mut writes = vec![Write::Turn { org_id: "org".into(), turn }];
        writes.extend(events);
        let mut rows = Rows::of(&writes).expect("rows");
        rows.fences = ("node".into(), (vec![session_id.to_string()], vec![3]));
        let sql = rows.statement(vec![(session_id.to_string(), "{}".into())], None).sql().to_string();
        for present in
            ["held AS", "lost AS", "turn_rows AS", "event_rows AS", "session_rows AS", "ARRAY(SELECT s FROM lost)"]
        {
            assert!(sql.contains(present), "{present} not in {sql}");
        }
        assert!(!sql.contains("item_rows") && !sql.contains("pg_notify"), "{sql}");
    }
}
