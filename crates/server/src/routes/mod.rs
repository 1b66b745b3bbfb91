//! The route table. One module per resource; functions are named by verb
//! (`agents::create`, `sessions::list` …).

pub mod admin;
pub mod agents;
pub mod artifacts;
pub mod conversations;
pub mod environments;
pub mod events;
mod fallback;
pub mod ops;
pub mod responses;
pub mod sessions;
pub mod turns;
pub mod vaults;

use crate::error::ApiError;
use crate::metrics;
use crate::state::AppState;
use axum::extract::DefaultBodyLimit;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Router, middleware};
use tower_http::catch_panic::CatchPanicLayer;

pub fn router(state: AppState, body_limit: usize) -> Router {
    let v1 = Router::new()
        .route("/agents", post(agents::create).get(agents::list))
        .route("/agents/sessions", post(sessions::create).get(sessions::list))
        .route("/agents/sessions/{session_id}", get(sessions::retrieve).post(sessions::update).delete(sessions::delete))
        .route("/agents/sessions/{session_id}/events", post(events::create).get(events::stream))
        .route("/agents/sessions/{session_id}/turns", get(turns::list))
        .route("/agents/sessions/{session_id}/turns/{turn_id}", get(turns::retrieve))
        .route("/agents/sessions/{session_id}/turns/{turn_id}/items", get(turns::items))
        .route("/agents/sessions/{session_id}/items", get(turns::session_items))
        .route("/agents/sessions/{session_id}/artifacts", get(artifacts::list))
        .route(
            "/agents/sessions/{session_id}/artifacts/{artifact_id}",
            get(artifacts::retrieve).delete(artifacts::delete),
        )
        .route("/agents/sessions/{session_id}/artifacts/{artifact_id}/content", get(artifacts::content))
        .route("/agents/environments", post(environments::create).get(environments::list))
        .route("/agents/environments/{environment_id}", get(environments::retrieve).delete(environments::delete))
        .route(
            "/agents/environments/{environment_id}/files",
            post(environments::create_file).get(environments::list_files),
        )
        .merge(
            Router::new()
                .route("/agents/{agent_id}", get(agents::retrieve).post(agents::update).delete(agents::delete))
                .route_layer(middleware::from_fn(fallback::agent_ids_only)),
        )
        .route("/conversations", post(conversations::create))
        .route(
            "/conversations/{conversation_id}",
            get(conversations::retrieve).post(conversations::update).delete(conversations::delete),
        )
        .route("/responses", post(responses::create))
        .route("/responses/{response_id}", get(responses::retrieve))
        .route("/responses/{response_id}/cancel", post(responses::cancel))
        .route("/responses/{response_id}/input_items", get(responses::input_items))
        .route(
            "/conversations/{conversation_id}/items",
            get(conversations::list_items).post(conversations::create_items),
        )
        .route("/admin/organizations", post(admin::create_organization))
        .route("/admin/keys", post(admin::create_key).get(admin::list_keys))
        .route("/admin/keys/{key_id}", axum::routing::delete(admin::revoke_key))
        .route("/openapi.json", get(ops::openapi))
        .route("/vaults", post(vaults::create).get(vaults::list))
        .route("/vaults/{vault_id}", get(vaults::retrieve).post(vaults::update).delete(vaults::delete))
        .route("/vaults/{vault_id}/credentials", post(vaults::create_credential).get(vaults::list_credentials))
        .route(
            "/vaults/{vault_id}/credentials/{credential_id}",
            get(vaults::retrieve_credential).post(vaults::update_credential).delete(vaults::delete_credential),
        );
    Router::new()
        .nest("/v1", v1)
        .route("/healthz", get(ops::healthz))
        .route("/readyz", get(ops::readyz))
        .route("/metrics", get(ops::metrics))
        .fallback(fallback::not_found)
        .method_not_allowed_fallback(fallback::method_not_allowed)
        .layer(middleware::from_fn_with_state(state.clone(), metrics::record))
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(CatchPanicLayer::custom(|_| ApiError::internal("a handler panicked").into_response()))
        .with_state(state)
}
