//! `/v1/skills`: skills and their versions (multipart uploads: the files of
//! one directory as `files[]`, or one zip as `files`) and their zips.

use crate::auth::Auth;
use crate::error::ApiResult;
use crate::extract::{Json, ListQuery};
use crate::multipart::Form;
use crate::state::AppState;
use app::skills::Upload;
use axum::extract::{Path, RawQuery, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use protocol::admin::Scope;
use protocol::list::List;
use protocol::skill::{
    Skill, SkillDeleted, SkillRecord, SkillUpdate, SkillVersion, SkillVersionDeleted, SkillVersionRecord,
};

/// The field names a skill's files come in (the client sends `files[]` for
/// several, `files` for one).
const FILES: &[&str] = &["files[]", "files"];

/// The uploaded files of a form, each with its file name (a relative path).
fn uploads(form: &mut Form) -> Vec<Upload> {
    let parts = form.take(FILES);
    parts.into_iter().map(|p| Upload { filename: p.filename.unwrap_or_default(), data: p.data }).collect()
}

fn zip_response((name, bytes): (String, Vec<u8>)) -> Response {
    let name = crate::routes::attachment_name(&name);
    (
        [
            (header::CONTENT_TYPE, "application/zip".to_string()),
            (header::CONTENT_DISPOSITION, format!("attachment; filename=\"{name}\"")),
        ],
        bytes,
    )
        .into_response()
}

pub async fn create(State(state): State<AppState>, auth: Auth, mut form: Form) -> ApiResult<axum::Json<Skill>> {
    auth.require(Scope::TasksWrite)?;
    form.only(FILES)?;
    let skill = state.app.skills(&auth.org_id).create(uploads(&mut form)).await?;
    Ok(axum::Json(skill.resource()))
}

pub async fn list(
    State(state): State<AppState>,
    auth: Auth,
    RawQuery(q): RawQuery,
) -> ApiResult<axum::Json<List<Skill>>> {
    auth.require(Scope::TasksRead)?;
    let q = ListQuery::parse(q.as_deref(), &[])?;
    let page = state.app.skills(&auth.org_id).list(&q.page).await?;
    let data = page.items.iter().map(SkillRecord::resource).collect();
    Ok(axum::Json(List::new(data, page.has_more, |s: &Skill| s.id.clone())))
}

pub async fn retrieve(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<Skill>> {
    auth.require(Scope::TasksRead)?;
    Ok(axum::Json(state.app.skills(&auth.org_id).get(&id).await?.resource()))
}

pub async fn update(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
    Json(req): Json<SkillUpdate>,
) -> ApiResult<axum::Json<Skill>> {
    auth.require(Scope::TasksWrite)?;
    Ok(axum::Json(state.app.skills(&auth.org_id).set_default(&id, &req.default_version).await?.resource()))
}

pub async fn delete(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<SkillDeleted>> {
    auth.require(Scope::TasksWrite)?;
    state.app.skills(&auth.org_id).delete(&id).await?;
    Ok(axum::Json(SkillDeleted { id, object: "skill.deleted".into(), deleted: true }))
}

pub async fn content(State(state): State<AppState>, auth: Auth, Path(id): Path<String>) -> ApiResult<Response> {
    auth.require(Scope::TasksRead)?;
    Ok(zip_response(state.app.skills(&auth.org_id).content(&id).await?))
}

pub async fn create_version(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
    mut form: Form,
) -> ApiResult<axum::Json<SkillVersion>> {
    auth.require(Scope::TasksWrite)?;
    form.only(&["files[]", "files", "default"])?;
    let default = match form.text("default")?.as_deref() {
        None | Some("false") => false,
        Some("true") => true,
        Some(other) => {
            return Err(crate::error::ApiError::invalid(
                "default",
                format!("default must be true or false, got '{other}'"),
            ));
        }
    };
    let version = state.app.skills(&auth.org_id).create_version(&id, uploads(&mut form), default).await?;
    Ok(axum::Json(version.resource()))
}

pub async fn list_versions(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
    RawQuery(q): RawQuery,
) -> ApiResult<axum::Json<List<SkillVersion>>> {
    auth.require(Scope::TasksRead)?;
    let q = ListQuery::parse(q.as_deref(), &[])?;
    let page = state.app.skills(&auth.org_id).list_versions(&id, &q.page).await?;
    let data = page.items.iter().map(SkillVersionRecord::resource).collect();
    Ok(axum::Json(List::new(data, page.has_more, |v: &SkillVersion| v.id.clone())))
}

pub async fn retrieve_version(
    State(state): State<AppState>,
    auth: Auth,
    Path((id, version)): Path<(String, String)>,
) -> ApiResult<axum::Json<SkillVersion>> {
    auth.require(Scope::TasksRead)?;
    Ok(axum::Json(state.app.skills(&auth.org_id).version(&id, &version).await?.resource()))
}

pub async fn delete_version(
    State(state): State<AppState>,
    auth: Auth,
    Path((id, version)): Path<(String, String)>,
) -> ApiResult<axum::Json<SkillVersionDeleted>> {
    auth.require(Scope::TasksWrite)?;
    let gone = state.app.skills(&auth.org_id).delete_version(&id, &version).await?;
    Ok(axum::Json(SkillVersionDeleted {
        id: gone.id,
        object: "skill.version.deleted".into(),
        deleted: true,
        version: gone.version.to_string(),
    }))
}

pub async fn version_content(
    State(state): State<AppState>,
    auth: Auth,
    Path((id, version)): Path<(String, String)>,
) -> ApiResult<Response> {
    auth.require(Scope::TasksRead)?;
    Ok(zip_response(state.app.skills(&auth.org_id).version_content(&id, &version).await?))
}
