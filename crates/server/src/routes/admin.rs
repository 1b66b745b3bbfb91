//! `/v1/admin`: organizations and keys, for keys with the `admin` scope. An
//! admin key manages the whole server, not only its own organization.

use crate::auth::Auth;
use crate::error::{ApiError, ApiResult};
use crate::extract::Json;
use crate::keys;
use crate::now;
use crate::state::AppState;
use axum::extract::{Path, State};
use protocol::admin::{ApiKey, ApiKeyCreate, ApiKeyCreated, Organization, OrganizationCreate, Scope};
use protocol::list::List;

pub async fn create_organization(
    State(state): State<AppState>,
    auth: Auth,
    Json(req): Json<OrganizationCreate>,
) -> ApiResult<axum::Json<Organization>> {
    auth.require(Scope::Admin)?;
    Ok(axum::Json(keys::create_organization(state.app.store.as_ref(), &req.name).await?))
}

pub async fn create_key(
    State(state): State<AppState>,
    auth: Auth,
    Json(req): Json<ApiKeyCreate>,
) -> ApiResult<axum::Json<ApiKeyCreated>> {
    auth.require(Scope::Admin)?;
    let scopes = req.scopes.unwrap_or_else(|| vec![Scope::TasksRead, Scope::TasksWrite]);
    let created = keys::create_key(state.app.store.as_ref(), &req.organization_id, req.name, scopes, None)
        .await
        .map_err(|e| match e {
            app::Error::NotFound(m) => ApiError::invalid_with(Some("organization_id".into()), "not_found", m),
            other => ApiError(other),
        })?;
    Ok(axum::Json(created))
}

pub async fn list_keys(State(state): State<AppState>, auth: Auth) -> ApiResult<axum::Json<List<ApiKey>>> {
    auth.require(Scope::Admin)?;
    let data: Vec<ApiKey> = state.app.store.list_api_keys(None).await?.iter().map(keys::view).collect();
    Ok(axum::Json(List::new(data, false, |k: &ApiKey| k.id.clone())))
}

pub async fn revoke_key(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<ApiKey>> {
    auth.require(Scope::Admin)?;
    if !state.app.store.revoke_api_key(None, &id, now()).await? {
        return Err(ApiError::not_found("key", &id));
    }
    state.keys.forget(&id);
    let key = state
        .app
        .store
        .list_api_keys(None)
        .await?
        .into_iter()
        .find(|k| k.id == id)
        .ok_or_else(|| ApiError::not_found("key", &id))?;
    Ok(axum::Json(keys::view(&key)))
}
