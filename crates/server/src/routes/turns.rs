//! `/v1/agents/sessions/{id}/turns` and `/items`: a session's turns and the
//! items of its history, as stored.

use crate::auth::Auth;
use crate::error::{ApiError, ApiResult};
use crate::extract::{self, ListQuery};
use crate::routes::sessions;
use crate::state::AppState;
use axum::extract::{Path, RawQuery, State};
use protocol::admin::Scope;
use protocol::item::Item;
use protocol::list::List;
use protocol::turn::Turn;
use uuid::Uuid;

/// Loads a turn of a session of the caller's organization, or 404.
pub async fn load(state: &AppState, auth: &Auth, session_id: Uuid, turn_id: &str) -> ApiResult<Turn> {
    let not_found = || ApiError::not_found("turn", turn_id);
    let id = Uuid::parse_str(turn_id).map_err(|_| not_found())?;
    let turn = state.store.get_turn(&auth.org_id, id).await?.ok_or_else(not_found)?;
    if turn.session_id != session_id.to_string() {
        return Err(not_found());
    }
    Ok(turn)
}

pub async fn list(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
    RawQuery(q): RawQuery,
) -> ApiResult<axum::Json<List<Turn>>> {
    auth.require(Scope::TasksRead)?;
    let session = sessions::load(&state, &auth, extract::session_id(&id)?).await?;
    let q = ListQuery::parse(q.as_deref(), &[])?;
    let page = state.store.list_turns(&auth.org_id, session.id, &q.page).await?;
    Ok(axum::Json(List::new(page.items, page.has_more, |t: &Turn| t.id.clone())))
}

pub async fn retrieve(
    State(state): State<AppState>,
    auth: Auth,
    Path((id, turn_id)): Path<(String, String)>,
) -> ApiResult<axum::Json<Turn>> {
    auth.require(Scope::TasksRead)?;
    let session = sessions::load(&state, &auth, extract::session_id(&id)?).await?;
    Ok(axum::Json(load(&state, &auth, session.id, &turn_id).await?))
}

pub async fn items(
    State(state): State<AppState>,
    auth: Auth,
    Path((id, turn_id)): Path<(String, String)>,
    RawQuery(q): RawQuery,
) -> ApiResult<axum::Json<List<Item>>> {
    auth.require(Scope::TasksRead)?;
    let session = sessions::load(&state, &auth, extract::session_id(&id)?).await?;
    let turn = load(&state, &auth, session.id, &turn_id).await?;
    let q = ListQuery::parse(q.as_deref(), &[])?;
    let page = state.store.list_items(&auth.org_id, session.id, Some(&turn.id), &q.page).await?;
    Ok(axum::Json(List::new(page.items, page.has_more, |i: &Item| i.id().to_string())))
}

pub async fn session_items(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
    RawQuery(q): RawQuery,
) -> ApiResult<axum::Json<List<Item>>> {
    auth.require(Scope::TasksRead)?;
    let session = sessions::load(&state, &auth, extract::session_id(&id)?).await?;
    let q = ListQuery::parse(q.as_deref(), &[])?;
    let page = state.store.list_items(&auth.org_id, session.id, None, &q.page).await?;
    Ok(axum::Json(List::new(page.items, page.has_more, |i: &Item| i.id().to_string())))
}
