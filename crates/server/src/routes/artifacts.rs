//! `/v1/agents/sessions/{id}/artifacts`: files a session published from its
//! output directory. Only that session's artifacts are reachable here.

use crate::auth::Auth;
use crate::error::{ApiError, ApiResult};
use crate::extract::{self, ListQuery};
use crate::routes::sessions;
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
    let session = sessions::load(&state, &auth, extract::session_id(&id)?).await?;
    let q = ListQuery::parse(q.as_deref(), &["environment_id"])?;
    let page = state.store.list_artifacts(&auth.org_id, session.id, &q.page).await?;
    let env = q.rest.iter().find(|(k, _)| k == "environment_id").map(|(_, v)| v.clone());
    let data = page.items.into_iter().filter(|a| env.as_ref().is_none_or(|e| &a.environment_id == e)).collect();
    Ok(axum::Json(List::new(data, page.has_more, |a: &Artifact| a.id.clone())))
}

async fn load(state: &AppState, auth: &Auth, id: &str, artifact_id: &str) -> ApiResult<(Artifact, Vec<u8>)> {
    let session = sessions::load(state, auth, extract::session_id(id)?).await?;
    state
        .store
        .get_artifact(&auth.org_id, session.id, artifact_id)
        .await?
        .ok_or_else(|| ApiError::not_found("artifact", artifact_id))
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
    let session = sessions::load(&state, &auth, extract::session_id(&id)?).await?;
    if !state.store.delete_artifact(&auth.org_id, session.id, &artifact_id).await? {
        return Err(ApiError::not_found("artifact", &artifact_id));
    }
    Ok(axum::Json(json!({"id": artifact_id, "object": "agent.session.artifact.deleted", "deleted": true})))
}
