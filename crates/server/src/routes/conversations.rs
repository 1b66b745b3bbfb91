//! `/v1/conversations`: the Conversations view over the same session rows,
//! with `conv_<uuid>` ids. A conversation created here has no saved agent; the
//! Responses API supplies the model on use.

use crate::auth::Auth;
use crate::error::{ApiError, ApiResult};
use crate::extract::{self, Json};
use crate::routes::sessions;
use crate::state::AppState;
use axum::extract::{Path, State};
use protocol::admin::Scope;
use protocol::agent::{AgentConfig, Patch};
use protocol::conversation::{Conversation, ConversationCreate, ConversationDeleted, ConversationUpdate};
use protocol::session::{INLINE_AGENT_ID, SessionAgent};
use protocol::validate;

pub async fn create(
    State(state): State<AppState>,
    auth: Auth,
    Json(req): Json<ConversationCreate>,
) -> ApiResult<axum::Json<Conversation>> {
    auth.require(Scope::TasksWrite)?;
    if req.items.as_ref().is_some_and(|items| !items.is_empty()) {
        return Err(ApiError::unsupported("items", "initial conversation items are not supported yet"));
    }
    let metadata = req.metadata.unwrap_or_default();
    validate::metadata("metadata", &metadata)?;
    let agent = SessionAgent { id: INLINE_AGENT_ID.into(), version: None, name: None, config: AgentConfig::default() };
    let record = sessions::new_record(agent, metadata);
    state.store.create_session(&auth.org_id, &record).await?;
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
    if !state.store.delete_session(&auth.org_id, uuid).await? {
        return Err(ApiError::not_found("conversation", &id));
    }
    state.engine.forget(uuid);
    Ok(axum::Json(ConversationDeleted { id, object: "conversation.deleted".into(), deleted: true }))
}
