//! `/v1/agents/sessions/{id}/artifacts`: files a session published from its
//! output directory. Only that session's artifacts are reachable here.

use crate::auth::Auth;
use crate::error::ApiResult;
use crate::extract::{self, ListQuery};
use crate::state::AppState;
use axum::extract::{Path, RawQuery, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use protocol::admin::Scope;
use protocol::list::List;
use serde_json::json;
use store::Artifact;

pub async fn list(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
    RawQuery(q): RawQuery,
) -> ApiResult<axum::Json<List<Artifact>>> {
    auth.require(Scope::TasksRead)?;
    let q = ListQuery::parse(q.as_deref(), &["environment_id"])?;
    let env = q.rest.iter().find(|(k, _)| k == "environment_id").map(|(_, v)| v.as_str());
    let page = state.app.artifacts(&auth.org_id).list(extract::session_id(&id)?, env, &q.page).await?;
    Ok(axum::Json(List::new(page.items, page.has_more, |a: &Artifact| a.id.clone())))
}

async fn load(state: &AppState, auth: &Auth, id: &str, artifact_id: &str) -> ApiResult<(Artifact, Vec<u8>)> {
    Ok(state.app.artifacts(&auth.org_id).get(extract::session_id(id)?, artifact_id).await?)
}

pub async fn retrieve(
    State(state): State<AppState>,
    auth: Auth,
    Path((id, artifact_id)): Path<(String, String)>,
) -> ApiResult<axum::Json<Artifact>> {
    auth.require(Scope::TasksRead)?;
    Ok(axum::Json(load(&state, &auth, &id, &artifact_id).await?.0))
}

pub async fn content(
    State(state): State<AppState>,
    auth: Auth,
    Path((id, artifact_id)): Path<(String, String)>,
) -> ApiResult<Response> {
    auth.require(Scope::TasksRead)?;
    let (artifact, bytes) = load(&state, &auth, &id, &artifact_id).await?;
    let name = artifact.path.rsplit('/').next().unwrap_or("artifact").replace('"', "");
    Ok((
        [
            (header::CONTENT_TYPE, "application/octet-stream".to_string()),
            (header::CONTENT_DISPOSITION, format!("attachment; filename=\"{name}\"")),
        ],
        bytes,
    )
        .into_response())
}

pub async fn delete(
    State(state): State<AppState>,
    auth: Auth,
    Path((id, artifact_id)): Path<(String, String)>,
) -> ApiResult<axum::Json<serde_json::Value>> {
    auth.require(Scope::TasksWrite)?;
    state.app.artifacts(&auth.org_id).delete(extract::session_id(&id)?, &artifact_id).await?;
    Ok(axum::Json(json!({"id": artifact_id, "object": "agent.session.artifact.deleted", "deleted": true})))
}
