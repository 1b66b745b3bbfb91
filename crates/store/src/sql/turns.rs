//! Turns, items, events and idempotency keys as the engine and the routes
//! read them (the journal's batch writers write them).

use super::{Backend, Doc, Sql, SqlStore};
use crate::{Page, Result};
use protocol::event::Event;
use protocol::ids::{SessionId, TurnId};
use protocol::item::Item;
use protocol::list::PageRequest;
use protocol::turn::Turn;

impl<B: Backend> SqlStore<B> {
    pub(crate) async fn get_turn_impl(&self, org_id: &str, id: TurnId) -> Result<Option<Turn>> {
        self.doc(Sql::new("SELECT doc FROM turns WHERE id = $1 AND org_id = $2").bind(id).bind(org_id)).await
    }

    pub(crate) async fn list_turns_impl(
        &self,
        org_id: &str,
        session_id: SessionId,
        page: &PageRequest,
    ) -> Result<Page<Turn>> {
        self.page_of("turns", org_id, page, |q| {
            q.push(" AND session_id = ");
            q.push_bind(session_id);
        })
        .await
    }

    pub(crate) async fn count_active_turns_impl(&self, org_id: &str) -> Result<i64> {
        let sql = Sql::new("SELECT COUNT(*) FROM turns WHERE status IN ('queued', 'in_progress') AND org_id = $1")
            .bind(org_id);
        Ok(self.fetch_optional::<(i64,)>(sql).await?.map_or(0, |(n,)| n))
    }

    pub(crate) async fn open_turns_impl(&self) -> Result<Vec<(String, Turn)>> {
        let sql =
            Sql::new("SELECT org_id, doc FROM turns WHERE status IN ('queued', 'in_progress', 'waiting') ORDER BY seq");
        self.fetch::<(String, Doc)>(sql).await?.into_iter().map(|(org, doc)| Ok((org, doc.parse()?))).collect()
    }

    pub(crate) async fn list_items_impl(
        &self,
        org_id: &str,
        session_id: SessionId,
        turn_id: Option<TurnId>,
        page: &PageRequest,
    ) -> Result<Page<Item>> {
        self.page_of("items", org_id, page, |q| {
            q.push(" AND session_id = ");
            q.push_bind(session_id);
            if let Some(turn_id) = turn_id {
                q.push(" AND turn_id = ");
                q.push_bind(turn_id);
            }
        })
        .await
    }

    pub(crate) async fn get_item_impl(&self, org_id: &str, session_id: SessionId, id: &str) -> Result<Option<Item>> {
        let sql = Sql::new("SELECT doc FROM items WHERE id = $1 AND session_id = $2 AND org_id = $3")
            .bind(id)
            .bind(session_id)
            .bind(org_id);
        self.doc(sql).await
    }

    pub(crate) async fn delete_item_impl(&self, org_id: &str, session_id: SessionId, id: &str) -> Result<bool> {
        let sql = Sql::new("DELETE FROM items WHERE id = $1 AND session_id = $2 AND org_id = $3")
            .bind(id)
            .bind(session_id)
            .bind(org_id);
        self.changed(sql).await
    }

    pub(crate) async fn delete_turn_impl(&self, org_id: &str, id: TurnId) -> Result<bool> {
        let delete = Sql::new("DELETE FROM turns WHERE id = $1 AND org_id = $2").bind(id).bind(org_id);
        let items = Sql::new("DELETE FROM items WHERE turn_id = $1 AND org_id = $2").bind(id).bind(org_id);
        Ok(self.db.transaction(&delete, &[items]).await? > 0)
    }

    pub(crate) async fn turn_items_impl(
        &self,
        org_id: &str,
        session_id: SessionId,
        turn_id: TurnId,
    ) -> Result<Vec<Item>> {
        let sql = Sql::new("SELECT doc FROM items WHERE turn_id = $1 AND session_id = $2 AND org_id = $3 ORDER BY seq")
            .bind(turn_id)
            .bind(session_id)
            .bind(org_id);
        self.docs(sql).await
    }

    pub(crate) async fn history_impl(&self, org_id: &str, session_id: SessionId) -> Result<Vec<Item>> {
        let sql = Sql::new(
            "SELECT i.doc FROM items i JOIN turns t ON t.id = i.turn_id \
             WHERE i.session_id = $1 AND i.org_id = $2 AND t.status IN ('completed', 'failed', 'cancelled') \
             ORDER BY t.seq, i.seq",
        )
        .bind(session_id)
        .bind(org_id);
        self.docs(sql).await
    }

    pub(crate) async fn max_event_seq_impl(&self) -> Result<i64> {
        let sql = Sql::new("SELECT COALESCE(MAX(seq), 0) FROM events");
        Ok(self.fetch_optional::<(i64,)>(sql).await?.map_or(0, |(seq,)| seq))
    }

    pub(crate) async fn last_event_seq_impl(&self, session_id: SessionId) -> Result<i64> {
        let sql = Sql::new("SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_id = $1").bind(session_id);
        Ok(self.fetch_optional::<(i64,)>(sql).await?.map_or(0, |(seq,)| seq))
    }

    pub(crate) async fn events_after_impl(&self, session_id: SessionId, after: i64, limit: u32) -> Result<Vec<Event>> {
        let sql = Sql::new("SELECT doc FROM events WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3")
            .bind(session_id)
            .bind(after)
            .bind(i64::from(limit));
        self.docs(sql).await
    }

    pub(crate) async fn claim_idempotency_key_impl(
        &self,
        org_id: &str,
        session_id: SessionId,
        key: &str,
        at: i64,
    ) -> Result<bool> {
        self.changed(
            Sql::new(
                "INSERT INTO idempotency_keys (org_id, session_id, key, created_at) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT DO NOTHING",
            )
            .bind(org_id)
            .bind(session_id)
            .bind(key)
            .bind(at),
        )
        .await
    }

    pub(crate) async fn release_idempotency_key_impl(
        &self,
        org_id: &str,
        session_id: SessionId,
        key: &str,
    ) -> Result<()> {
        let sql = Sql::new("DELETE FROM idempotency_keys WHERE org_id = $1 AND session_id = $2 AND key = $3")
            .bind(org_id)
            .bind(session_id)
            .bind(key);
        self.db.execute(&sql).await.map(drop)
    }
}
