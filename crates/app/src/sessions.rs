//! Sessions (= Conversations): one function creates a session whichever API
//! asks (sessions, conversations, responses), attaching its environment,
//! sealing its secrets, announcing `agent.session.created` and submitting its
//! first input; reads see every write made before them.

use crate::environment_contents::Prepared;
use crate::environments::new_record as new_environment;
use crate::{App, Error, Result, mcp_secrets, now};
use protocol::Metadata;
use protocol::agent::{AgentConfig, Patch};
use protocol::environment::{EnvironmentRecord, EnvironmentStatus};
use protocol::event::{Event, EventBody};
use protocol::ids::SessionId;
use protocol::item::{Content, Item, Role};
use protocol::list::PageRequest;
use protocol::session::{
    EnvironmentParam, EnvironmentRole, INLINE_AGENT_ID, Review, Session, SessionAgent, SessionAgentParam,
    SessionCreate, SessionRecord, SessionUpdate,
};
use protocol::turn::Turn;
use protocol::turn_settings::NewTurn;
use protocol::validate::{self, Owner};
use std::sync::Arc;
use store::{Page, SessionFilter};
use tokio::sync::broadcast;

/// How long a session delete waits for its MCP servers to acknowledge `DELETE`.
pub const CLOSE_MCP_WITHIN: std::time::Duration = std::time::Duration::from_secs(15);

/// Where a new session's agent comes from.
#[derive(Debug)]
pub enum AgentSource {
    /// A saved agent's current version, with inline overrides.
    Saved { agent_id: String, overrides: Option<SessionAgentParam> },
    /// Inline only: `agent.model` is required.
    Inline(SessionAgentParam),
    /// None yet: a conversation, whose model the Responses API supplies on use.
    Unconfigured,
}

/// Everything a new session is made of.
#[derive(Debug)]
pub struct NewSession {
    pub agent: AgentSource,
    pub environment: EnvironmentParam,
    /// The first turn's input messages.
    pub input: Option<Vec<Vec<Content>>>,
    /// History to start with, without running a turn (conversation items).
    pub items: Vec<(Role, Vec<Content>)>,
    pub metadata: Metadata,
    pub vault_ids: Vec<String>,
    pub prompt_cache_options: Option<protocol::session::PromptCacheOptions>,
    pub review: Review,
    /// Subscribe to the session's events before anything is announced.
    pub subscribe: bool,
}

impl NewSession {
    /// A session with no agent, environment or input yet.
    pub fn conversation(metadata: Metadata, items: Vec<(Role, Vec<Content>)>) -> Self {
        Self {
            agent: AgentSource::Unconfigured,
            environment: EnvironmentParam::None,
            input: None,
            items,
            metadata,
            vault_ids: Vec::new(),
            prompt_cache_options: None,
            review: Review::default(),
            subscribe: false,
        }
    }

    /// A Session API create request, checked.
    pub fn from_request(req: SessionCreate) -> Result<Self> {
        let input = parse_input(req.input)?;
        let subscribe = req.stream == Some(true);
        if subscribe && input.is_none() {
            return Err(Error::invalid("input", "input is required when stream is true"));
        }
        let agent = match (req.agent_id, req.agent) {
            (Some(agent_id), overrides) => AgentSource::Saved { agent_id, overrides },
            (None, Some(agent)) if agent.model.is_some() => AgentSource::Inline(agent),
            (None, _) => return Err(Error::invalid("agent.model", "agent.model is required when agent_id is omitted")),
        };
        Ok(Self {
            agent,
            environment: req.environment,
            input,
            items: Vec::new(),
            metadata: req.metadata.unwrap_or_default(),
            vault_ids: req.vault_ids.unwrap_or_default(),
            prompt_cache_options: req.prompt_cache_options,
            review: req.review.unwrap_or_default(),
            subscribe,
        })
    }
}

/// A created session, its first turn, and its events from before it was
/// announced (with the sequence number they start after).
#[derive(Debug)]
pub struct Created {
    pub session: SessionRecord,
    pub turn: Option<Turn>,
    pub events: Option<(broadcast::Receiver<Arc<Event>>, i64)>,
}

/// Parses a session create's `input`: a string or a list of user messages.
fn parse_input(input: Option<serde_json::Value>) -> Result<Option<Vec<Vec<Content>>>> {
    let Some(value) = input.filter(|v| !v.is_null()) else { return Ok(None) };
    let input: protocol::item::Input = serde_json::from_value(value)
        .map_err(|e| Error::invalid("input", format!("input must be a string or a list of user messages: {e}")))?;
    input.into_messages().map(Some).map_err(|m| Error::invalid("input", m))
}

/// Checks a session's agent snapshot before it is stored. Inline MCP HTTP
/// `authorization` and `headers` are accepted here (unlike on saved agents):
/// [`mcp_secrets::seal_session_secrets`] seals them before the record is written.
pub fn check_agent(config: &AgentConfig) -> Result<()> {
    Ok(validate::agent_config("agent", config, Owner::Session)?)
}

/// A new, idle session record with no environment.
fn new_record(agent: SessionAgent, metadata: Metadata) -> SessionRecord {
    SessionRecord::new(agent, metadata, now())
}

/// The environment a new session gets, checked before anything is written.
enum Attach {
    None,
    /// A private environment created with (and owned by) the session, and
    /// the skills and files to store with it.
    Inline(EnvironmentRecord, Prepared),
    /// An existing environment, shared by reference.
    Reference(EnvironmentRecord),
}

/// The sessions of one organization.
pub struct Service<'a> {
    pub(crate) app: &'a App,
    pub(crate) org: &'a str,
}

impl Service<'_> {
    async fn attach(&self, param: &EnvironmentParam) -> Result<Attach> {
        match param {
            EnvironmentParam::None => Ok(Attach::None),
            // The client's own way to share: exactly the Rebyte reference.
            EnvironmentParam::OpenaiHosted(config) if config.environment_id.is_some() => {
                let mut rest = (**config).clone();
                let id = rest.environment_id.take().unwrap_or_default();
                if let Some(field) = configured(&rest) {
                    return Err(Error::invalid(
                        format!("environment.{field}"),
                        "an environment_id attaches an existing environment as it is: send no configuration beside it",
                    ));
                }
                self.attach_reference(&id).await
            }
            EnvironmentParam::OpenaiHosted(config) => {
                let mut config = (**config).clone();
                let template = self.app.templates(self.org).resolve("environment", &mut config).await?;
                let mut prepared = self.app.environments(self.org).prepare("environment", &mut config).await?;
                let mut env = new_environment(config, std::mem::take(&mut prepared.files), None);
                env.template = template;
                env.node = self.app.engine.node_id();
                env.skills = std::mem::take(&mut prepared.skills);
                Ok(Attach::Inline(env, prepared))
            }
            EnvironmentParam::Reference(r) => self.attach_reference(&r.environment_id).await,
            EnvironmentParam::SelfHosted(_) => {
                Err(Error::unsupported("environment.type", "self_hosted environments are not offered by this server"))
            }
        }
    }

    /// An existing environment a new session shares (by reference).
    async fn attach_reference(&self, raw_id: &str) -> Result<Attach> {
        let env = self.app.environments(self.org).named(raw_id).await?;
        match env.status {
            EnvironmentStatus::Initializing => Err(Error::Conflict(format!(
                "environment '{}' is running its setup; create the session when it finishes",
                env.id
            ))),
            EnvironmentStatus::Failed => Err(Error::Conflict(format!(
                "environment '{}' failed to initialize and cannot take new sessions",
                env.id
            ))),
            _ => Ok(Attach::Reference(env)),
        }
    }

    /// Checks that every MCP tool's explicit `credential_id` is a credential
    /// of one of the session's vaults (`vault_ids`, already checked to be this
    /// organization's), where its turns will look for it: an unknown id,
    /// another organization's, or one outside those vaults is a 404 naming
    /// `agent.tools[i].credential_id` (the same answer for all three).
    async fn check_credential_ids(&self, config: &AgentConfig, vault_ids: &[String]) -> Result<()> {
        let wanted = config.mcp_credential_ids();
        if wanted.is_empty() {
            return Ok(());
        }
        let attached = if vault_ids.is_empty() {
            Vec::new()
        } else {
            self.app.store.vault_credentials(self.org, vault_ids).await?
        };
        match wanted.into_iter().find(|(_, id)| !attached.iter().any(|r| r.credential.id == *id)) {
            None => Ok(()),
            Some((i, id)) => Err(Error::MissingReference {
                param: format!("agent.tools[{i}].credential_id"),
                message: format!(
                    "No credential found with id '{id}' in the vaults attached to this session (vault_ids)."
                ),
            }),
        }
    }

    async fn agent(&self, source: AgentSource) -> Result<SessionAgent> {
        let (mut agent, overrides) = match source {
            AgentSource::Saved { agent_id, overrides } => {
                let saved = self.app.agents(self.org).get(&agent_id).await?;
                let mut config = saved.config.clone();
                mcp_secrets::unseal_agent_secrets(self.app.credentials.cipher(), self.org, &saved, &mut config.tools)?;
                let agent = SessionAgent { id: saved.id, version: Some(saved.version), name: saved.name, config };
                (agent, overrides)
            }
            AgentSource::Inline(overrides) => (inline_agent(), Some(overrides)),
            AgentSource::Unconfigured => (inline_agent(), None),
        };
        if let Some(overrides) = overrides {
            if overrides.model.as_deref() == Some("") {
                return Err(Error::invalid("agent.model", "model cannot be empty"));
            }
            overrides.apply(&mut agent.config);
        }
        Ok(agent)
    }

    /// Creates a session: the one way, whichever API asks.
    pub async fn create(&self, new: NewSession) -> Result<Created> {
        let attach = self.attach(&new.environment).await?;
        // Each attached vault must be this organization's (404 naming `vault_ids[i]`).
        self.app.credentials.check_vault_ids(self.org, &new.vault_ids).await?;
        validate::metadata("metadata", &new.metadata)?;
        let configured = !matches!(new.agent, AgentSource::Unconfigured);
        let agent = self.agent(new.agent).await?;
        if configured {
            check_agent(&agent.config)?;
        }
        self.check_credential_ids(&agent.config, &new.vault_ids).await?;
        let mut record = new_record(agent, new.metadata);
        mcp_secrets::seal_session_secrets(self.app.credentials.cipher(), self.org, &mut record, true)?;
        record.prompt_cache_options = new.prompt_cache_options;
        record.review = new.review;
        record.vault_ids = new.vault_ids;
        match attach {
            Attach::None => {}
            Attach::Inline(mut env, prepared) => {
                env.owner_session = Some(record.id);
                let environments = self.app.environments(self.org);
                environments.store_contents(&env.id, prepared).await?;
                if let Err(e) = self.app.store.put_environment(self.org, &env).await {
                    environments.discard(&env.id).await;
                    return Err(e.into());
                }
                record.environment = env.session_view();
                record.environment_role = EnvironmentRole::Owner;
            }
            Attach::Reference(env) => {
                // The first reference makes an environment shared, for good.
                let env = self
                    .app
                    .envs
                    .update(self.org, &env.id, |e| e.shared = true)
                    .await?
                    .ok_or_else(|| Error::not_found("environment", env.id.as_str()))?;
                record.environment = env.session_view();
                record.environment_role = EnvironmentRole::Member;
            }
        }
        if let Err(e) = self.app.store.create_session(self.org, &record).await {
            if record.environment_role == EnvironmentRole::Owner
                && let Some(env_id) = record.environment.id()
            {
                self.app.environments(self.org).discard(env_id).await;
            }
            return Err(e.into());
        }
        let events = new.subscribe.then(|| self.app.engine.bus().subscribe_now(record.id));
        self.app
            .engine
            .bus()
            .publish(record.id, vec![EventBody::SessionCreated { session: Box::new(record.resource()) }]);
        if !new.items.is_empty() {
            self.app.engine.append_messages(self.org, &record, new.items).await?;
        }
        let turn = match new.input {
            Some(messages) => Some(self.app.turns(self.org).submit(&record, messages, NewTurn::plain()).await?),
            None => None,
        };
        Ok(Created { session: record, turn, events })
    }

    /// The session as it is now, or 404.
    pub async fn get(&self, id: SessionId) -> Result<SessionRecord> {
        // The engine writes session state behind; read what it has announced.
        self.app.engine.flush().await?;
        self.app.store.get_session(self.org, id).await?.ok_or_else(|| Error::not_found("session", &id.to_string()))
    }

    /// The session resource with its environment as it is now.
    pub async fn view(&self, record: &SessionRecord) -> Result<Session> {
        let mut session = record.resource();
        if let Some(env_id) = record.environment.id()
            && let Some(env) = self.app.store.get_environment(self.org, env_id).await?
        {
            session.environment = env.session_view();
        }
        Ok(session)
    }

    /// Changes what future turns run with.
    pub async fn update(&self, id: SessionId, req: SessionUpdate) -> Result<SessionRecord> {
        let mut record = self.get(id).await?;
        if req.agent.as_ref().and_then(|a| a.model.as_deref()) == Some("") {
            return Err(Error::invalid("agent.model", "model cannot be empty"));
        }
        let tools_replaced = req.agent.as_ref().is_some_and(|a| !matches!(a.tools, Patch::Absent));
        req.apply(&mut record);
        validate::metadata("metadata", &record.metadata)?;
        check_agent(&record.agent.config)?;
        if tools_replaced {
            self.check_credential_ids(&record.agent.config, &record.vault_ids).await?;
        }
        mcp_secrets::seal_session_secrets(self.app.credentials.cipher(), self.org, &mut record, tools_replaced)?;
        self.put(&record).await?;
        Ok(record)
    }

    /// Stores a changed record (metadata, agent) as it is.
    pub async fn put(&self, record: &SessionRecord) -> Result<()> {
        if !self.app.store.put_session(self.org, record).await? {
            return Err(Error::not_found("session", &record.id.to_string()));
        }
        Ok(())
    }

    /// Adds messages to a session's history without running a turn; returns
    /// the items added.
    pub async fn append(&self, session: &SessionRecord, messages: Vec<(Role, Vec<Content>)>) -> Result<Vec<Item>> {
        let turn = self.app.engine.append_messages(self.org, session, messages).await?;
        self.app.turns(self.org).turn_items(session.id, turn.id).await
    }

    pub async fn list(&self, filter: &SessionFilter, page: &PageRequest) -> Result<Page<SessionRecord>> {
        validate::metadata("metadata", &filter.metadata.iter().cloned().collect())?;
        self.app.engine.flush().await?;
        Ok(self.app.store.list_sessions(self.org, filter, page).await?)
    }

    /// Deletes a session (through either API): its turns stop, its HTTP MCP
    /// sessions end upstream, and its private environment goes with it.
    pub async fn delete(&self, id: SessionId) -> Result<()> {
        let record = self.get(id).await?;
        if !self.app.store.delete_session(self.org, id).await? {
            return Err(Error::not_found("session", &id.to_string()));
        }
        self.app.engine.forget(id);
        // Its HTTP MCP sessions end upstream (`DELETE`); its stdio brokers live on with the sandbox.
        let _ = tokio::time::timeout(CLOSE_MCP_WITHIN, self.app.mcp.close_session(&id.to_string())).await;
        // A private environment goes with its session; a shared one stays.
        if record.environment_role == EnvironmentRole::Owner
            && let Some(env_id) = record.environment.id()
            && let Some(env) = self.app.store.get_environment(self.org, env_id).await?
            && !env.shared
        {
            self.app.environments(self.org).remove(env_id).await?;
        }
        Ok(())
    }
}

fn inline_agent() -> SessionAgent {
    SessionAgent { id: INLINE_AGENT_ID.into(), version: None, name: None, config: AgentConfig::default() }
}

/// The first field an environment configuration sets, if any.
fn configured(config: &protocol::environment::EnvironmentConfig) -> Option<String> {
    let value = serde_json::to_value(config).ok()?;
    let fields = value.as_object()?;
    fields.iter().find(|(_, v)| !v.is_null()).map(|(k, _)| k.clone())
}
