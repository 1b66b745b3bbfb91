//! What answers when no handler does: a path the router lacks (404 naming
//! the method and path), a method the route lacks (405), and the parts of the
//! client's API this server refuses by name (automations, subagents,
//! traces).

use crate::error::ApiError;
use axum::extract::{OriginalUri, Request};
use axum::http::{Method, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The client's API areas this server does not offer, by the path segment
/// that introduces them, with the name a user knows them by.
const UNSUPPORTED: &[(&str, &str)] = &[
    ("automations", "automations are"),
    ("subagents", "subagents (native multi-agent orchestration) are"),
    ("traces", "session traces are"),
];

fn no_route(method: &Method, uri: &Uri) -> ApiError {
    let path = uri.path();
    let segments: Vec<&str> = path.split('/').collect();
    match UNSUPPORTED.iter().find(|(segment, _)| segments.contains(segment)) {
        Some((_, feature)) => {
            ApiError::no_such(format!("No route for {method} {path}: {feature} not supported by this server."))
        }
        None => ApiError::no_such(format!("No route for {method} {path}.")),
    }
}

/// The router's fallback: a 404 that names the method and path.
pub async fn not_found(method: Method, OriginalUri(uri): OriginalUri) -> Response {
    no_route(&method, &uri).into_response()
}

/// A route that exists, asked with a method it lacks.
pub async fn method_not_allowed(method: Method, OriginalUri(uri): OriginalUri) -> Response {
    ApiError::method_not_allowed(format!("{method} is not allowed on {}.", uri.path())).into_response()
}

/// `/agents/{agent_id}` matches any segment; one that is not an id of
/// `prefix` (`/agents/automations`, `/agents/environments/anything`) names
/// a route this server lacks, not a missing agent or environment.
pub async fn ids_only(prefix: &'static str, req: Request, next: Next) -> Response {
    let segment = req.uri().path().rsplit('/').next().unwrap_or_default();
    if segment.starts_with(prefix) {
        return next.run(req).await;
    }
    // Nested under `/v1`: the path the caller sent is the original one.
    let uri = req.extensions().get::<OriginalUri>().map_or_else(|| req.uri().clone(), |o| o.0.clone());
    no_route(req.method(), &uri).into_response()
}
