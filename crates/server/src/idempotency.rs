//! `Idempotency-Key` on the creates (`POST` of agents, sessions,
//! environments, vaults and responses): the HTTP side of
//! [`app::idempotency`]. The body is read once to fingerprint it; a retry's
//! answer is the first one, byte for byte, marked `Idempotent-Replayed:
//! true`. A streamed answer (`stream: true`) is not kept: its key is freed.

use crate::auth::Auth;
use crate::error::ApiError;
use crate::state::AppState;
use app::idempotency::Begun;
use axum::body::{Body, to_bytes};
use axum::extract::{FromRequestParts, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The paths whose `POST` creates something.
const CREATES: [&str; 5] =
    ["/v1/agents", "/v1/agents/sessions", "/v1/agents/environments", "/v1/vaults", "/v1/responses"];

/// What the layer needs besides the application.
#[derive(Clone)]
pub struct Keys {
    pub state: AppState,
    pub body_limit: usize,
}

/// The middleware: everything but a create with a key passes through.
pub async fn layer(State(keys): State<Keys>, request: Request, next: Next) -> Response {
    let key = request.headers().get("idempotency-key").map(|v| v.to_str().map(str::to_string));
    let create = request.method() == Method::POST && CREATES.contains(&request.uri().path());
    match key {
        Some(key) if create => match run(&keys, key.ok(), request, next).await {
            Ok(response) | Err(response) => response,
        },
        _ => next.run(request).await,
    }
}

async fn run(keys: &Keys, key: Option<String>, request: Request, next: Next) -> Result<Response, Response> {
    let key = key.ok_or_else(|| ApiError::invalid("Idempotency-Key", "must be printable ASCII").into_response())?;
    let (mut parts, body) = request.into_parts();
    let auth = Auth::from_request_parts(&mut parts, &keys.state).await.map_err(IntoResponse::into_response)?;
    let bytes = to_bytes(body, keys.body_limit).await.map_err(|_| {
        ApiError::too_large(format!("the request body exceeds {} bytes", keys.body_limit)).into_response()
    })?;
    let operation = format!("POST {}", parts.uri.path());
    let service = keys.state.app.idempotency(&auth.org_id);
    let claim = match service.begin(&operation, &key, &bytes).await.map_err(|e| ApiError::from(e).into_response())? {
        Begun::Replay { status, body } => return Ok(replayed(status, body)),
        Begun::Run(claim) => claim,
    };
    let response = next.run(Request::from_parts(parts, Body::from(bytes))).await;
    let json =
        response.headers().get(header::CONTENT_TYPE).is_some_and(|t| t.as_bytes().starts_with(b"application/json"));
    if !response.status().is_success() || !json {
        if let Err(e) = service.release(claim).await {
            tracing::warn!(error = %e, "an idempotency key could not be freed");
        }
        return Ok(response);
    }
    let (head, body) = response.into_parts();
    let Ok(bytes) = to_bytes(body, usize::MAX).await else {
        return Ok(ApiError::internal("the answer could not be read").into_response());
    };
    let text = String::from_utf8_lossy(&bytes).into_owned();
    if let Err(e) = service.finish(claim, head.status.as_u16(), &text).await {
        tracing::warn!(error = %e, "the answer of an idempotent request could not be kept");
    }
    Ok(Response::from_parts(head, Body::from(bytes)))
}

/// The kept answer of the first request with the key.
fn replayed(status: u16, body: String) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert("idempotent-replayed", HeaderValue::from_static("true"));
    response
}
