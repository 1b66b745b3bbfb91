//! The PostgreSQL backend's turns, items, events and idempotency keys.

use crate::postgres::{PgStore, page_of, parse_doc, parse_docs};
use crate::{Page, Result};
use protocol::event::Event;
use protocol::item::Item;
use protocol::list::PageRequest;
use protocol::turn::Turn;
use sqlx::Row;
use uuid::Uuid;

impl PgStore {
    pub(crate) async fn get_turn_impl(&self, org_id: &str, id: Uuid) -> Result<Option<Turn>> {
        let doc: Option<String> = sqlx::query_scalar("SELECT doc::text FROM turns WHERE id = $1 AND org_id = $2")
            .bind(id.to_string())
            .bind(org_id)
            .fetch_optional(&self.pool)
            .await?;
        parse_doc(doc)
    }

    pub(crate) async fn list_turns_impl(
        &self,
        org_id: &str,
        session_id: Uuid,
        page: &PageRequest,
    ) -> Result<Page<Turn>> {
        let sid = session_id.to_string();
        page_of(&self.pool, "turns", org_id, page, |q| {
            q.push(" AND session_id = ");
            q.push_bind(sid.clone());
        })
        .await
    }

    pub(crate) async fn open_turns_impl(&self) -> Result<Vec<(String, Turn)>> {
        let rows = sqlx::query(
            "SELECT org_id, doc::text AS doc FROM turns \
             WHERE status IN ('queued', 'in_progress', 'waiting') ORDER BY seq",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| Ok((r.try_get::<String, _>("org_id")?, serde_json::from_str(r.try_get::<&str, _>("doc")?)?)))
            .collect()
    }

    pub(crate) async fn list_items_impl(
        &self,
        org_id: &str,
        session_id: Uuid,
        turn_id: Option<&str>,
        page: &PageRequest,
    ) -> Result<Page<Item>> {
        let sid = session_id.to_string();
        page_of(&self.pool, "items", org_id, page, |q| {
            q.push(" AND session_id = ");
            q.push_bind(sid.clone());
            if let Some(tid) = turn_id {
                q.push(" AND turn_id = ");
                q.push_bind(tid.to_string());
            }
        })
        .await
    }

    pub(crate) async fn turn_items_impl(&self, org_id: &str, session_id: Uuid, turn_id: &str) -> Result<Vec<Item>> {
        let docs: Vec<String> = sqlx::query_scalar(
            "SELECT doc::text FROM items WHERE turn_id = $1 AND session_id = $2 AND org_id = $3 ORDER BY seq",
        )
        .bind(turn_id)
        .bind(session_id.to_string())
        .bind(org_id)
        .fetch_all(&self.pool)
        .await?;
        parse_docs(&docs)
    }

    pub(crate) async fn history_impl(&self, org_id: &str, session_id: Uuid) -> Result<Vec<Item>> {
        let docs: Vec<String> = sqlx::query_scalar(
            "SELECT i.doc::text FROM items i JOIN turns t ON t.id = i.turn_id \
             WHERE i.session_id = $1 AND i.org_id = $2 AND t.status IN ('completed', 'failed', 'cancelled') \
             ORDER BY t.seq, i.seq",
        )
        .bind(session_id.to_string())
        .bind(org_id)
        .fetch_all(&self.pool)
        .await?;
        parse_docs(&docs)
    }

    pub(crate) async fn events_after_impl(&self, session_id: Uuid, after: i64, limit: u32) -> Result<Vec<Event>> {
        let docs: Vec<String> =
            sqlx::query_scalar("SELECT doc::text FROM events WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3")
                .bind(session_id.to_string())
                .bind(after)
                .bind(i64::from(limit))
                .fetch_all(&self.pool)
                .await?;
        parse_docs(&docs)
    }

    pub(crate) async fn claim_idempotency_key_impl(
        &self,
        org_id: &str,
        session_id: Uuid,
        key: &str,
        at: i64,
    ) -> Result<bool> {
        let done = sqlx::query(
            "INSERT INTO idempotency_keys (org_id, session_id, key, created_at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT DO NOTHING",
        )
        .bind(org_id)
        .bind(session_id.to_string())
        .bind(key)
        .bind(at)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() > 0)
    }
}
