//! `/v1/files`: uploaded files (multipart: `file`, `purpose`, optional
//! `expires_after[anchor]` and `expires_after[seconds]`) and their bytes.

use crate::auth::Auth;
use crate::error::ApiResult;
use crate::extract::ListQuery;
use crate::multipart::Form;
use crate::state::AppState;
use app::files::NewFile;
use axum::extract::{Path, RawQuery, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use protocol::admin::Scope;
use protocol::file::{FileDeleted, FileObject};
use protocol::list::List;

const FIELDS: &[&str] = &["file", "purpose", "expires_after[anchor]", "expires_after[seconds]"];

pub async fn create(State(state): State<AppState>, auth: Auth, mut form: Form) -> ApiResult<axum::Json<FileObject>> {
    auth.require(Scope::TasksWrite)?;
    form.only(FIELDS)?;
    let (purpose, anchor, seconds) =
        (form.text("purpose")?, form.text("expires_after[anchor]")?, form.text("expires_after[seconds]")?);
    let expires_after = match (anchor, seconds) {
        (None, None) => None,
        (anchor, seconds) => Some((anchor.unwrap_or_default(), seconds.unwrap_or_default())),
    };
    let file = form.take(&["file"]).pop();
    let (filename, data) = file.map(|p| (p.filename, p.data)).unwrap_or_default();
    let new = NewFile { filename, data, purpose, expires_after };
    Ok(axum::Json(state.app.files(&auth.org_id).create(new).await?))
}

pub async fn list(
    State(state): State<AppState>,
    auth: Auth,
    RawQuery(q): RawQuery,
) -> ApiResult<axum::Json<List<FileObject>>> {
    auth.require(Scope::TasksRead)?;
    let q = ListQuery::parse(q.as_deref(), &["purpose"])?;
    let purpose = q.rest.iter().find(|(k, _)| k == "purpose").map(|(_, v)| v.as_str());
    let page = state.app.files(&auth.org_id).list(purpose, &q.page).await?;
    Ok(axum::Json(List::new(page.items, page.has_more, |f: &FileObject| f.id.clone())))
}

pub async fn retrieve(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<FileObject>> {
    auth.require(Scope::TasksRead)?;
    Ok(axum::Json(state.app.files(&auth.org_id).get(&id).await?))
}

pub async fn delete(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<FileDeleted>> {
    auth.require(Scope::TasksWrite)?;
    state.app.files(&auth.org_id).delete(&id).await?;
    Ok(axum::Json(FileDeleted { id, object: "file".into(), deleted: true }))
}

pub async fn content(State(state): State<AppState>, auth: Auth, Path(id): Path<String>) -> ApiResult<Response> {
    auth.require(Scope::TasksRead)?;
    let (file, bytes) = state.app.files(&auth.org_id).content(&id).await?;
    let name = crate::routes::attachment_name(&file.filename);
    Ok((
        [
            (header::CONTENT_TYPE, "application/octet-stream".to_string()),
            (header::CONTENT_DISPOSITION, format!("attachment; filename=\"{name}\"")),
        ],
        bytes,
    )
        .into_response())
}
