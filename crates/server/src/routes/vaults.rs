//! `/v1/vaults` and `/v1/vaults/{vault_id}/credentials`: vaults hold
//! credentials for MCP servers and environments. Secret values are write-only:
//! they are sealed with the master key before they reach the store, and no
//! answer carries them. Reading needs `vaults:read`, changing `vaults:write`;
//! another organization's vault or credential is not found (404).

use crate::auth::Auth;
use crate::credentials::sealed;
use crate::error::{ApiError, ApiResult};
use crate::extract::{Json, ListQuery};
use crate::now;
use crate::state::AppState;
use axum::extract::{Path, RawQuery, State};
use protocol::Metadata;
use protocol::admin::Scope;
use protocol::list::List;
use protocol::validate;
use protocol::vault::{
    Credential, CredentialCreate, CredentialUpdate, Deleted, Vault, VaultCreate, VaultUpdate, check_name,
    is_credential_id, is_vault_id, new_vault_id,
};

/// Loads a vault of the caller's organization, or 404.
pub async fn load(state: &AppState, auth: &Auth, id: &str) -> ApiResult<Vault> {
    if !is_vault_id(id) {
        return Err(ApiError::not_found("vault", id));
    }
    state.store.get_vault(&auth.org_id, id).await?.ok_or_else(|| ApiError::not_found("vault", id))
}

/// Reads the list filters every vault list takes: `metadata[key]=value` and
/// `status` / `status[]` (`active`, `archived`). Vaults and credentials are
/// never archived here, so a filter without `active` matches nothing.
fn filters(rest: Vec<(String, String)>) -> ApiResult<(Vec<(String, String)>, bool)> {
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
    let as_map: Metadata = metadata.iter().cloned().collect();
    validate::metadata("metadata", &as_map)?;
    let any_active = statuses.is_empty() || statuses.iter().any(|s| s == "active");
    Ok((metadata, any_active))
}

fn empty<T>() -> List<T> {
    List::new(Vec::new(), false, |_: &T| String::new())
}

pub async fn create(
    State(state): State<AppState>,
    auth: Auth,
    Json(req): Json<VaultCreate>,
) -> ApiResult<axum::Json<Vault>> {
    auth.require(Scope::VaultsWrite)?;
    let name = req.name.as_deref().map(|n| check_name("name", n)).transpose()?;
    let metadata = req.metadata.unwrap_or_default();
    validate::metadata("metadata", &metadata)?;
    let vault = Vault { id: new_vault_id(), created_at: now(), metadata, name, object: "vault".into() };
    state.store.create_vault(&auth.org_id, &vault).await?;
    Ok(axum::Json(vault))
}

pub async fn retrieve(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<Vault>> {
    auth.require(Scope::VaultsRead)?;
    Ok(axum::Json(load(&state, &auth, &id).await?))
}

pub async fn update(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
    Json(req): Json<VaultUpdate>,
) -> ApiResult<axum::Json<Vault>> {
    auth.require(Scope::VaultsWrite)?;
    let mut vault = load(&state, &auth, &id).await?;
    if let Some(metadata) = req.metadata {
        validate::metadata("metadata", &metadata)?;
        vault.metadata = metadata;
    }
    let name = match req.name {
        protocol::agent::Patch::Value(n) => protocol::agent::Patch::Value(check_name("name", &n)?),
        other => other,
    };
    name.apply_opt(&mut vault.name);
    if !state.store.put_vault(&auth.org_id, &vault).await? {
        return Err(ApiError::not_found("vault", &id));
    }
    Ok(axum::Json(vault))
}

pub async fn list(
    State(state): State<AppState>,
    auth: Auth,
    RawQuery(q): RawQuery,
) -> ApiResult<axum::Json<List<Vault>>> {
    auth.require(Scope::VaultsRead)?;
    let q = ListQuery::parse(q.as_deref(), &["metadata[", "status", "status[]"])?;
    let (metadata, any_active) = filters(q.rest)?;
    if !any_active {
        return Ok(axum::Json(empty()));
    }
    let page = state.store.list_vaults(&auth.org_id, &metadata, &q.page).await?;
    Ok(axum::Json(List::new(page.items, page.has_more, |v: &Vault| v.id.clone())))
}

pub async fn delete(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<Deleted>> {
    auth.require(Scope::VaultsWrite)?;
    if !is_vault_id(&id) || !state.store.delete_vault(&auth.org_id, &id).await? {
        return Err(ApiError::not_found("vault", &id));
    }
    Ok(axum::Json(Deleted { id, deleted: true, object: "vault.deleted".into() }))
}

pub async fn create_credential(
    State(state): State<AppState>,
    auth: Auth,
    Path(vault_id): Path<String>,
    Json(req): Json<CredentialCreate>,
) -> ApiResult<axum::Json<Credential>> {
    auth.require(Scope::VaultsWrite)?;
    let vault = load(&state, &auth, &vault_id).await?;
    let record = sealed::new_record(state.credentials.cipher(), &auth.org_id, &vault.id, req)?;
    state.store.create_credential(&auth.org_id, &record).await?;
    tracing::info!(credential_id = %record.credential.id, vault_id = %vault.id, kind = record.credential.auth.kind(), "created a credential");
    Ok(axum::Json(record.credential))
}

fn check_credential_id(id: &str) -> ApiResult<()> {
    if is_credential_id(id) { Ok(()) } else { Err(ApiError::not_found("credential", id)) }
}

pub async fn retrieve_credential(
    State(state): State<AppState>,
    auth: Auth,
    Path((vault_id, id)): Path<(String, String)>,
) -> ApiResult<axum::Json<Credential>> {
    auth.require(Scope::VaultsRead)?;
    load(&state, &auth, &vault_id).await?;
    check_credential_id(&id)?;
    let record = state.store.get_credential(&auth.org_id, &vault_id, &id).await?;
    record.map(|r| axum::Json(r.credential)).ok_or_else(|| ApiError::not_found("credential", &id))
}

pub async fn update_credential(
    State(state): State<AppState>,
    auth: Auth,
    Path((vault_id, id)): Path<(String, String)>,
    Json(req): Json<CredentialUpdate>,
) -> ApiResult<axum::Json<Credential>> {
    auth.require(Scope::VaultsWrite)?;
    load(&state, &auth, &vault_id).await?;
    check_credential_id(&id)?;
    let org_id = auth.org_id.clone();
    let record = state
        .credentials
        .update_with(&auth.org_id, &vault_id, &id, |cipher, current| sealed::rotate(cipher, &org_id, current, &req))
        .await?;
    if req.auth.is_some() {
        tracing::info!(credential_id = %id, vault_id = %vault_id, "rotated a credential");
    }
    Ok(axum::Json(record.credential))
}

pub async fn list_credentials(
    State(state): State<AppState>,
    auth: Auth,
    Path(vault_id): Path<String>,
    RawQuery(q): RawQuery,
) -> ApiResult<axum::Json<List<Credential>>> {
    auth.require(Scope::VaultsRead)?;
    load(&state, &auth, &vault_id).await?;
    let q = ListQuery::parse(q.as_deref(), &["metadata[", "status", "status[]"])?;
    let (metadata, any_active) = filters(q.rest)?;
    if !any_active {
        return Ok(axum::Json(empty()));
    }
    let page = state.store.list_credentials(&auth.org_id, &vault_id, &metadata, &q.page).await?;
    Ok(axum::Json(List::new(page.items, page.has_more, |c: &Credential| c.id.clone())))
}

pub async fn delete_credential(
    State(state): State<AppState>,
    auth: Auth,
    Path((vault_id, id)): Path<(String, String)>,
) -> ApiResult<axum::Json<Deleted>> {
    auth.require(Scope::VaultsWrite)?;
    load(&state, &auth, &vault_id).await?;
    if !is_credential_id(&id) || !state.store.delete_credential(&auth.org_id, &vault_id, &id).await? {
        return Err(ApiError::not_found("credential", &id));
    }
    Ok(axum::Json(Deleted { id, deleted: true, object: "vault.credential.deleted".into() }))
}
