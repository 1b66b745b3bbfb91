//! `/v1/agents/sessions/{id}/turns` and `/items`: a session's turns and the
//! items of its history, as stored.

use crate::auth::Auth;
use crate::error::ApiResult;
use crate::extract::{self, ListQuery};
use crate::state::AppState;
use axum::extract::{Path, RawQuery, State};
use protocol::admin::Scope;
use protocol::item::Item;
use protocol::list::List;
use protocol::turn::Turn;

pub async fn list(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
    RawQuery(q): RawQuery,
) -> ApiResult<axum::Json<List<Turn>>> {
    auth.require(Scope::TasksRead)?;
    let session = extract::session_id(&id)?;
    let q = ListQuery::parse(q.as_deref(), &[])?;
    let page = state.app.turns(&auth.org_id).list(session, &q.page).await?;
    Ok(axum::Json(List::new(page.items, page.has_more, |t: &Turn| t.id.to_string())))
}

pub async fn retrieve(
    State(state): State<AppState>,
    auth: Auth,
    Path((id, turn_id)): Path<(String, String)>,
) -> ApiResult<axum::Json<Turn>> {
    auth.require(Scope::TasksRead)?;
    let session = state.app.sessions(&auth.org_id).get(extract::session_id(&id)?).await?;
    Ok(axum::Json(state.app.turns(&auth.org_id).get(session.id, extract::turn_id(&turn_id)?).await?))
}

async fn list_items(
    state: &AppState,
    auth: &Auth,
    id: &str,
    turn: Option<&str>,
    q: Option<&str>,
) -> ApiResult<List<Item>> {
    auth.require(Scope::TasksRead)?;
    let session = extract::session_id(id)?;
    let q = ListQuery::parse(q, &[])?;
    let turn = turn.map(extract::turn_id).transpose()?;
    let page = state.app.turns(&auth.org_id).items(session, turn, &q.page).await?;
    Ok(List::new(page.items, page.has_more, |i: &Item| i.id().to_string()))
}

pub async fn items(
    State(state): State<AppState>,
    auth: Auth,
    Path((id, turn_id)): Path<(String, String)>,
    RawQuery(q): RawQuery,
) -> ApiResult<axum::Json<List<Item>>> {
    Ok(axum::Json(list_items(&state, &auth, &id, Some(&turn_id), q.as_deref()).await?))
}

pub async fn session_items(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
    RawQuery(q): RawQuery,
) -> ApiResult<axum::Json<List<Item>>> {
    Ok(axum::Json(list_items(&state, &auth, &id, None, q.as_deref()).await?))
}
