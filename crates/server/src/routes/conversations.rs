//! `/v1/conversations`: the Conversations view over the same session rows,
//! with `conv_<uuid>` ids. A conversation created here has no saved agent; the
//! Responses API supplies the model on use.

use crate::auth::Auth;
use crate::error::{ApiError, ApiResult};
use crate::extract::{self, Json, ListQuery};
use crate::routes::responses;
use crate::state::AppState;
use app::responses::input::conversation_items;
use app::sessions::NewSession;
use axum::extract::RawQuery;
use axum::extract::{Path, State};
use protocol::admin::Scope;
use protocol::agent::Patch;
use protocol::conversation::{Conversation, ConversationCreate, ConversationDeleted, ConversationUpdate};
use protocol::response as view;
use protocol::session::SessionRecord;
use protocol::validate;
use serde_json::Value;

/// The session behind a `conv_` id, or a 404 naming the conversation.
async fn load(state: &AppState, auth: &Auth, id: &str) -> ApiResult<SessionRecord> {
    let uuid = extract::conversation_id(id)?;
    state.app.sessions(&auth.org_id).get(uuid).await.map_err(|_| ApiError::not_found("conversation", id))
}

pub async fn create(
    State(state): State<AppState>,
    auth: Auth,
    Json(req): Json<ConversationCreate>,
) -> ApiResult<axum::Json<Conversation>> {
    auth.require(Scope::TasksWrite)?;
    let initial = conversation_items(req.items.unwrap_or_default())?;
    let new = NewSession::conversation(req.metadata.unwrap_or_default(), initial);
    let created = state.app.sessions(&auth.org_id).create(new).await?;
    Ok(axum::Json(Conversation::of(&created.session)))
}

pub async fn retrieve(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<Conversation>> {
    auth.require(Scope::TasksRead)?;
    Ok(axum::Json(Conversation::of(&load(&state, &auth, &id).await?)))
}

pub async fn update(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
    Json(req): Json<ConversationUpdate>,
) -> ApiResult<axum::Json<Conversation>> {
    auth.require(Scope::TasksWrite)?;
    let mut record = load(&state, &auth, &id).await?;
    record.metadata = match req.metadata {
        Patch::Absent => return Err(ApiError::invalid("metadata", "metadata is required (null clears it)")),
        Patch::Null => Default::default(),
        Patch::Value(m) => m,
    };
    validate::metadata("metadata", &record.metadata)?;
    state.app.sessions(&auth.org_id).put(&record).await.map_err(|_| ApiError::not_found("conversation", &id))?;
    Ok(axum::Json(Conversation::of(&record)))
}

pub async fn delete(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<ConversationDeleted>> {
    auth.require(Scope::TasksWrite)?;
    let uuid = extract::conversation_id(&id)?;
    // The same session: deleted as the Session API deletes it.
    state.app.sessions(&auth.org_id).delete(uuid).await.map_err(|e| match e {
        app::Error::NotFound(_) => ApiError::not_found("conversation", &id),
        other => ApiError(other),
    })?;
    Ok(axum::Json(ConversationDeleted { id, object: "conversation.deleted".into(), deleted: true }))
}

/// `POST /v1/conversations/{id}/items`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ItemsCreate {
    pub items: Vec<Value>,
}

pub async fn create_items(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
    RawQuery(_q): RawQuery,
    Json(req): Json<ItemsCreate>,
) -> ApiResult<axum::Json<Value>> {
    auth.require(Scope::TasksWrite)?;
    let session = load(&state, &auth, &id).await?;
    let messages = conversation_items(req.items)?;
    let items = state.app.sessions(&auth.org_id).append(&session, messages).await?;
    let data = items.iter().filter_map(view::conversation_item).collect();
    Ok(axum::Json(responses::list(data, false)))
}

pub async fn list_items(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
    RawQuery(q): RawQuery,
) -> ApiResult<axum::Json<Value>> {
    auth.require(Scope::TasksRead)?;
    let q = ListQuery::parse(q.as_deref(), &["include", "include["])?;
    state.app.responses(&auth.org_id).include(&q.values("include"))?;
    let session = load(&state, &auth, &id).await?;
    let page = state.app.turns(&auth.org_id).items(session.id, None, &q.page).await?;
    let data = page.items.iter().filter_map(view::conversation_item).collect();
    Ok(axum::Json(responses::list(data, page.has_more)))
}

/// `GET /v1/conversations/{id}/items/{item_id}`.
pub async fn retrieve_item(
    State(state): State<AppState>,
    auth: Auth,
    Path((id, item_id)): Path<(String, String)>,
    RawQuery(q): RawQuery,
) -> ApiResult<axum::Json<Value>> {
    auth.require(Scope::TasksRead)?;
    let q = ListQuery::parse(q.as_deref(), &["include", "include["])?;
    state.app.responses(&auth.org_id).include(&q.values("include"))?;
    let session = load(&state, &auth, &id).await?;
    let item = state.app.turns(&auth.org_id).item(session.id, &item_id).await?;
    // Items the Conversations view does not show (a turn's internal steps) are not found here either.
    view::conversation_item(&item).map(axum::Json).ok_or_else(|| ApiError::not_found("item", &item_id))
}

/// `DELETE /v1/conversations/{id}/items/{item_id}`: the conversation after.
pub async fn delete_item(
    State(state): State<AppState>,
    auth: Auth,
    Path((id, item_id)): Path<(String, String)>,
) -> ApiResult<axum::Json<Conversation>> {
    auth.require(Scope::TasksWrite)?;
    let session = load(&state, &auth, &id).await?;
    state.app.turns(&auth.org_id).delete_item(session.id, &item_id).await?;
    Ok(axum::Json(Conversation::of(&session)))
}
