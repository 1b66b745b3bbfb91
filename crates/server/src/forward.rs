//! Requests for an environment that lives on another node of the cluster.
//! An environment's sandbox and files are on the node that created it (its
//! record names the node); its direct file operations and its delete,
//! arriving at any other node, are forwarded there over HTTP to the address
//! the node advertises in the database, signed with the cluster secret
//! (HMAC-SHA256 of the method, path, time and sender), and answered as that
//! node answers. A node that is gone makes them `environment_unavailable`,
//! naming it; once it is back (same id, same data directory), so are the
//! environment and its files.

use crate::auth::Auth;
use crate::error::ApiError;
use crate::state::AppState;
use axum::body::Body;
use axum::extract::{FromRequestParts, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hmac::{Hmac, Mac};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The sending node's id.
const NODE: &str = "x-rebyte-node";
/// Unix seconds when it was sent.
const TIME: &str = "x-rebyte-node-time";
/// Hex HMAC-SHA256 over the method, path, time and node.
pub(crate) const SIGNATURE: &str = "x-rebyte-node-signature";
/// How far a signed request's time may be from this node's clock.
const SKEW: u64 = 60;
/// How long a forwarded request may take.
const FORWARD_TIMEOUT: Duration = Duration::from_secs(120);

/// What this node needs to forward requests and check forwarded ones.
pub struct Peers {
    secret: zeroize::Zeroizing<Vec<u8>>,
    http: reqwest::Client,
    body_limit: usize,
}

impl Peers {
    pub fn new(secret: &[u8], body_limit: usize) -> Self {
        Self { secret: zeroize::Zeroizing::new(secret.to_vec()), http: reqwest::Client::new(), body_limit }
    }

    fn signature(&self, method: &str, path: &str, time: u64, node: &str) -> Option<Hmac<sha2::Sha256>> {
        let mut mac = Hmac::<sha2::Sha256>::new_from_slice(&self.secret).ok()?;
        mac.update(format!("{method}\n{path}\n{time}\n{node}").as_bytes());
        Some(mac)
    }

    /// Whether `headers` carry a valid signature of another node for this request.
    fn verify(&self, method: &Method, path: &str, headers: &HeaderMap) -> bool {
        let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        let (Some(node), Some(time), Some(signature)) = (text(NODE), text(TIME), text(SIGNATURE)) else {
            return false;
        };
        let (Ok(time), Ok(signature)) = (time.parse::<u64>(), hex::decode(signature)) else { return false };
        if now().abs_diff(time) > SKEW {
            return false;
        }
        self.signature(method.as_str(), path, time, node).is_some_and(|mac| mac.verify_slice(&signature).is_ok())
    }
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The environment a request operates on directly, when it is one that
/// must run where the environment lives (its files, its delete, its restart).
fn environment_of(method: &Method, path: &str) -> Option<String> {
    let rest = path.strip_prefix("/v1/agents/environments/")?;
    let (id, tail) = rest.split_once('/').unwrap_or((rest, ""));
    let direct = (tail.is_empty() && method == Method::DELETE)
        || tail == "files"
        || tail.starts_with("files/")
        || tail == "restart"
        || tail == "fork";
    direct.then(|| id.to_string())
}

/// The middleware: forwards what belongs to another node, refuses what
/// belongs to a gone one, and passes the rest (and signed forwards) on.
pub async fn environments(State(state): State<AppState>, request: Request, next: Next) -> Response {
    // Every request passes here: the path first, the cluster only for an environment's.
    let Some(raw_id) = environment_of(request.method(), request.uri().path()) else {
        return next.run(request).await;
    };
    let (Some(cluster), Some(peers)) = (state.cluster.clone(), state.peers.clone()) else {
        return next.run(request).await;
    };
    let path = request.uri().path_and_query().map_or("/", |p| p.as_str()).to_string();
    if request.headers().contains_key(SIGNATURE) {
        if peers.verify(request.method(), &path, request.headers()) {
            return next.run(request).await;
        }
        return ApiError::unauthorized("A forwarded request's node signature is not valid.").into_response();
    }
    let (mut parts, body) = request.into_parts();
    // Unauthenticated or unknown: the handler answers as it always does.
    let Ok(auth) = Auth::from_request_parts(&mut parts, &state).await else {
        return next.run(Request::from_parts(parts, body)).await;
    };
    let placement = state.app.environments(&auth.org_id).placement(&raw_id).await;
    let (node_id, advertise) = match placement {
        Ok(app::environments::Placement::Elsewhere { node, advertise }) => (node, advertise),
        Ok(app::environments::Placement::Here) | Err(_) => return next.run(Request::from_parts(parts, body)).await,
        Ok(app::environments::Placement::Gone { node }) => {
            let message = format!(
                "environment '{raw_id}' lives on node '{node}', which is not running; it is back with its files when \
                 that node is"
            );
            return ApiError(app::Error::EnvironmentUnavailable(message)).into_response();
        }
    };
    let me = cluster.node().id.clone();
    match forward(&peers, &me, &advertise, &path, parts, body).await {
        Ok(response) => response,
        Err(e) => {
            tracing::warn!(node = %node_id, error = %e, "forwarding an environment request failed");
            let message = format!("environment '{raw_id}' lives on node '{node_id}', which could not be reached: {e}");
            ApiError(app::Error::EnvironmentUnavailable(message)).into_response()
        }
    }
}

/// Sends the request to `advertise` signed as `me`, and relays the answer.
async fn forward(
    peers: &Peers,
    me: &str,
    advertise: &str,
    path: &str,
    parts: axum::http::request::Parts,
    body: Body,
) -> Result<Response, String> {
    let bytes = axum::body::to_bytes(body, peers.body_limit).await.map_err(|e| e.to_string())?;
    let time = now();
    let signature = peers
        .signature(parts.method.as_str(), path, time, me)
        .map(|mac| hex::encode(mac.finalize().into_bytes()))
        .ok_or("the cluster secret is not usable")?;
    let mut headers = parts.headers.clone();
    headers.remove(axum::http::header::HOST);
    headers.remove(axum::http::header::CONTENT_LENGTH);
    let value = |s: &str| HeaderValue::from_str(s).map_err(|e| e.to_string());
    headers.insert(NODE, value(me)?);
    headers.insert(TIME, value(&time.to_string())?);
    headers.insert(SIGNATURE, value(&signature)?);
    let url = format!("{}{path}", advertise.trim_end_matches('/'));
    let sent = peers
        .http
        .request(parts.method.clone(), url)
        .headers(headers)
        .body(bytes)
        .timeout(FORWARD_TIMEOUT)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let mut response = Response::builder().status(sent.status());
    for (name, value) in sent.headers() {
        if name != axum::http::header::TRANSFER_ENCODING && name != axum::http::header::CONNECTION {
            response = response.header(name, value);
        }
    }
    response.body(Body::from_stream(sent.bytes_stream())).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_environments_files_and_delete_are_forwarded() {
        let id = "env_0123";
        assert_eq!(environment_of(&Method::DELETE, "/v1/agents/environments/env_0123"), Some(id.to_string()));
        assert_eq!(environment_of(&Method::GET, "/v1/agents/environments/env_0123/files"), Some(id.to_string()));
        assert_eq!(environment_of(&Method::POST, "/v1/agents/environments/env_0123/files"), Some(id.to_string()));
        assert_eq!(environment_of(&Method::GET, "/v1/agents/environments/env_0123"), None);
        assert_eq!(environment_of(&Method::GET, "/v1/agents/environments"), None);
        assert_eq!(environment_of(&Method::GET, "/v1/agents/sessions/x"), None);
    }

    #[test]
    fn a_signature_holds_for_its_request_only() {
        let peers = Peers::new(b"secret", 1024);
        let path = "/v1/agents/environments/env_1/files?path=/workspace";
        let time = now();
        let mac = peers.signature("GET", path, time, "a").unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(NODE, HeaderValue::from_static("a"));
        headers.insert(TIME, HeaderValue::from_str(&time.to_string()).unwrap());
        headers.insert(SIGNATURE, HeaderValue::from_str(&hex::encode(mac.finalize().into_bytes())).unwrap());
        assert!(peers.verify(&Method::GET, path, &headers));
        assert!(!peers.verify(&Method::DELETE, path, &headers), "another method");
        assert!(!peers.verify(&Method::GET, "/v1/agents/environments/env_2/files", &headers), "another path");
        assert!(!Peers::new(b"other", 1024).verify(&Method::GET, path, &headers), "another secret");
        headers.insert(TIME, HeaderValue::from_str(&(time - 600).to_string()).unwrap());
        assert!(!peers.verify(&Method::GET, path, &headers), "too old");
    }
}
