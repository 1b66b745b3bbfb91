//! `/v1/agents/sessions`: a Session pins the agent configuration current at its
//! creation (the saved agent's version plus inline overrides) and owns the
//! history of its turns.

use crate::auth::Auth;
use crate::error::{ApiError, ApiResult};
use crate::extract::{self, Json, ListQuery};
use crate::now;
use crate::routes::agents;
use crate::routes::events;
use crate::sse::{self, Until};
use crate::state::AppState;
use axum::extract::{Path, RawQuery, State};
use axum::response::{IntoResponse, Response};
use protocol::Metadata;
use protocol::admin::Scope;
use protocol::agent::AgentConfig;
use protocol::event::EventBody;
use protocol::list::List;
use protocol::session::{
    EnvironmentParam, INLINE_AGENT_ID, Session, SessionAgent, SessionCreate, SessionDeleted, SessionEnvironment,
    SessionRecord, SessionStatus, SessionUpdate,
};
use protocol::tool::{McpTransportParam, ToolParam};
use protocol::validate::{self, Owner};
use store::SessionFilter;
use uuid::Uuid;

/// Loads a session of the caller's organization, or 404.
pub async fn load(state: &AppState, auth: &Auth, id: Uuid) -> ApiResult<SessionRecord> {
    // The engine writes session state behind; read what it has announced.
    state.engine.flush().await.map_err(events::engine_error)?;
    state.store.get_session(&auth.org_id, id).await?.ok_or_else(|| ApiError::not_found("session", &id.to_string()))
}

/// Inline MCP credentials need encryption at rest, which arrives with vaults;
/// until then they are refused rather than stored in the clear.
fn refuse_inline_secrets(tools: &[ToolParam]) -> ApiResult<()> {
    for (i, tool) in tools.iter().enumerate() {
        if let ToolParam::Mcp(m) = tool
            && let McpTransportParam::Http { authorization, headers, .. } = &m.transport
            && (authorization.is_some() || headers.as_ref().is_some_and(|h| !h.is_empty()))
        {
            return Err(ApiError::unsupported(
                format!("agent.tools[{i}].transport.authorization"),
                "inline MCP credentials are not supported yet",
            ));
        }
    }
    Ok(())
}

/// Checks a session's agent snapshot before it is stored.
pub fn check_agent(config: &AgentConfig) -> ApiResult<()> {
    validate::agent_config("agent", config, Owner::Session)?;
    refuse_inline_secrets(&config.tools)
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

pub async fn create(State(state): State<AppState>, auth: Auth, Json(req): Json<SessionCreate>) -> ApiResult<Response> {
    auth.require(Scope::TasksWrite)?;
    match &req.environment {
        EnvironmentParam::None => {}
        EnvironmentParam::OpenaiHosted(_) | EnvironmentParam::Reference { .. } => {
            return Err(ApiError::unsupported("environment.type", "environments are not supported yet"));
        }
        EnvironmentParam::SelfHosted(_) => {
            return Err(ApiError::unsupported(
                "environment.type",
                "self_hosted environments are not offered by this server",
            ));
        }
    }
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
        overrides.apply(&mut agent.config);
    }
    check_agent(&agent.config)?;
    let mut record = new_record(agent, metadata);
    record.prompt_cache_options = req.prompt_cache_options;
    record.review = req.review.unwrap_or_default();
    record.vault_ids = vault_ids;
    state.store.create_session(&auth.org_id, &record).await?;
    let rx = stream.then(|| state.engine.bus().subscribe(record.id));
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
        _ => Ok(axum::Json(load(&state, &auth, record.id).await?.resource()).into_response()),
    }
}

pub async fn retrieve(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<Session>> {
    auth.require(Scope::TasksRead)?;
    Ok(axum::Json(load(&state, &auth, extract::session_id(&id)?).await?.resource()))
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
    req.apply(&mut record);
    validate::metadata("metadata", &record.metadata)?;
    check_agent(&record.agent.config)?;
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
    if !state.store.delete_session(&auth.org_id, uuid).await? {
        return Err(ApiError::not_found("session", &id));
    }
    state.engine.forget(uuid);
    Ok(axum::Json(SessionDeleted { id, object: "agent.session.deleted".into(), deleted: true }))
}
