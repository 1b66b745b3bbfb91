//! `/v1/vaults` and `/v1/vaults/{vault_id}/credentials`: vaults hold
//! credentials for MCP servers and environments. Secret values are write-only:
//! they are sealed with the master key before they reach the store, and no
//! answer carries them. Reading needs `vaults:read`, changing `vaults:write`;
//! another organization's vault or credential is not found (404).

use crate::auth::Auth;
use crate::error::{ApiError, ApiResult};
use crate::extract::{Json, ListQuery};
use crate::state::AppState;
use app::vaults::ListFilter;
use axum::extract::{Path, RawQuery, State};
use protocol::admin::Scope;
use protocol::list::List;
use protocol::vault::{Credential, CredentialCreate, CredentialUpdate, Deleted, Vault, VaultCreate, VaultUpdate};

/// Reads the list filters every vault list takes: `metadata[key]=value` and
/// `status` / `status[]` (`active`, `archived`).
fn filter(rest: Vec<(String, String)>) -> ApiResult<ListFilter> {
    let mut metadata = Vec::new();
    let mut statuses = Vec::new();
    for (key, value) in rest {
        if let Some(k) = key.strip_prefix("metadata[").and_then(|k| k.strip_suffix(']')) {
            metadata.push((k.to_string(), value));
        } else if key == "status" || key == "status[]" {
            if value != "active" && value != "archived" {
                return Err(ApiError::invalid(key, format!("status must be 'active' or 'archived', got '{value}'")));
            }
            statuses.push(value);
        } else {
            return Err(ApiError::invalid(key.clone(), format!("unknown query parameter '{key}'")));
        }
    }
    let active = statuses.is_empty() || statuses.iter().any(|s| s == "active");
    Ok(ListFilter { metadata, active })
}

const LIST_FILTERS: &[&str] = &["metadata[", "status", "status[]"];

pub async fn create(
    State(state): State<AppState>,
    auth: Auth,
    Json(req): Json<VaultCreate>,
) -> ApiResult<axum::Json<Vault>> {
    auth.require(Scope::VaultsWrite)?;
    Ok(axum::Json(state.app.vaults(&auth.org_id).create(req).await?))
}

pub async fn retrieve(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<Vault>> {
    auth.require(Scope::VaultsRead)?;
    Ok(axum::Json(state.app.vaults(&auth.org_id).get(&id).await?))
}

pub async fn update(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
    Json(req): Json<VaultUpdate>,
) -> ApiResult<axum::Json<Vault>> {
    auth.require(Scope::VaultsWrite)?;
    Ok(axum::Json(state.app.vaults(&auth.org_id).update(&id, req).await?))
}

pub async fn list(
    State(state): State<AppState>,
    auth: Auth,
    RawQuery(q): RawQuery,
) -> ApiResult<axum::Json<List<Vault>>> {
    auth.require(Scope::VaultsRead)?;
    let q = ListQuery::parse(q.as_deref(), LIST_FILTERS)?;
    let page = state.app.vaults(&auth.org_id).list(&filter(q.rest)?, &q.page).await?;
    Ok(axum::Json(List::new(page.items, page.has_more, |v: &Vault| v.id.clone())))
}

pub async fn delete(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<Deleted>> {
    auth.require(Scope::VaultsWrite)?;
    state.app.vaults(&auth.org_id).delete(&id).await?;
    Ok(axum::Json(Deleted { id, deleted: true, object: "vault.deleted".into() }))
}

pub async fn create_credential(
    State(state): State<AppState>,
    auth: Auth,
    Path(vault_id): Path<String>,
    Json(req): Json<CredentialCreate>,
) -> ApiResult<axum::Json<Credential>> {
    auth.require(Scope::VaultsWrite)?;
    Ok(axum::Json(state.app.vaults(&auth.org_id).create_credential(&vault_id, req).await?))
}

pub async fn retrieve_credential(
    State(state): State<AppState>,
    auth: Auth,
    Path((vault_id, id)): Path<(String, String)>,
) -> ApiResult<axum::Json<Credential>> {
    auth.require(Scope::VaultsRead)?;
    Ok(axum::Json(state.app.vaults(&auth.org_id).get_credential(&vault_id, &id).await?))
}

pub async fn update_credential(
    State(state): State<AppState>,
    auth: Auth,
    Path((vault_id, id)): Path<(String, String)>,
    Json(req): Json<CredentialUpdate>,
) -> ApiResult<axum::Json<Credential>> {
    auth.require(Scope::VaultsWrite)?;
    Ok(axum::Json(state.app.vaults(&auth.org_id).update_credential(&vault_id, &id, req).await?))
}

pub async fn list_credentials(
    State(state): State<AppState>,
    auth: Auth,
    Path(vault_id): Path<String>,
    RawQuery(q): RawQuery,
) -> ApiResult<axum::Json<List<Credential>>> {
    auth.require(Scope::VaultsRead)?;
    let q = ListQuery::parse(q.as_deref(), LIST_FILTERS)?;
    let page = state.app.vaults(&auth.org_id).list_credentials(&vault_id, &filter(q.rest)?, &q.page).await?;
    Ok(axum::Json(List::new(page.items, page.has_more, |c: &Credential| c.id.clone())))
}

pub async fn delete_credential(
    State(state): State<AppState>,
    auth: Auth,
    Path((vault_id, id)): Path<(String, String)>,
) -> ApiResult<axum::Json<Deleted>> {
    auth.require(Scope::VaultsWrite)?;
    state.app.vaults(&auth.org_id).delete_credential(&vault_id, &id).await?;
    Ok(axum::Json(Deleted { id, deleted: true, object: "vault.credential.deleted".into() }))
}
