//! `/v1/agents/environments/templates`: reusable environment configurations
//! (create, retrieve, update, list, delete). Their confidential inputs (`env`
//! values, setup commands, file and skill contents) are never rendered.

use crate::auth::Auth;
use crate::error::ApiResult;
use crate::extract::{Json, ListQuery};
use crate::state::AppState;
use axum::extract::{Path, RawQuery, State};
use protocol::admin::Scope;
use protocol::environment_template::{
    EnvironmentTemplate, EnvironmentTemplateCreate, EnvironmentTemplateDeleted, EnvironmentTemplateRecord,
    EnvironmentTemplateUpdate,
};
use protocol::list::List;

pub async fn create(
    State(state): State<AppState>,
    auth: Auth,
    Json(req): Json<EnvironmentTemplateCreate>,
) -> ApiResult<axum::Json<EnvironmentTemplate>> {
    auth.require(Scope::TasksWrite)?;
    Ok(axum::Json(state.app.templates(&auth.org_id).create(req).await?.resource()))
}

pub async fn retrieve(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<EnvironmentTemplate>> {
    auth.require(Scope::TasksRead)?;
    Ok(axum::Json(state.app.templates(&auth.org_id).get(&id).await?.resource()))
}

pub async fn update(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
    Json(req): Json<EnvironmentTemplateUpdate>,
) -> ApiResult<axum::Json<EnvironmentTemplate>> {
    auth.require(Scope::TasksWrite)?;
    Ok(axum::Json(state.app.templates(&auth.org_id).update(&id, req).await?.resource()))
}

pub async fn list(
    State(state): State<AppState>,
    auth: Auth,
    RawQuery(q): RawQuery,
) -> ApiResult<axum::Json<List<EnvironmentTemplate>>> {
    auth.require(Scope::TasksRead)?;
    let q = ListQuery::parse(q.as_deref(), &[])?;
    let page = state.app.templates(&auth.org_id).list(&q.page).await?;
    let data = page.items.iter().map(EnvironmentTemplateRecord::resource).collect();
    Ok(axum::Json(List::new(data, page.has_more, |t: &EnvironmentTemplate| t.id.clone())))
}

pub async fn delete(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<EnvironmentTemplateDeleted>> {
    auth.require(Scope::TasksWrite)?;
    state.app.templates(&auth.org_id).delete(&id).await?;
    Ok(axum::Json(EnvironmentTemplateDeleted {
        id,
        object: "agent.environment.template.deleted".into(),
        deleted: true,
    }))
}
