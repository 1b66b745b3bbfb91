//! `/v1/agents/sessions/{id}/events`: inputs in (`POST`, honouring
//! `Idempotency-Key`), the standing event stream out (`GET`, resumable with
//! `Last-Event-ID`).

use crate::auth::Auth;
use crate::error::{ApiError, ApiResult};
use crate::extract::{self, Json};
use crate::now;
use crate::routes::sessions;
use crate::sse::{self, Until};
use crate::state::AppState;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use engine::turn::ToolResult;
use protocol::admin::Scope;
use protocol::event::{EventsCreate, InputEvent};
use protocol::item::{Content, InputMessage};
use protocol::session::SessionRecord;

/// Maps an engine error to the answer a caller gets.
pub fn engine_error(e: engine::Error) -> ApiError {
    match e {
        engine::Error::Store(e) => e.into(),
        // The client's tool dispatcher recognises exactly this shape.
        engine::Error::UnknownToolCall { call_id } => ApiError::Invalid {
            param: Some("call_id".into()),
            code: "invalid_request_error",
            message: format!("Unknown pending tool call: {call_id}"),
        },
        engine::Error::NoActiveTurn => ApiError::Invalid {
            param: None,
            code: "no_active_turn",
            message: "The session has no active turn to cancel.".into(),
        },
        other => ApiError::Internal(other.to_string()),
    }
}

/// Checks input messages and turns them into content lists.
pub fn input_messages(param: &str, input: Vec<InputMessage>) -> ApiResult<Vec<Vec<Content>>> {
    protocol::item::Input::Messages(input).into_messages().map_err(|m| ApiError::invalid(param, m))
}

/// Submits one turn's input to the engine.
pub async fn submit(
    state: &AppState,
    auth: &Auth,
    session: &SessionRecord,
    messages: Vec<Vec<Content>>,
) -> ApiResult<protocol::turn::Turn> {
    state.engine.submit_input(&auth.org_id, session, messages, false).await.map_err(engine_error)
}

/// One checked input, ready to apply.
enum Planned {
    Message(Vec<Vec<Content>>),
    Cancel,
    ToolResult(String, ToolResult),
}

fn plan(events: Vec<InputEvent>) -> ApiResult<Vec<Planned>> {
    if events.is_empty() {
        return Err(ApiError::invalid("events", "at least one event is required"));
    }
    events
        .into_iter()
        .enumerate()
        .map(|(i, event)| match event {
            InputEvent::Message { input } => {
                Ok(Planned::Message(input_messages(&format!("events[{i}].input"), input)?))
            }
            InputEvent::Cancel {} => Ok(Planned::Cancel),
            InputEvent::ToolResult { turn_id, call_id, success, output, error } => {
                Ok(Planned::ToolResult(turn_id, ToolResult { call_id, success, output, error }))
            }
            InputEvent::McpApprovalRequestResult { .. } => {
                Err(ApiError::unsupported(format!("events[{i}].type"), "this server issues no MCP approval requests"))
            }
        })
        .collect()
}

async fn apply(state: &AppState, auth: &Auth, session: &SessionRecord, planned: Vec<Planned>) -> ApiResult<()> {
    for p in planned {
        match p {
            Planned::Message(messages) => {
                submit(state, auth, session, messages).await?;
            }
            Planned::Cancel => {
                state.engine.cancel(&auth.org_id, session.id, None).await.map_err(engine_error)?;
            }
            Planned::ToolResult(turn_id, result) => {
                state.engine.submit_tool_result(session.id, &turn_id, result).map_err(engine_error)?;
            }
        }
    }
    Ok(())
}

pub async fn create(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
    headers: HeaderMap,
    Json(req): Json<EventsCreate>,
) -> ApiResult<Response> {
    auth.require(Scope::TasksWrite)?;
    let session = sessions::load(&state, &auth, extract::session_id(&id)?).await?;
    let planned = plan(req.events)?;
    let key = headers.get("idempotency-key").and_then(|v| v.to_str().ok()).map(str::to_string);
    if let Some(key) = &key {
        if key.is_empty() || key.len() > 256 {
            return Err(ApiError::invalid("Idempotency-Key", "must be 1 to 256 characters"));
        }
        if !state.store.claim_idempotency_key(&auth.org_id, session.id, key, now()).await? {
            // Already applied once: a retry changes nothing.
            return Ok(StatusCode::ACCEPTED.into_response());
        }
    }
    let outcome = apply(&state, &auth, &session, planned).await;
    if let (Err(_), Some(key)) = (&outcome, &key) {
        // A failed submission did not happen: its key may be used again.
        state.store.release_idempotency_key(&auth.org_id, session.id, key).await?;
    }
    outcome.map(|()| StatusCode::ACCEPTED.into_response())
}

/// The `Last-Event-ID` header as a sequence number.
fn last_event_id(headers: &HeaderMap) -> ApiResult<Option<i64>> {
    match headers.get("last-event-id").and_then(|v| v.to_str().ok()) {
        None | Some("") => Ok(None),
        Some(id) => store::event_seq(id)
            .map(Some)
            .ok_or_else(|| ApiError::invalid("Last-Event-ID", format!("'{id}' is not an event id of this server"))),
    }
}

pub async fn stream(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    auth.require(Scope::TasksRead)?;
    let session = sessions::load(&state, &auth, extract::session_id(&id)?).await?;
    let after = last_event_id(&headers)?;
    let from = state.engine.bus().subscribe_now(session.id);
    Ok(sse::events(state.store.clone(), state.engine.clone(), session.id, from, after, Until::Forever).into_response())
}
