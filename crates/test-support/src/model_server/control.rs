//! HTTP control endpoints, so that tests outside Rust (the Python
//! compatibility suite, benchmarks) can script the server and read what it
//! received.

use super::{Shared, script};
use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::Ordering;

pub(super) fn routes() -> Router<Arc<Shared>> {
    Router::new()
        .route("/_script", post(append).get(list_steps).delete(clear_steps))
        .route("/_requests", get(list_requests).delete(clear_requests))
        .route("/_stats", get(stats))
        .route("/_reset", post(reset))
}

/// `POST /_script`: appends steps; answers how many were queued.
async fn append(State(shared): State<Arc<Shared>>, body: axum::body::Bytes) -> Response {
    let parsed = serde_json::from_slice::<Value>(&body).map_err(|e| e.to_string()).and_then(script::parse_steps);
    match parsed {
        Ok(steps) => {
            let queued = steps.len();
            let mut script = shared.script();
            script.steps.extend(steps);
            Json(json!({"queued": queued, "pending": script.steps.len()})).into_response()
        }
        Err(message) => (StatusCode::BAD_REQUEST, Json(json!({"error": message}))).into_response(),
    }
}

async fn list_steps(State(shared): State<Arc<Shared>>) -> Response {
    Json(json!(shared.script().steps)).into_response()
}

async fn clear_steps(State(shared): State<Arc<Shared>>) -> Response {
    let mut script = shared.script();
    let cleared = script.steps.len();
    script.steps.clear();
    Json(json!({"cleared": cleared})).into_response()
}

/// `GET /_requests`: every model request received, oldest first.
async fn list_requests(State(shared): State<Arc<Shared>>) -> Response {
    Json(json!(shared.script().requests)).into_response()
}

async fn clear_requests(State(shared): State<Arc<Shared>>) -> Response {
    let mut script = shared.script();
    let cleared = script.requests.len();
    script.requests.clear();
    Json(json!({"cleared": cleared})).into_response()
}

async fn stats(State(shared): State<Arc<Shared>>) -> Response {
    let script = shared.script();
    Json(json!({
        "requests": script.served,
        "pending": script.steps.len(),
        "aborted": shared.aborted.load(Ordering::SeqCst),
    }))
    .into_response()
}

/// `POST /_reset`: empties the script and the log, zeroes the counters.
async fn reset(State(shared): State<Arc<Shared>>) -> Response {
    let mut script = shared.script();
    *script = super::Script::default();
    shared.aborted.store(0, Ordering::SeqCst);
    Json(json!({"reset": true})).into_response()
}
