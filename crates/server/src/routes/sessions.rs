//! `/v1/agents/sessions`: a Session pins the agent configuration current at its
//! creation (the saved agent's version plus inline overrides) and owns the
//! history of its turns.

use crate::auth::Auth;
use crate::error::{ApiError, ApiResult};
use crate::extract::{self, Json, ListQuery};
use crate::mcp_secrets;
use crate::now;
use crate::routes::agents;
use crate::routes::{environments, events};
use crate::sse::{self, Until};
use crate::state::AppState;
use axum::extract::{Path, RawQuery, State};
use axum::response::{IntoResponse, Response};
use protocol::Metadata;
use protocol::admin::Scope;
use protocol::agent::{AgentConfig, Patch};
use protocol::environment::{EnvironmentRecord, EnvironmentStatus};
use protocol::event::EventBody;
use protocol::list::List;
use protocol::session::EnvironmentRole;
use protocol::session::{
    EnvironmentParam, INLINE_AGENT_ID, Session, SessionAgent, SessionCreate, SessionDeleted, SessionEnvironment,
    SessionRecord, SessionStatus, SessionUpdate,
};
use protocol::validate::{self, Owner};
use store::SessionFilter;
use uuid::Uuid;

/// How long a session delete waits for its MCP servers to acknowledge `DELETE`.
pub const CLOSE_MCP_WITHIN: std::time::Duration = std::time::Duration::from_secs(15);

/// Loads a session of the caller's organization, or 404.
pub async fn load(state: &AppState, auth: &Auth, id: Uuid) -> ApiResult<SessionRecord> {
    // The engine writes session state behind; read what it has announced.
    state.engine.flush().await.map_err(events::engine_error)?;
    state.store.get_session(&auth.org_id, id).await?.ok_or_else(|| ApiError::not_found("session", &id.to_string()))
}

/// Checks a session's agent snapshot before it is stored. Inline MCP HTTP
/// `authorization` and `headers` are accepted here (unlike on saved agents):
/// [`mcp_secrets::seal_session_secrets`] seals them before the record is written.
pub fn check_agent(config: &AgentConfig) -> ApiResult<()> {
    Ok(validate::agent_config("agent", config, Owner::Session)?)
}

/// A new, idle session record with no environment.
pub fn new_record(agent: SessionAgent, metadata: Metadata) -> SessionRecord {
    let at = now();
    SessionRecord {
        id: protocol::ids::new_session_id(),
        created_at: at,
        last_active_at: at,
        metadata,
        agent,
        environment: SessionEnvironment::None,
        status: SessionStatus::Idle,
        error: None,
        vault_ids: Vec::new(),
        prompt_cache_options: None,
        review: Default::default(),
        usage: None,
        required_actions: Vec::new(),
        environment_role: Default::default(),
        sealed_mcp_secrets: None,
    }
}

/// Parses a session create's `input`: a string or a list of user messages.
fn parse_input(input: Option<serde_json::Value>) -> ApiResult<Option<Vec<Vec<protocol::item::Content>>>> {
    let Some(value) = input else { return Ok(None) };
    if value.is_null() {
        return Ok(None);
    }
    let input: protocol::item::Input = serde_json::from_value(value)
        .map_err(|e| ApiError::invalid("input", format!("input must be a string or a list of user messages: {e}")))?;
    input.into_messages().map(Some).map_err(|m| ApiError::invalid("input", m))
}

/// The environment a new session gets, checked before anything is written.
enum Attach {
    None,
    /// A private environment created with (and owned by) the session.
    Inline(EnvironmentRecord),
    /// An existing environment, shared by reference.
    Reference(EnvironmentRecord),
}

async fn attach(state: &AppState, auth: &Auth, param: &EnvironmentParam) -> ApiResult<Attach> {
    match param {
        EnvironmentParam::None => Ok(Attach::None),
        EnvironmentParam::OpenaiHosted(config) => {
            let files = environments::check_config("environment", config)?;
            environments::check_bindings(state, auth, "environment", config).await?;
            Ok(Attach::Inline(environments::new_record((**config).clone(), files, None)))
        }
        EnvironmentParam::Reference(r) => {
            let env = environments::load(state, auth, &r.environment_id).await?;
            match env.status {
                EnvironmentStatus::Initializing => Err(ApiError::Conflict(format!(
                    "environment '{}' is running its setup; create the session when it finishes",
                    env.id
                ))),
                EnvironmentStatus::Failed => Err(ApiError::Conflict(format!(
                    "environment '{}' failed to initialize and cannot take new sessions",
                    env.id
                ))),
                _ => Ok(Attach::Reference(env)),
            }
        }
        EnvironmentParam::SelfHosted(_) => {
            Err(ApiError::unsupported("environment.type", "self_hosted environments are not offered by this server"))
        }
    }
}

/// The session resource with its environment as it is now.
pub async fn render(state: &AppState, auth: &Auth, record: &SessionRecord) -> ApiResult<Session> {
    let mut session = record.resource();
    if let Some(env_id) = record.environment.id()
        && let Some(env) = state.store.get_environment(&auth.org_id, env_id).await?
    {
        session.environment = env.session_view();
    }
    Ok(session)
}

pub async fn create(State(state): State<AppState>, auth: Auth, Json(req): Json<SessionCreate>) -> ApiResult<Response> {
    auth.require(Scope::TasksWrite)?;
    let attach = attach(&state, &auth, &req.environment).await?;
    let input = parse_input(req.input)?;
    let stream = req.stream == Some(true);
    if stream && input.is_none() {
        return Err(ApiError::invalid("input", "input is required when stream is true"));
    }
    // Each attached vault must be this organization's (404 naming `vault_ids[i]`).
    let vault_ids = req.vault_ids.clone().unwrap_or_default();
    if let Err(e) = state.credentials.check_vault_ids(&auth.org_id, &vault_ids).await {
        return Ok(e.into_response());
    }
    let metadata = req.metadata.unwrap_or_default();
    validate::metadata("metadata", &metadata)?;
    let mut agent = match &req.agent_id {
        Some(id) => {
            let saved = agents::load(&state, &auth, id).await?;
            SessionAgent { id: saved.id, version: Some(saved.version), name: saved.name, config: saved.config }
        }
        None => {
            if req.agent.as_ref().is_none_or(|a| a.model.is_none()) {
                return Err(ApiError::invalid("agent.model", "agent.model is required when agent_id is omitted"));
            }
            SessionAgent { id: INLINE_AGENT_ID.into(), version: None, name: None, config: AgentConfig::default() }
        }
    };
    if let Some(overrides) = req.agent {
        if overrides.model.as_deref() == Some("") {
            return Err(ApiError::invalid("agent.model", "model cannot be empty"));
        }
        overrides.apply(&mut agent.config);
    }
    check_agent(&agent.config)?;
    let mut record = new_record(agent, metadata);
    mcp_secrets::seal_session_secrets(state.credentials.cipher(), &auth.org_id, &mut record, true)?;
    record.prompt_cache_options = req.prompt_cache_options;
    record.review = req.review.unwrap_or_default();
    record.vault_ids = vault_ids;
    match attach {
        Attach::None => {}
        Attach::Inline(mut env) => {
            env.owner_session = Some(record.id.to_string());
            state.store.put_environment(&auth.org_id, &env).await?;
            record.environment = env.session_view();
            record.environment_role = EnvironmentRole::Owner;
        }
        Attach::Reference(env) => {
            // The first reference makes an environment shared, for good.
            let env = state
                .envs
                .update(&auth.org_id, &env.id, |e| e.shared = true)
                .await?
                .ok_or_else(|| ApiError::not_found("environment", &env.id))?;
            record.environment = env.session_view();
            record.environment_role = EnvironmentRole::Member;
        }
    }
    if let Err(e) = state.store.create_session(&auth.org_id, &record).await {
        if record.environment_role == EnvironmentRole::Owner
            && let Some(env_id) = record.environment.id()
        {
            let _ = state.store.delete_environment(&auth.org_id, env_id).await;
        }
        return Err(e.into());
    }
    let rx = stream.then(|| state.engine.bus().subscribe_now(record.id));
    state.engine.bus().publish(record.id, vec![EventBody::SessionCreated { session: Box::new(record.resource()) }]);
    let turn = match input {
        Some(messages) => Some(events::submit(&state, &auth, &record, messages).await?),
        None => None,
    };
    match (rx, turn) {
        (Some(rx), Some(turn)) => {
            Ok(sse::events(state.store.clone(), state.engine.clone(), record.id, rx, None, Until::TurnEnds(turn.id))
                .into_response())
        }
        _ => Ok(axum::Json(render(&state, &auth, &load(&state, &auth, record.id).await?).await?).into_response()),
    }
}

pub async fn retrieve(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<Session>> {
    auth.require(Scope::TasksRead)?;
    let record = load(&state, &auth, extract::session_id(&id)?).await?;
    Ok(axum::Json(render(&state, &auth, &record).await?))
}

pub async fn update(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
    Json(req): Json<SessionUpdate>,
) -> ApiResult<axum::Json<Session>> {
    auth.require(Scope::TasksWrite)?;
    let id = extract::session_id(&id)?;
    let mut record = load(&state, &auth, id).await?;
    if req.agent.as_ref().and_then(|a| a.model.as_deref()) == Some("") {
        return Err(ApiError::invalid("agent.model", "model cannot be empty"));
    }
    let tools_replaced = req.agent.as_ref().is_some_and(|a| !matches!(a.tools, Patch::Absent));
    req.apply(&mut record);
    validate::metadata("metadata", &record.metadata)?;
    check_agent(&record.agent.config)?;
    mcp_secrets::seal_session_secrets(state.credentials.cipher(), &auth.org_id, &mut record, tools_replaced)?;
    if !state.store.put_session(&auth.org_id, &record).await? {
        return Err(ApiError::not_found("session", &id.to_string()));
    }
    Ok(axum::Json(record.resource()))
}

/// Reads `agent_id` and `metadata[key]=value` filters.
fn filter(rest: Vec<(String, String)>) -> ApiResult<SessionFilter> {
    let mut f = SessionFilter::default();
    for (key, value) in rest {
        if key == "agent_id" {
            f.agent_id = Some(value);
        } else if let Some(k) = key.strip_prefix("metadata[").and_then(|k| k.strip_suffix(']')) {
            f.metadata.push((k.to_string(), value));
        } else {
            return Err(ApiError::invalid(key.clone(), format!("unknown query parameter '{key}'")));
        }
    }
    let as_map: Metadata = f.metadata.iter().cloned().collect();
    validate::metadata("metadata", &as_map)?;
    Ok(f)
}

pub async fn list(
    State(state): State<AppState>,
    auth: Auth,
    RawQuery(q): RawQuery,
) -> ApiResult<axum::Json<List<Session>>> {
    auth.require(Scope::TasksRead)?;
    let q = ListQuery::parse(q.as_deref(), &["agent_id", "metadata["])?;
    let f = filter(q.rest)?;
    state.engine.flush().await.map_err(events::engine_error)?;
    let page = state.store.list_sessions(&auth.org_id, &f, &q.page).await?;
    let data = page.items.iter().map(SessionRecord::resource).collect();
    Ok(axum::Json(List::new(data, page.has_more, |s: &Session| s.id.clone())))
}

pub async fn delete(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<SessionDeleted>> {
    auth.require(Scope::TasksWrite)?;
    let uuid = extract::session_id(&id)?;
    if !remove(&state, &auth, uuid).await? {
        return Err(ApiError::not_found("session", &id));
    }
    Ok(axum::Json(SessionDeleted { id, object: "agent.session.deleted".into(), deleted: true }))
}

/// Deletes a session (through either API): its turns stop, its HTTP MCP
/// sessions end upstream, and its private environment goes with it. False
/// when there was no such session.
pub async fn remove(state: &AppState, auth: &Auth, uuid: Uuid) -> ApiResult<bool> {
    let record = match load(state, auth, uuid).await {
        Ok(record) => record,
        Err(ApiError::NotFound(_)) => return Ok(false),
        Err(e) => return Err(e),
    };
    if !state.store.delete_session(&auth.org_id, uuid).await? {
        return Ok(false);
    }
    state.engine.forget(uuid);
    // Its HTTP MCP sessions end upstream (`DELETE`); its stdio brokers live on with the sandbox.
    let _ = tokio::time::timeout(CLOSE_MCP_WITHIN, state.mcp.close_session(&uuid.to_string())).await;
    // A private environment goes with its session; a shared one stays.
    if record.environment_role == EnvironmentRole::Owner
        && let Some(env_id) = record.environment.id()
        && let Some(env) = state.store.get_environment(&auth.org_id, env_id).await?
        && !env.shared
    {
        environments::remove(state, &auth.org_id, env_id).await?;
    }
    Ok(true)
}
