//! `/v1/agents/sessions/{id}/events`: inputs in (`POST`, honouring
//! `Idempotency-Key`), the standing event stream out (`GET`, resumable with
//! `Last-Event-ID`).

use crate::auth::Auth;
use crate::error::{ApiError, ApiResult};
use crate::extract::{self, Json};
use crate::sse::{self, Until};
use crate::state::AppState;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use protocol::admin::Scope;
use protocol::event::EventsCreate;

pub async fn create(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
    headers: HeaderMap,
    Json(req): Json<EventsCreate>,
) -> ApiResult<Response> {
    auth.require(Scope::TasksWrite)?;
    let session = extract::session_id(&id)?;
    let key = headers.get("idempotency-key").and_then(|v| v.to_str().ok());
    state.app.turns(&auth.org_id).apply(session, req.events, key).await?;
    Ok(StatusCode::ACCEPTED.into_response())
}

/// The `Last-Event-ID` header as a sequence number.
fn last_event_id(headers: &HeaderMap) -> ApiResult<Option<i64>> {
    match headers.get("last-event-id").and_then(|v| v.to_str().ok()) {
        None | Some("") => Ok(None),
        Some(id) => protocol::ids::EventId::parse(id)
            .map(|id| Some(id.seq()))
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
    let session = state.app.sessions(&auth.org_id).get(extract::session_id(&id)?).await?;
    let after = last_event_id(&headers)?;
    let from = state.app.engine.subscribe_now(session.id).await?;
    Ok(sse::events(sse::EventSource::new(&state.app, session.id, from, after), Until::Forever, state.shutdown.clone())
        .into_response())
}
