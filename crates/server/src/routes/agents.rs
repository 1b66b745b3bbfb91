//! `/v1/agents`: saved, versioned agent definitions. An update stores a new
//! version; sessions keep the version they snapshotted. Deleting an agent
//! deletes no session.

use crate::auth::Auth;
use crate::error::{ApiError, ApiResult};
use crate::extract::{Json, ListQuery};
use crate::now;
use crate::state::AppState;
use axum::extract::{Path, RawQuery, State};
use protocol::admin::Scope;
use protocol::agent::{Agent, AgentCreate, AgentDeleted, AgentRecord, AgentUpdate, Patch};
use protocol::ids::Kind;
use protocol::list::List;
use protocol::validate::{self, Owner};

/// How often an update retries when a concurrent update stored a version first.
const UPDATE_ATTEMPTS: usize = 8;

fn check(record: &AgentRecord) -> ApiResult<()> {
    validate::metadata("metadata", &record.metadata)?;
    if let Some(name) = &record.name {
        validate::text("name", name, 0, 256)?;
    }
    validate::agent_config("", &record.config, Owner::SavedAgent)?;
    Ok(())
}

/// Loads an agent of the caller's organization, or 404.
pub async fn load(state: &AppState, auth: &Auth, id: &str) -> ApiResult<AgentRecord> {
    if !Kind::Agent.matches(id) {
        return Err(ApiError::not_found("agent", id));
    }
    state.store.get_agent(&auth.org_id, id).await?.ok_or_else(|| ApiError::not_found("agent", id))
}

pub async fn create(
    State(state): State<AppState>,
    auth: Auth,
    Json(req): Json<AgentCreate>,
) -> ApiResult<axum::Json<Agent>> {
    auth.require(Scope::TasksWrite)?;
    let (name, metadata, config) = req.into_parts();
    let at = now();
    let record =
        AgentRecord { id: Kind::Agent.mint(), version: 1, created_at: at, updated_at: at, name, metadata, config };
    check(&record)?;
    state.store.create_agent(&auth.org_id, &record).await?;
    Ok(axum::Json(record.resource()))
}

pub async fn retrieve(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<Agent>> {
    auth.require(Scope::TasksRead)?;
    Ok(axum::Json(load(&state, &auth, &id).await?.resource()))
}

pub async fn update(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
    Json(req): Json<AgentUpdate>,
) -> ApiResult<axum::Json<Agent>> {
    auth.require(Scope::TasksWrite)?;
    if matches!(req.model, Patch::Null) {
        return Err(ApiError::invalid("model", "model cannot be null"));
    }
    for _ in 0..UPDATE_ATTEMPTS {
        let mut record = load(&state, &auth, &id).await?;
        req.clone().apply(&mut record);
        record.version += 1;
        record.updated_at = now();
        check(&record)?;
        if state.store.update_agent(&auth.org_id, &record).await? {
            return Ok(axum::Json(record.resource()));
        }
    }
    Err(ApiError::Conflict(format!("agent '{id}' is being updated concurrently; try again")))
}

pub async fn list(
    State(state): State<AppState>,
    auth: Auth,
    RawQuery(q): RawQuery,
) -> ApiResult<axum::Json<List<Agent>>> {
    auth.require(Scope::TasksRead)?;
    let q = ListQuery::parse(q.as_deref(), &[])?;
    let page = state.store.list_agents(&auth.org_id, &q.page).await?;
    let data = page.items.iter().map(AgentRecord::resource).collect();
    Ok(axum::Json(List::new(data, page.has_more, |a: &Agent| a.id.clone())))
}

pub async fn delete(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<AgentDeleted>> {
    auth.require(Scope::TasksWrite)?;
    if !Kind::Agent.matches(&id) || !state.store.delete_agent(&auth.org_id, &id).await? {
        return Err(ApiError::not_found("agent", &id));
    }
    Ok(axum::Json(AgentDeleted { id, object: "agent.deleted".into(), deleted: true }))
}
