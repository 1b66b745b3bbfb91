//! Artifacts: the files a session published from its output directory after
//! each turn. Only that session's artifacts are reachable through it.

use crate::{App, Error, Result};
use protocol::ids::SessionId;
use protocol::list::PageRequest;
use store::{Artifact, Page};

/// The artifacts of one organization's sessions.
pub struct Service<'a> {
    pub(crate) app: &'a App,
    pub(crate) org: &'a str,
}

impl Service<'_> {
    /// A page of the session's artifacts, optionally of one environment only.
    pub async fn list(
        &self,
        session_id: SessionId,
        environment_id: Option<&str>,
        page: &PageRequest,
    ) -> Result<Page<Artifact>> {
        let session = self.app.sessions(self.org).get(session_id).await?;
        let mut page = self.app.store.list_artifacts(self.org, session.id, page).await?;
        page.items.retain(|a| environment_id.is_none_or(|e| a.environment_id.as_str() == e));
        Ok(page)
    }

    /// An artifact and its content.
    pub async fn get(&self, session_id: SessionId, id: &str) -> Result<(Artifact, Vec<u8>)> {
        let session = self.app.sessions(self.org).get(session_id).await?;
        self.app.store.get_artifact(self.org, session.id, id).await?.ok_or_else(|| Error::not_found("artifact", id))
    }

    pub async fn delete(&self, session_id: SessionId, id: &str) -> Result<()> {
        let session = self.app.sessions(self.org).get(session_id).await?;
        if !self.app.store.delete_artifact(self.org, session.id, id).await? {
            return Err(Error::not_found("artifact", id));
        }
        Ok(())
    }
}
