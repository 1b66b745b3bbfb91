//! The per-organization request rate, as a middleware: it authenticates the
//! request once (the handler's [`Auth`] extractor then reuses the result),
//! takes one request from the organization's bucket, and answers 429 with
//! `Retry-After` when the bucket is empty. Unauthenticated requests pass on
//! for the handler to answer as it always does; so do requests another node
//! forwarded (counted where they arrived).

use crate::auth::Auth;
use crate::error::ApiError;
use crate::state::AppState;
use axum::extract::{FromRequestParts, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

pub async fn requests(State(state): State<AppState>, request: Request, next: Next) -> Response {
    // A request another node forwarded was counted where it arrived.
    let headers = request.headers();
    if !headers.contains_key(axum::http::header::AUTHORIZATION) || headers.contains_key(crate::forward::SIGNATURE) {
        return next.run(request).await;
    }
    let (mut parts, body) = request.into_parts();
    if let Ok(auth) = Auth::from_request_parts(&mut parts, &state).await {
        let limits = &state.app.limits;
        if let Err(wait) = state.app.requests.admit(limits, &auth.org_id) {
            return ApiError(app::limits::too_many_requests(limits, wait)).into_response();
        }
        parts.extensions.insert(auth);
    }
    next.run(Request::from_parts(parts, body)).await
}
