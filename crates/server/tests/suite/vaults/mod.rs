//! Vaults and credentials (issue 6): the HTTP API, secrets at rest, and the
//! credential resolver the MCP code calls, against a local OAuth token
//! endpoint (a real HTTP server on 127.0.0.1:0).

mod api;
mod at_rest;
mod refresh;

use crate::support::TestServer;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use serde_json::{Value, json};
use server::Config;
use server::credentials::Credentials;
use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A second application state over the same data directory as `s`, for its
/// credential resolver (the MCP code's entry point; not reachable over HTTP).
pub async fn resolver(s: &TestServer) -> Credentials {
    let mut config = Config::new(s.dir.path());
    config.database_url = crate::support::test_database(s.dir.path());
    config.bootstrap_key = Some(s.key.clone());
    // Beside the running server: on PostgreSQL, a node of its own.
    config.node_id = Some(format!("resolver-{}", uuid::Uuid::new_v4().simple()));
    server::start(&config).await.unwrap().app.credentials.clone()
}

/// Creates a vault and returns its id.
pub async fn vault(s: &TestServer) -> String {
    let (status, v) = s.post("/v1/vaults", json!({"name": "test vault"})).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    v["id"].as_str().unwrap().to_string()
}

/// Creates a credential and returns its resource.
pub async fn credential(s: &TestServer, vault_id: &str, auth: Value) -> Value {
    let (status, c) =
        s.post(&format!("/v1/vaults/{vault_id}/credentials"), json!({"name": "cred", "auth": auth})).await;
    assert_eq!(status, StatusCode::OK, "{c}");
    c
}

/// RFC 3339 for `seconds` from now.
pub fn in_seconds(seconds: i64) -> String {
    let at = server::now() + seconds;
    chrono::DateTime::from_timestamp(at, 0).unwrap().to_rfc3339()
}

/// One token request: its form fields and its `Authorization` header.
pub type TokenRequest = (Vec<(String, String)>, Option<String>);

/// What the fake token endpoint has seen and how it behaves.
#[derive(Default)]
pub struct OauthState {
    /// Refresh tokens it accepts.
    pub valid: Mutex<HashSet<String>>,
    /// Every request's form fields and Authorization header.
    pub requests: Mutex<Vec<TokenRequest>>,
    /// Issue a new refresh token with each answer (rotation).
    pub rotate: Mutex<bool>,
    /// How long each answer takes (to make concurrent refreshes overlap).
    pub delay: Mutex<Duration>,
    pub issued: Mutex<Vec<String>>,
}

/// A local OAuth 2.0 token endpoint.
pub struct OauthServer {
    pub addr: SocketAddr,
    pub state: Arc<OauthState>,
}

impl OauthServer {
    pub async fn start() -> Self {
        let state = Arc::new(OauthState::default());
        let app = axum::Router::new().route("/token", axum::routing::post(token)).with_state(Arc::clone(&state));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self { addr, state }
    }

    pub fn url(&self) -> String {
        format!("http://{}/token", self.addr)
    }

    pub fn accept(&self, refresh_token: &str) {
        self.state.valid.lock().unwrap().insert(refresh_token.to_string());
    }

    pub fn revoke(&self, refresh_token: &str) {
        self.state.valid.lock().unwrap().remove(refresh_token);
    }

    pub fn calls(&self) -> usize {
        self.state.requests.lock().unwrap().len()
    }

    pub fn last_issued(&self) -> String {
        self.state.issued.lock().unwrap().last().cloned().unwrap()
    }
}

async fn token(State(st): State<Arc<OauthState>>, headers: HeaderMap, body: String) -> axum::response::Response {
    let form: Vec<(String, String)> = form_urlencoded::parse(body.as_bytes()).into_owned().collect();
    let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_string);
    st.requests.lock().unwrap().push((form.clone(), auth));
    let delay = *st.delay.lock().unwrap();
    tokio::time::sleep(delay).await;
    let get = |k: &str| form.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
    let presented = get("refresh_token").unwrap_or_default();
    if get("grant_type").as_deref() != Some("refresh_token") || !st.valid.lock().unwrap().contains(&presented) {
        // Quotes the token back, as some servers do: it must not reach any answer or log of ours.
        let body =
            json!({"error": "invalid_grant", "error_description": format!("refresh token {presented} is revoked")});
        return (StatusCode::BAD_REQUEST, axum::Json(body)).into_response();
    }
    let n = st.issued.lock().unwrap().len();
    let access = format!("issued-access-{n}-{}", uuid::Uuid::new_v4().simple());
    st.issued.lock().unwrap().push(access.clone());
    let mut answer = json!({"access_token": access, "token_type": "Bearer", "expires_in": 3600});
    if *st.rotate.lock().unwrap() {
        let next = format!("rotated-refresh-{n}-{}", uuid::Uuid::new_v4().simple());
        let mut valid = st.valid.lock().unwrap();
        valid.remove(&presented);
        valid.insert(next.clone());
        answer["refresh_token"] = json!(next);
    }
    axum::Json(answer).into_response()
}
