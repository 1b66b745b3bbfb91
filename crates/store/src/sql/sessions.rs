//! Sessions: the document, the read cache in front of it, and the lists'
//! filters. The engine's state writes come through the journal's batch writers.

use super::{Backend, Doc, Sql, SqlStore};
use crate::cluster::notices::Notice;
use crate::{Page, Result, SessionFilter};
use protocol::ids::SessionId;
use protocol::list::PageRequest;
use protocol::session::SessionRecord;

impl<B: Backend> SqlStore<B> {
    pub(crate) async fn create_session_impl(&self, org_id: &str, session: &SessionRecord) -> Result<()> {
        let sql = Sql::new("INSERT INTO sessions (id, org_id, agent_id, doc) VALUES ($1, $2, $3, $4)")
            .bind(session.id)
            .bind(org_id)
            .bind(session.agent.id.as_str())
            .bind(Doc(serde_json::to_string(session)?));
        self.db.execute(&sql).await?;
        self.sessions.created(org_id, session);
        Ok(())
    }

    pub(crate) async fn get_session_impl(&self, org_id: &str, id: SessionId) -> Result<Option<SessionRecord>> {
        let sql = || Sql::new("SELECT doc FROM sessions WHERE id = $1 AND org_id = $2").bind(id).bind(org_id);
        self.cached_doc(&self.sessions, org_id, &id, sql).await
    }

    pub(crate) async fn put_session_impl(&self, org_id: &str, session: &SessionRecord) -> Result<bool> {
        // The engine-owned fields keep their stored values (the backend's
        // write): a metadata update racing a running turn must not roll its
        // status back.
        let changed = self.db.put_session(org_id, session.id, Doc(serde_json::to_string(session)?)).await;
        self.sessions.invalidate([session.id]);
        self.db.announce(Notice::Session(session.id)).await;
        changed
    }

    pub(crate) async fn list_sessions_impl(
        &self,
        org_id: &str,
        filter: &SessionFilter,
        page: &PageRequest,
    ) -> Result<Page<SessionRecord>> {
        self.page_of("sessions", org_id, page, |q| {
            if let Some(agent_id) = &filter.agent_id {
                q.push(" AND agent_id = ");
                q.push_bind(agent_id.as_str());
            }
            for (key, value) in &filter.metadata {
                (B::DIALECT.metadata)(q, "sessions", key, value);
            }
        })
        .await
    }

    pub(crate) async fn delete_session_impl(&self, org_id: &str, id: SessionId) -> Result<bool> {
        let delete = Sql::new("DELETE FROM sessions WHERE id = $1 AND org_id = $2").bind(id).bind(org_id);
        let rows = ["turns", "items", "events", "idempotency_keys"]
            .map(|table| Sql::new(format!("DELETE FROM {table} WHERE session_id = $1")).bind(id));
        let done = self.db.transaction(&delete, &rows).await;
        self.sessions.invalidate([id]);
        self.db.announce(Notice::Session(id)).await;
        Ok(done? > 0)
    }
}
