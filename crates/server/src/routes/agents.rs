//! `/v1/agents`: saved, versioned agent definitions. An update stores a new
//! version; sessions keep the version they snapshotted. Deleting an agent
//! deletes no session.

use crate::auth::Auth;
use crate::error::ApiResult;
use crate::extract::{Json, ListQuery};
use crate::state::AppState;
use axum::extract::{Path, RawQuery, State};
use protocol::admin::Scope;
use protocol::agent::{Agent, AgentCreate, AgentDeleted, AgentRecord, AgentUpdate};
use protocol::list::List;

pub async fn create(
    State(state): State<AppState>,
    auth: Auth,
    Json(req): Json<AgentCreate>,
) -> ApiResult<axum::Json<Agent>> {
    auth.require(Scope::TasksWrite)?;
    Ok(axum::Json(state.app.agents(&auth.org_id).create(req).await?.resource()))
}

pub async fn retrieve(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<Agent>> {
    auth.require(Scope::TasksRead)?;
    Ok(axum::Json(state.app.agents(&auth.org_id).get(&id).await?.resource()))
}

pub async fn update(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
    Json(req): Json<AgentUpdate>,
) -> ApiResult<axum::Json<Agent>> {
    auth.require(Scope::TasksWrite)?;
    Ok(axum::Json(state.app.agents(&auth.org_id).update(&id, req).await?.resource()))
}

pub async fn list(
    State(state): State<AppState>,
    auth: Auth,
    RawQuery(q): RawQuery,
) -> ApiResult<axum::Json<List<Agent>>> {
    auth.require(Scope::TasksRead)?;
    let q = ListQuery::parse(q.as_deref(), &[])?;
    let page = state.app.agents(&auth.org_id).list(&q.page).await?;
    let data = page.items.iter().map(AgentRecord::resource).collect();
    Ok(axum::Json(List::new(data, page.has_more, |a: &Agent| a.id.clone())))
}

pub async fn delete(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<AgentDeleted>> {
    auth.require(Scope::TasksWrite)?;
    state.app.agents(&auth.org_id).delete(&id).await?;
    Ok(axum::Json(AgentDeleted { id, object: "agent.deleted".into(), deleted: true }))
}
