//! Operations endpoints: liveness, readiness, metrics and the OpenAPI document.

use crate::error::ApiResult;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use serde_json::{Value, json};

pub async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

/// Ready when the store answers; with the node's view of its cluster
/// (PostgreSQL): this node and every registered one.
pub async fn readyz(State(state): State<AppState>) -> ApiResult<Json<Value>> {
    state.app.store.ping().await?;
    let Some(cluster) = &state.cluster else { return Ok(Json(json!({"status": "ready"}))) };
    let nodes = cluster.nodes().await?;
    Ok(Json(json!({
        "status": "ready",
        "node": {"id": cluster.node().id, "slot": cluster.slot(), "advertise": cluster.node().advertise},
        "nodes": nodes,
    })))
}

pub async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], state.metrics.render())
}

pub async fn openapi() -> Json<Value> {
    Json(crate::openapi::document().clone())
}
