//! `/v1/agents/environments`: standalone environments (create 201 pending,
//! retrieve, list, the Rebyte `DELETE` extension) and their live files.

use crate::auth::Auth;
use crate::error::{ApiError, ApiResult};
use crate::extract::{self, Json, ListQuery};
use crate::state::AppState;
use app::environments::{FileCreate, FileQuery};
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use protocol::admin::Scope;
use protocol::environment::{
    Environment, EnvironmentCreate, EnvironmentDeleted, EnvironmentFile, EnvironmentFork, EnvironmentRecord,
};
use protocol::list::{List, Order};
use serde_json::{Value, json};

pub async fn create(
    State(state): State<AppState>,
    auth: Auth,
    Json(req): Json<EnvironmentCreate>,
) -> ApiResult<(StatusCode, axum::Json<Environment>)> {
    auth.require(Scope::TasksWrite)?;
    let record = state.app.environments(&auth.org_id).create(req).await?;
    Ok((StatusCode::CREATED, axum::Json(record.resource())))
}

pub async fn retrieve(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<Environment>> {
    auth.require(Scope::TasksRead)?;
    Ok(axum::Json(state.app.environments(&auth.org_id).get(&extract::environment_id(&id)?).await?.resource()))
}

pub async fn list(
    State(state): State<AppState>,
    auth: Auth,
    RawQuery(q): RawQuery,
) -> ApiResult<axum::Json<List<Environment>>> {
    auth.require(Scope::TasksRead)?;
    let q = ListQuery::parse(q.as_deref(), &["type"])?;
    if let Some((_, t)) = q.rest.iter().find(|(k, _)| k == "type")
        && t != "openai_hosted"
    {
        return Err(ApiError::invalid("type", format!("type must be openai_hosted, got '{t}'")));
    }
    let page = state.app.environments(&auth.org_id).list(&q.page).await?;
    let data = page.items.iter().map(EnvironmentRecord::resource).collect();
    Ok(axum::Json(List::new(data, page.has_more, |e: &Environment| e.id.clone())))
}

pub async fn delete(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<EnvironmentDeleted>> {
    auth.require(Scope::TasksWrite)?;
    state.app.environments(&auth.org_id).delete(&extract::environment_id(&id)?).await?;
    Ok(axum::Json(EnvironmentDeleted { id, object: "agent.environment.deleted".into(), deleted: true }))
}

/// `POST /v1/agents/environments/{id}/restart` (a Rebyte extension): stops
/// every process in the sandbox, keeps the files, does not repeat setup.
pub async fn restart(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<Environment>> {
    auth.require(Scope::TasksWrite)?;
    let record = state.app.environments(&auth.org_id).restart(&extract::environment_id(&id)?).await?;
    Ok(axum::Json(record.resource()))
}

/// `POST /v1/agents/environments/{id}/fork` (a Rebyte extension): a new
/// environment whose files are a copy-on-write copy of this one's now.
pub async fn fork(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
    Json(req): Json<EnvironmentFork>,
) -> ApiResult<(StatusCode, axum::Json<Environment>)> {
    auth.require(Scope::TasksWrite)?;
    let record = state.app.environments(&auth.org_id).fork(&extract::environment_id(&id)?, req).await?;
    Ok((StatusCode::CREATED, axum::Json(record.resource())))
}

pub async fn create_file(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
    Json(req): Json<FileCreate>,
) -> ApiResult<axum::Json<EnvironmentFile>> {
    auth.require(Scope::TasksWrite)?;
    Ok(axum::Json(state.app.environments(&auth.org_id).write_file(&extract::environment_id(&id)?, req).await?))
}

/// `limit`, `order`, `page` and `path` of a file listing.
fn file_query(q: Option<&str>) -> ApiResult<FileQuery> {
    let mut query = FileQuery { path: "/workspace".into(), limit: 20, order: Order::Desc, page: None };
    for (k, v) in form_urlencoded::parse(q.unwrap_or("").as_bytes()) {
        match k.as_ref() {
            "limit" => {
                query.limit = v
                    .parse()
                    .ok()
                    .filter(|n| (1..=100).contains(n))
                    .ok_or_else(|| ApiError::invalid("limit", "limit must be between 1 and 100"))?
            }
            "order" => {
                query.order = match v.as_ref() {
                    "asc" => Order::Asc,
                    "desc" => Order::Desc,
                    _ => return Err(ApiError::invalid("order", "order must be asc or desc")),
                }
            }
            "page" => query.page = Some(v.into_owned()),
            "path" => query.path = v.into_owned(),
            other => return Err(ApiError::invalid(other, format!("unknown query parameter '{other}'"))),
        }
    }
    Ok(query)
}

pub async fn list_files(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
    RawQuery(q): RawQuery,
) -> ApiResult<axum::Json<Value>> {
    auth.require(Scope::TasksRead)?;
    let page = state
        .app
        .environments(&auth.org_id)
        .list_files(&extract::environment_id(&id)?, file_query(q.as_deref())?)
        .await?;
    let data: Vec<Value> = page
        .files
        .iter()
        .map(|(path, size)| json!({"environment_id": id, "object": "agent.environment.file", "path": path, "size_bytes": size}))
        .collect();
    Ok(axum::Json(json!({"object": "list", "data": data, "has_more": page.has_more, "next": page.next})))
}
