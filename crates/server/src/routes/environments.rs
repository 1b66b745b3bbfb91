//! `/v1/agents/environments`: standalone environments (create 201 pending,
//! retrieve, list, the Rebyte `DELETE` extension) and their live files. A
//! direct file operation initializes the sandbox if nothing has yet.

use crate::auth::Auth;
use crate::error::{ApiError, ApiResult};
use crate::extract::{Json, ListQuery};
use crate::now;
use crate::state::AppState;
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use base64::Engine as _;
use protocol::admin::Scope;
use protocol::environment::{
    Environment, EnvironmentConfig, EnvironmentCreate, EnvironmentDeleted, EnvironmentFile, EnvironmentRecord,
    EnvironmentStatus, FileParam, HostedFile, NetworkAccess,
};
use protocol::list::{List, Order};
use serde_json::{Value, json};
use std::sync::Arc;

/// Most entries in `allowed_domains` or `blocked_domains`.
const MAX_DOMAINS: usize = 256;

/// Largest inline file accepted, decoded.
pub const MAX_FILE_BYTES: usize = 32 << 20;

/// Checks a path for the environment: under `/workspace`, no `..`.
pub fn check_path(param: &str, path: &str) -> ApiResult<String> {
    let full = if path.starts_with('/') { path.to_string() } else { format!("/workspace/{path}") };
    let inside = full == "/workspace" || full.starts_with("/workspace/");
    if !inside || full.split('/').any(|c| c == "..") || full.contains('\0') {
        return Err(ApiError::invalid(param, format!("'{path}' is not a path under /workspace")));
    }
    Ok(full)
}

fn decode(param: &str, data: &str) -> ApiResult<Vec<u8>> {
    if data.len() > MAX_FILE_BYTES / 3 * 4 + 4 {
        return Err(ApiError::TooLarge(format!("{param}: files are limited to {MAX_FILE_BYTES} bytes")));
    }
    base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|e| ApiError::invalid(param, format!("data must be base64: {e}")))
}

/// Checks an environment configuration; returns its registered files.
pub fn check_config(prefix: &str, c: &EnvironmentConfig) -> ApiResult<Vec<HostedFile>> {
    let p = |f: &str| format!("{prefix}.{f}");
    if c.environment_id.is_some() {
        return Err(ApiError::unsupported(
            p("environment_id"),
            "use {\"type\": \"reference\", \"environment_id\": …} to share an environment",
        ));
    }
    if let Some(size) = &c.container_size
        && engine::environments::size_limits(sandbox::Limits::default(), Some(size)).is_none()
    {
        return Err(ApiError::invalid(p("container_size"), "must be one of small, medium, large"));
    }
    if c.environment_template_id.is_some() {
        return Err(ApiError::unsupported(p("environment_template_id"), "environment templates are not supported"));
    }
    if c.desktop.as_ref().is_some_and(|d| d.enabled) {
        return Err(ApiError::unsupported(p("desktop.enabled"), "desktops are not offered by this server"));
    }
    if c.plugins.as_ref().is_some_and(|v| !v.is_empty()) {
        return Err(ApiError::unsupported(p("plugins"), "plugins are not supported"));
    }
    if c.skills.as_ref().is_some_and(|v| !v.is_empty()) {
        return Err(ApiError::unsupported(p("skills"), "skills are not supported"));
    }
    if let Some(n) = &c.network {
        let (allowed, blocked) =
            (n.allowed_domains.as_deref().unwrap_or(&[]), n.blocked_domains.as_deref().unwrap_or(&[]));
        if n.access != NetworkAccess::Restricted && !(allowed.is_empty() && blocked.is_empty()) {
            return Err(ApiError::invalid(p("network"), "allowed_domains and blocked_domains need access: restricted"));
        }
        for (field, list) in [("allowed_domains", allowed), ("blocked_domains", blocked)] {
            if list.len() > MAX_DOMAINS {
                return Err(ApiError::invalid(
                    p(&format!("network.{field}")),
                    format!("at most {MAX_DOMAINS} domains"),
                ));
            }
            for (i, d) in list.iter().enumerate() {
                sandbox::egress::policy::parse_domain(d)
                    .map_err(|e| ApiError::invalid(p(&format!("network.{field}[{i}]")), e))?;
            }
        }
        if !allowed.is_empty() && !blocked.is_empty() {
            return Err(ApiError::invalid(p("network.blocked_domains"), "cannot be combined with allowed_domains"));
        }
    }
    for (k, _) in c.env.iter().flatten() {
        if k.is_empty() || k.contains('=') || k.contains('\0') {
            return Err(ApiError::invalid(p(&format!("env.{k}")), "not a valid variable name"));
        }
    }
    for (i, s) in c.setup_commands.iter().flatten().enumerate() {
        protocol::validate::text(&p(&format!("setup_commands[{i}].command")), &s.command, 1, 64 * 1024)?;
        if let Some(cwd) = &s.cwd {
            check_path(&p(&format!("setup_commands[{i}].cwd")), cwd)?;
        }
    }
    let mut files = Vec::new();
    let mut total = 0usize;
    for (i, f) in c.files.iter().flatten().enumerate() {
        match f {
            FileParam::FileId { .. } => {
                return Err(ApiError::unsupported(
                    p(&format!("files[{i}].type")),
                    "uploaded file ids are not supported; send inline data",
                ));
            }
            FileParam::Inline { path, data } => {
                let full = check_path(&p(&format!("files[{i}].path")), path)?;
                let bytes = decode(&p(&format!("files[{i}].data")), data)?;
                total += bytes.len();
                if total > MAX_FILE_BYTES {
                    return Err(ApiError::TooLarge(format!(
                        "{prefix}.files: inline files are limited to {MAX_FILE_BYTES} bytes in all"
                    )));
                }
                files.push(HostedFile {
                    id: format!("file_{}", uuid::Uuid::new_v4().simple()),
                    path: full,
                    size_bytes: bytes.len() as u64,
                    kind: "inline".into(),
                });
            }
        }
    }
    Ok(files)
}

/// Checks that every `vault_credentials` binding names an environment
/// credential of the caller's organization (the values are not kept here).
pub async fn check_bindings(state: &AppState, auth: &Auth, prefix: &str, c: &EnvironmentConfig) -> ApiResult<()> {
    let Some(bindings) = c.vault_credentials.as_ref().filter(|b| !b.is_empty()) else { return Ok(()) };
    state.credentials.resolve_environment_credentials(&auth.org_id, bindings).await.map(|_| ()).map_err(|e| {
        match ApiError::from(e) {
            ApiError::Invalid { param: Some(p), code, message } => {
                ApiError::Invalid { param: Some(format!("{prefix}.{p}")), code, message }
            }
            other => other,
        }
    })
}

/// A new pending environment record.
pub fn new_record(config: EnvironmentConfig, files: Vec<HostedFile>, owner: Option<String>) -> EnvironmentRecord {
    EnvironmentRecord {
        id: format!("env_{}", uuid::Uuid::new_v4().simple()),
        created_at: now(),
        status: EnvironmentStatus::Pending,
        error: None,
        owner_session: owner,
        shared: false,
        metadata: Default::default(),
        config,
        files,
        setup_log: None,
        setup: None,
        vault_ids: Vec::new(),
    }
}

/// Loads an environment of the caller's organization, or 404.
pub async fn load(state: &AppState, auth: &Auth, id: &str) -> ApiResult<EnvironmentRecord> {
    state.store.get_environment(&auth.org_id, id).await?.ok_or_else(|| ApiError::not_found("environment", id))
}

pub async fn create(
    State(state): State<AppState>,
    auth: Auth,
    Json(req): Json<EnvironmentCreate>,
) -> ApiResult<(StatusCode, axum::Json<Environment>)> {
    auth.require(Scope::TasksWrite)?;
    let files = check_config("environment", &req.environment.config)?;
    check_bindings(&state, &auth, "environment", &req.environment.config).await?;
    let metadata = req.metadata.unwrap_or_default();
    protocol::validate::metadata("metadata", &metadata)?;
    let mut record = new_record(req.environment.config, files, None);
    record.metadata = metadata;
    record.vault_ids = req.vault_ids.unwrap_or_default();
    state.store.put_environment(&auth.org_id, &record).await?;
    Ok((StatusCode::CREATED, axum::Json(record.resource())))
}

pub async fn retrieve(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<Environment>> {
    auth.require(Scope::TasksRead)?;
    Ok(axum::Json(load(&state, &auth, &id).await?.resource()))
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
    let page = state.store.list_environments(&auth.org_id, &q.page).await?;
    let data = page.items.iter().map(EnvironmentRecord::resource).collect();
    Ok(axum::Json(List::new(data, page.has_more, |e: &Environment| e.id.clone())))
}

pub async fn delete(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<EnvironmentDeleted>> {
    auth.require(Scope::TasksWrite)?;
    load(&state, &auth, &id).await?;
    let attached = state.store.sessions_on_environment(&auth.org_id, &id).await?;
    if attached > 0 {
        return Err(ApiError::Conflict(format!(
            "environment '{id}' still has {attached} attached session(s); delete them first"
        )));
    }
    remove(&state, &auth.org_id, &id).await?;
    Ok(axum::Json(EnvironmentDeleted { id, object: "agent.environment.deleted".into(), deleted: true }))
}

/// Stops everything in an environment and deletes it with its files.
pub async fn remove(state: &AppState, org_id: &str, id: &str) -> ApiResult<()> {
    // Its MCP brokers (stdio servers in the sandbox) end with it; the sandbox id is the environment's.
    state.mcp.remove_sandbox(id).await;
    state.envs.destroy(id, true).await;
    state.store.delete_environment(org_id, id).await?;
    Ok(())
}

/// Maps a sandbox error to the answer.
pub fn sandbox_error(param: &str, e: sandbox::Error) -> ApiError {
    match e.http_status() {
        400 => ApiError::invalid(param, e.to_string()),
        404 => ApiError::NotFound(e.to_string()),
        413 => ApiError::TooLarge(e.to_string()),
        _ => ApiError::Internal(e.to_string()),
    }
}

async fn sandbox_of(state: &AppState, auth: &Auth, id: &str) -> ApiResult<Arc<dyn sandbox::Sandbox>> {
    load(state, auth, id).await?;
    state.envs.sandbox(&auth.org_id, id).await.map_err(|e| ApiError::Conflict(e.message))
}

/// `POST /v1/agents/environments/{id}/files`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum FileCreate {
    Inline { path: String, data: String },
    FileId { path: String, file_id: String },
}

pub async fn create_file(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
    Json(req): Json<FileCreate>,
) -> ApiResult<axum::Json<EnvironmentFile>> {
    auth.require(Scope::TasksWrite)?;
    let (path, data) = match req {
        FileCreate::Inline { path, data } => (check_path("path", &path)?, decode("data", &data)?),
        FileCreate::FileId { .. } => {
            return Err(ApiError::unsupported("type", "uploaded file ids are not supported; send inline data"));
        }
    };
    if data.len() > MAX_FILE_BYTES {
        return Err(ApiError::TooLarge(format!("files are limited to {MAX_FILE_BYTES} bytes")));
    }
    let sandbox = sandbox_of(&state, &auth, &id).await?;
    let size = data.len() as u64;
    sandbox.write_file(&path, data).await.map_err(|e| sandbox_error("path", e))?;
    let file = HostedFile {
        id: format!("file_{}", uuid::Uuid::new_v4().simple()),
        path: path.clone(),
        size_bytes: size,
        kind: "inline".into(),
    };
    state
        .envs
        .update(&auth.org_id, &id, |r| {
            r.files.retain(|f| f.path != file.path);
            r.files.push(file);
        })
        .await?;
    Ok(axum::Json(EnvironmentFile {
        environment_id: id,
        object: "agent.environment.file".into(),
        path,
        size_bytes: size,
    }))
}

pub async fn list_files(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
    RawQuery(q): RawQuery,
) -> ApiResult<axum::Json<Value>> {
    auth.require(Scope::TasksRead)?;
    let mut limit = 20usize;
    let mut order = Order::Desc;
    let mut page: Option<String> = None;
    let mut root = "/workspace".to_string();
    for (k, v) in form_urlencoded::parse(q.as_deref().unwrap_or("").as_bytes()) {
        match k.as_ref() {
            "limit" => {
                limit = v
                    .parse()
                    .ok()
                    .filter(|n| (1..=100).contains(n))
                    .ok_or_else(|| ApiError::invalid("limit", "limit must be between 1 and 100"))?
            }
            "order" => {
                order = match v.as_ref() {
                    "asc" => Order::Asc,
                    "desc" => Order::Desc,
                    _ => return Err(ApiError::invalid("order", "order must be asc or desc")),
                }
            }
            "page" => page = Some(v.into_owned()),
            "path" => root = check_path("path", &v)?,
            other => return Err(ApiError::invalid(other, format!("unknown query parameter '{other}'"))),
        }
    }
    let sandbox = sandbox_of(&state, &auth, &id).await?;
    let mut files = Vec::new();
    let mut stack = vec![root];
    while let Some(dir) = stack.pop() {
        for entry in sandbox.list_dir(&dir).await.map_err(|e| sandbox_error("path", e))? {
            let path = format!("{}/{}", dir.trim_end_matches('/'), entry.name);
            match entry.kind {
                sandbox::FileKind::Dir => stack.push(path),
                _ => files.push((path, entry.size)),
            }
            if files.len() > 100_000 {
                return Err(ApiError::invalid("path", "too many files below this path; narrow it"));
            }
        }
    }
    files.sort();
    if order == Order::Desc {
        files.reverse();
    }
    let start = match &page {
        Some(token) => files
            .iter()
            .position(|(p, _)| p == token)
            .map(|i| i + 1)
            .ok_or_else(|| ApiError::invalid("page", "unknown page token"))?,
        None => 0,
    };
    let slice: Vec<_> = files.iter().skip(start).take(limit).collect();
    let has_more = start + slice.len() < files.len();
    let next = if has_more { slice.last().map(|(p, _)| p.clone()) } else { None };
    let data: Vec<Value> = slice
        .iter()
        .map(|(path, size)| json!({"environment_id": id, "object": "agent.environment.file", "path": path, "size_bytes": size}))
        .collect();
    Ok(axum::Json(json!({"object": "list", "data": data, "has_more": has_more, "next": next})))
}
