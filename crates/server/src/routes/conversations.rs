//! `/v1/conversations`: the Conversations view over the same session rows,
//! with `conv_<uuid>` ids. A conversation created here has no saved agent; the
//! Responses API supplies the model on use.

use crate::auth::Auth;
use crate::error::{ApiError, ApiResult};
use crate::extract::{self, Json, ListQuery};
use crate::routes::sessions;
use crate::routes::{events, responses};
use crate::state::AppState;
use axum::extract::RawQuery;
use axum::extract::{Path, State};
use protocol::admin::Scope;
use protocol::agent::{AgentConfig, Patch};
use protocol::conversation::{Conversation, ConversationCreate, ConversationDeleted, ConversationUpdate};
use protocol::item::{Content, InputContent, Role};
use protocol::response as view;
use protocol::session::{INLINE_AGENT_ID, SessionAgent};
use protocol::validate;
use serde_json::Value;

pub async fn create(
    State(state): State<AppState>,
    auth: Auth,
    Json(req): Json<ConversationCreate>,
) -> ApiResult<axum::Json<Conversation>> {
    auth.require(Scope::TasksWrite)?;
    let initial = parse_items(req.items.unwrap_or_default())?;
    let metadata = req.metadata.unwrap_or_default();
    validate::metadata("metadata", &metadata)?;
    let agent = SessionAgent { id: INLINE_AGENT_ID.into(), version: None, name: None, config: AgentConfig::default() };
    let record = sessions::new_record(agent, metadata);
    state.store.create_session(&auth.org_id, &record).await?;
    if !initial.is_empty() {
        state.engine.append_messages(&auth.org_id, &record, initial).await.map_err(events::engine_error)?;
    }
    Ok(axum::Json(Conversation::of(&record)))
}

pub async fn retrieve(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<Conversation>> {
    auth.require(Scope::TasksRead)?;
    let record = sessions::load(&state, &auth, extract::conversation_id(&id)?)
        .await
        .map_err(|_| ApiError::not_found("conversation", &id))?;
    Ok(axum::Json(Conversation::of(&record)))
}

pub async fn update(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
    Json(req): Json<ConversationUpdate>,
) -> ApiResult<axum::Json<Conversation>> {
    auth.require(Scope::TasksWrite)?;
    let uuid = extract::conversation_id(&id)?;
    let mut record = sessions::load(&state, &auth, uuid).await.map_err(|_| ApiError::not_found("conversation", &id))?;
    record.metadata = match req.metadata {
        Patch::Absent => return Err(ApiError::invalid("metadata", "metadata is required (null clears it)")),
        Patch::Null => Default::default(),
        Patch::Value(m) => m,
    };
    validate::metadata("metadata", &record.metadata)?;
    if !state.store.put_session(&auth.org_id, &record).await? {
        return Err(ApiError::not_found("conversation", &id));
    }
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
    if !sessions::remove(&state, &auth, uuid).await? {
        return Err(ApiError::not_found("conversation", &id));
    }
    Ok(axum::Json(ConversationDeleted { id, object: "conversation.deleted".into(), deleted: true }))
}

/// Parses conversation items to add: messages only (`user`, `system` and
/// `developer` become user input; `assistant` text is kept as the assistant's).
fn parse_items(items: Vec<Value>) -> ApiResult<Vec<(Role, Vec<Content>)>> {
    if items.len() > 20 {
        return Err(ApiError::invalid("items", "at most 20 items can be added at a time"));
    }
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            let kind = item.get("type").and_then(Value::as_str).unwrap_or("message");
            if kind != "message" {
                return Err(ApiError::unsupported(
                    format!("items[{i}].type"),
                    format!("items of type '{kind}' cannot be added"),
                ));
            }
            let role = match item.get("role").and_then(Value::as_str) {
                Some("user" | "system" | "developer") => Role::User,
                Some("assistant") => Role::Assistant,
                other => {
                    return Err(ApiError::invalid(format!("items[{i}].role"), format!("unsupported role {other:?}")));
                }
            };
            let content: InputContent = serde_json::from_value(item.get("content").cloned().unwrap_or(Value::Null))
                .map_err(|e| ApiError::invalid(format!("items[{i}].content"), e.to_string()))?;
            let mut parts = content.into_parts();
            if role == Role::Assistant {
                parts = parts
                    .into_iter()
                    .map(|p| match p {
                        Content::InputText { text } => Content::OutputText { text },
                        other => other,
                    })
                    .collect();
            }
            if parts.is_empty() {
                return Err(ApiError::invalid(format!("items[{i}].content"), "content must not be empty"));
            }
            Ok((role, parts))
        })
        .collect()
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
    let uuid = extract::conversation_id(&id)?;
    let session = sessions::load(&state, &auth, uuid).await.map_err(|_| ApiError::not_found("conversation", &id))?;
    let messages = parse_items(req.items)?;
    let turn = state.engine.append_messages(&auth.org_id, &session, messages).await.map_err(events::engine_error)?;
    let items = state.store.turn_items(&auth.org_id, session.id, &turn.id).await?;
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
    let q = ListQuery::parse(q.as_deref(), &["include"])?;
    let uuid = extract::conversation_id(&id)?;
    let session = sessions::load(&state, &auth, uuid).await.map_err(|_| ApiError::not_found("conversation", &id))?;
    let page = state.store.list_items(&auth.org_id, session.id, None, &q.page).await?;
    let data = page.items.iter().filter_map(view::conversation_item).collect();
    Ok(axum::Json(responses::list(data, page.has_more)))
}
