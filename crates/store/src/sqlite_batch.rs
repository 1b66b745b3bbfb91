//! The SQLite backend's batched writes: the engine's journal commits many
//! small changes (turn states, items, events) in one transaction; a batch of
//! one is a single autocommit statement (one round trip to SQLite's thread
//! instead of three: its events reach subscribers sooner).

use crate::sqlite::SqliteStore;
use crate::{Result, Write, event_seq};
use sqlx::SqliteConnection;

impl SqliteStore {
    pub(crate) async fn write_batch_impl(&self, writes: &[Write]) -> Result<()> {
        match writes {
            [] => return Ok(()),
            [only] => apply(&mut *self.pool.acquire().await?, only).await?,
            _ => {
                let mut tx = self.pool.begin().await?;
                for write in writes {
                    apply(&mut tx, write).await?;
                }
                tx.commit().await?;
            }
        }
        self.sessions.invalidate(writes.iter().filter_map(|w| match w {
            Write::SessionState { session_id, .. } => Some(*session_id),
            _ => None,
        }));
        Ok(())
    }
}

/// One write, on a connection or inside a transaction.
async fn apply(conn: &mut SqliteConnection, write: &Write) -> Result<()> {
    match write {
        Write::Turn { org_id, turn } => {
            sqlx::query(
                "INSERT INTO turns (id, org_id, session_id, status, doc) VALUES (?, ?, ?, ?, ?) \
                 ON CONFLICT(id) DO UPDATE SET status = excluded.status, doc = excluded.doc",
            )
            .bind(&turn.id)
            .bind(org_id)
            .bind(&turn.session_id)
            .bind(turn.status.as_str())
            .bind(serde_json::to_string(turn)?)
            .execute(&mut *conn)
            .await?;
        }
        Write::Item { org_id, session_id, item } => {
            sqlx::query(
                "INSERT INTO items (id, org_id, session_id, turn_id, doc) VALUES (?, ?, ?, ?, ?) \
                 ON CONFLICT(id) DO UPDATE SET doc = excluded.doc",
            )
            .bind(item.id())
            .bind(org_id)
            .bind(session_id.to_string())
            .bind(item.turn_id())
            .bind(serde_json::to_string(item)?)
            .execute(&mut *conn)
            .await?;
        }
        Write::SessionState { org_id, session_id, state } => {
            sqlx::query(
                "UPDATE sessions SET doc = json_set(doc, '$.status', json(?), '$.error', json(?), \
                   '$.last_active_at', ?, '$.usage', json(?), '$.required_actions', json(?)) \
                 WHERE id = ? AND org_id = ?",
            )
            .bind(serde_json::to_string(&state.status)?)
            .bind(serde_json::to_string(&state.error)?)
            .bind(state.last_active_at)
            .bind(serde_json::to_string(&state.usage)?)
            .bind(serde_json::to_string(&state.required_actions)?)
            .bind(session_id.to_string())
            .bind(org_id)
            .execute(&mut *conn)
            .await?;
        }
        Write::Event { session_id, event } => {
            let seq = event_seq(&event.event_id).unwrap_or_default();
            sqlx::query("INSERT INTO events (seq, session_id, doc) VALUES (?, ?, ?)")
                .bind(seq)
                .bind(session_id.to_string())
                .bind(serde_json::to_string(event.as_ref())?)
                .execute(&mut *conn)
                .await?;
        }
    }
    Ok(())
}
