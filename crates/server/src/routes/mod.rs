//! The router, built from the route table ([`table`]). One module per
//! resource; functions are named by verb (`agents::create`, `sessions::list` …).

pub mod admin;
pub mod agents;
pub mod artifacts;
pub mod conversations;
pub mod environment_templates;
pub mod environments;
pub mod events;
mod fallback;
pub mod files;
pub mod ops;
pub mod responses;
pub mod sessions;
pub mod skills;
pub mod table;
pub mod turns;
pub mod vaults;

use crate::error::ApiError;
use crate::metrics;
use crate::state::AppState;
use axum::extract::DefaultBodyLimit;
use axum::response::IntoResponse;
use axum::{Router, middleware};
use tower_http::catch_panic::CatchPanicLayer;

pub fn router(state: AppState, body_limit: usize) -> Router {
    table::table()
        .into_iter()
        .fold(Router::new(), |router, route| router.route(route.path, route.handlers))
        // The web console: no key, and not part of the API the table lists.
        .merge(crate::console::router())
        .fallback(fallback::not_found)
        .method_not_allowed_fallback(fallback::method_not_allowed)
        .layer(middleware::from_fn_with_state(state.clone(), crate::forward::environments))
        .layer(middleware::from_fn_with_state(state.clone(), crate::limits::requests))
        .layer(middleware::from_fn_with_state(
            crate::idempotency::Keys { state: state.clone(), body_limit },
            crate::idempotency::layer,
        ))
        .layer(middleware::from_fn_with_state(state.clone(), metrics::record))
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(CatchPanicLayer::custom(|_| ApiError::internal("a handler panicked").into_response()))
        .with_state(state)
}

/// A file name safe in a `Content-Disposition` header (printable ASCII, no quotes).
pub(crate) fn attachment_name(name: &str) -> String {
    let safe: String =
        name.chars().filter(|c| (c.is_ascii_graphic() || *c == ' ') && *c != '"' && *c != '\\').collect();
    if safe.trim().is_empty() { "download".to_string() } else { safe }
}
