//! `/v1/agents/sessions`: a Session pins the agent configuration current at its
//! creation (the saved agent's version plus inline overrides) and owns the
//! history of its turns.

use crate::auth::Auth;
use crate::error::{ApiError, ApiResult};
use crate::extract::{self, Json, ListQuery};
use crate::sse::{self, Until};
use crate::state::AppState;
use app::sessions::NewSession;
use axum::extract::{Path, RawQuery, State};
use axum::response::{IntoResponse, Response};
use protocol::admin::Scope;
use protocol::list::List;
use protocol::session::{Session, SessionCreate, SessionDeleted, SessionRecord, SessionUpdate};
use store::SessionFilter;

pub async fn create(State(state): State<AppState>, auth: Auth, Json(req): Json<SessionCreate>) -> ApiResult<Response> {
    auth.require(Scope::TasksWrite)?;
    let sessions = state.app.sessions(&auth.org_id);
    let created = sessions.create(NewSession::from_request(req)?).await?;
    match (created.events, created.turn) {
        (Some(rx), Some(turn)) => {
            let source = sse::EventSource::new(&state.app, created.session.id, rx, None);
            Ok(sse::events(source, Until::TurnEnds(turn.id), state.shutdown.clone()).into_response())
        }
        _ => {
            let record = sessions.get(created.session.id).await?;
            Ok(axum::Json(sessions.view(&record).await?).into_response())
        }
    }
}

pub async fn retrieve(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<Session>> {
    auth.require(Scope::TasksRead)?;
    let sessions = state.app.sessions(&auth.org_id);
    let record = sessions.get(extract::session_id(&id)?).await?;
    Ok(axum::Json(sessions.view(&record).await?))
}

pub async fn update(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
    Json(req): Json<SessionUpdate>,
) -> ApiResult<axum::Json<Session>> {
    auth.require(Scope::TasksWrite)?;
    let record = state.app.sessions(&auth.org_id).update(extract::session_id(&id)?, req).await?;
    Ok(axum::Json(record.resource()))
}

/// Reads `agent_id` and `metadata[key]=value` filters.
fn filter(rest: Vec<(String, String)>) -> ApiResult<SessionFilter> {
    let mut f = SessionFilter::default();
    for (key, value) in rest {
        if key == "agent_id" {
            f.agent_id = Some(value);
        } else if let Some(k) = key.strip_prefix("metadata[").and_then(|k| k.strip_suffix(']')) {
            f.metadata.push((k.to_string(), value));
        } else {
            return Err(ApiError::invalid(key.clone(), format!("unknown query parameter '{key}'")));
        }
    }
    Ok(f)
}

pub async fn list(
    State(state): State<AppState>,
    auth: Auth,
    RawQuery(q): RawQuery,
) -> ApiResult<axum::Json<List<Session>>> {
    auth.require(Scope::TasksRead)?;
    let q = ListQuery::parse(q.as_deref(), &["agent_id", "metadata["])?;
    let page = state.app.sessions(&auth.org_id).list(&filter(q.rest)?, &q.page).await?;
    let data = page.items.iter().map(SessionRecord::resource).collect();
    Ok(axum::Json(List::new(data, page.has_more, |s: &Session| s.id.clone())))
}

pub async fn delete(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<SessionDeleted>> {
    auth.require(Scope::TasksWrite)?;
    state.app.sessions(&auth.org_id).delete(extract::session_id(&id)?).await?;
    Ok(axum::Json(SessionDeleted { id, object: "agent.session.deleted".into(), deleted: true }))
}
