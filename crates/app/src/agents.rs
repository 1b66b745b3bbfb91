//! Agents: saved, versioned definitions. An update stores a new version;
//! sessions keep the version they were created with.

use crate::{App, Error, Result, mcp_secrets, now};
use protocol::agent::{AgentCreate, AgentRecord, AgentUpdate, Patch};
use protocol::ids::Kind;
use protocol::list::PageRequest;
use protocol::validate::{self, Owner};
use store::Page;

/// How often an update that lost a race with another update is retried.
const UPDATE_ATTEMPTS: usize = 8;

/// The agents of one organization.
pub struct Service<'a> {
    pub(crate) app: &'a App,
    pub(crate) org: &'a str,
}

fn check(record: &AgentRecord) -> Result<()> {
    validate::metadata("metadata", &record.metadata)?;
    if let Some(name) = &record.name {
        validate::text("name", name, 0, 256)?;
    }
    validate::agent_config("", &record.config, Owner::SavedAgent)?;
    Ok(())
}

impl Service<'_> {
    /// The agent, or 404 (also for ids of another organization).
    pub async fn get(&self, id: &str) -> Result<AgentRecord> {
        if !Kind::Agent.matches(id) {
            return Err(Error::not_found("agent", id));
        }
        self.app.store.get_agent(self.org, id).await?.ok_or_else(|| Error::not_found("agent", id))
    }

    pub async fn create(&self, req: AgentCreate) -> Result<AgentRecord> {
        let (name, metadata, config) = req.into_parts();
        let at = now();
        let record = AgentRecord {
            id: Kind::Agent.mint(),
            version: 1,
            created_at: at,
            updated_at: at,
            name,
            metadata,
            config,
            sealed_mcp_secrets: None,
        };
        check(&record)?;
        self.check_credential_ids(&record).await?;
        let mut record = record;
        mcp_secrets::seal_agent_secrets(self.app.credentials.cipher(), self.org, &mut record, true)?;
        self.app.store.create_agent(self.org, &record).await?;
        Ok(record)
    }

    /// Stores the next version.
    pub async fn update(&self, id: &str, req: AgentUpdate) -> Result<AgentRecord> {
        if matches!(req.model, Patch::Null) {
            return Err(Error::invalid("model", "model cannot be null"));
        }
        let tools_replaced = !matches!(req.tools, Patch::Absent);
        for _ in 0..UPDATE_ATTEMPTS {
            let mut record = self.get(id).await?;
            req.clone().apply(&mut record);
            record.version += 1;
            record.updated_at = now();
            check(&record)?;
            if tools_replaced {
                self.check_credential_ids(&record).await?;
                mcp_secrets::seal_agent_secrets(self.app.credentials.cipher(), self.org, &mut record, true)?;
            }
            if self.app.store.update_agent(self.org, &record).await? {
                return Ok(record);
            }
        }
        Err(Error::Conflict(format!("agent '{id}' is being updated concurrently; try again")))
    }

    /// Checks that every MCP tool's explicit `credential_id` names a
    /// credential of this organization (in any of its vaults: which vaults a
    /// session attaches is decided when the session is made, and checked
    /// then). An unknown id and another organization's get the same 404
    /// naming `tools[i].credential_id`.
    async fn check_credential_ids(&self, record: &AgentRecord) -> Result<()> {
        let wanted = record.config.mcp_credential_ids();
        if wanted.is_empty() {
            return Ok(());
        }
        let ids: Vec<String> = wanted.iter().map(|(_, id)| id.to_string()).collect();
        let found = self.app.store.existing_credentials(self.org, &ids).await?;
        match wanted.into_iter().find(|(_, id)| !found.iter().any(|f| f == id)) {
            None => Ok(()),
            Some((i, id)) => Err(Error::MissingReference {
                param: format!("tools[{i}].credential_id"),
                message: format!("No credential found with id '{id}'."),
            }),
        }
    }

    pub async fn list(&self, page: &PageRequest) -> Result<Page<AgentRecord>> {
        Ok(self.app.store.list_agents(self.org, page).await?)
    }

    pub async fn delete(&self, id: &str) -> Result<()> {
        if !Kind::Agent.matches(id) || !self.app.store.delete_agent(self.org, id).await? {
            return Err(Error::not_found("agent", id));
        }
        Ok(())
    }
}
