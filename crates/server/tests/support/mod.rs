//! Test support: a running server with a known key, and a small HTTP client.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use server::{AppState, Config};
use std::net::SocketAddr;
use std::sync::Arc;
use tempfile::TempDir;
use tokio::sync::oneshot;

/// A server running in this process on a free loopback port.
pub struct TestServer {
    pub addr: SocketAddr,
    /// The bootstrap key of organization `default` (every scope).
    pub key: String,
    pub dir: TempDir,
    pub http: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

pub fn test_key(tag: &str) -> String {
    let body: String =
        format!("{tag}{}", uuid::Uuid::new_v4().simple()).chars().filter(|c| c.is_ascii_alphanumeric()).collect();
    format!("rbk_{body}")
}

impl TestServer {
    pub async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    /// Starts a server after letting `configure` adjust its configuration.
    pub async fn start_with(configure: impl FnOnce(&mut Config)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        Self::start_in(dir, configure).await
    }

    /// Starts a server on an existing data directory (for restart tests).
    pub async fn start_in(dir: TempDir, configure: impl FnOnce(&mut Config)) -> Self {
        let mut config = Config::new(dir.path());
        config.bootstrap_key = Some(test_key("boot"));
        configure(&mut config);
        let key = config.bootstrap_key.clone().unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let store = server::open_store(&config).await.unwrap();
        server::bootstrap::run(store.as_ref(), &config).await.unwrap();
        let app = server::router(AppState::new(Arc::clone(&store)), config.body_limit);
        let task = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await
                .unwrap();
        });
        Self { addr, key, dir, http: reqwest::Client::new(), stop: Some(stop), task: Some(task) }
    }

    /// Stops the server and hands back its data directory.
    pub async fn stop(mut self) -> TempDir {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
        let TestServer { dir, .. } = self;
        dir
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// Sends a request with `key` (or none) and a JSON body; returns status and JSON.
    pub async fn call_as(
        &self,
        key: Option<&str>,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut req = self.http.request(method, self.url(path)).header("OpenAI-Beta", "agents=v1");
        if let Some(key) = key {
            req = req.bearer_auth(key);
        }
        if let Some(body) = body {
            req = req.json(&body);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status();
        let text = resp.text().await.unwrap();
        let value =
            if text.is_empty() { Value::Null } else { serde_json::from_str(&text).unwrap_or(Value::String(text)) };
        (status, value)
    }

    pub async fn call(&self, method: Method, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        self.call_as(Some(&self.key.clone()), method, path, body).await
    }

    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.call(Method::GET, path, None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.call(Method::POST, path, Some(body)).await
    }

    pub async fn delete(&self, path: &str) -> (StatusCode, Value) {
        self.call(Method::DELETE, path, None).await
    }

    /// Sends raw bytes as the body.
    pub async fn post_raw(&self, path: &str, body: impl Into<reqwest::Body>) -> (StatusCode, Value) {
        let resp = self
            .http
            .post(self.url(path))
            .bearer_auth(&self.key)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        let status = resp.status();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    /// Creates an organization and a key for it with `scopes`; returns (org id, key).
    pub async fn org_with_key(&self, name: &str, scopes: &[&str]) -> (String, String) {
        let (status, org) = self.post("/v1/admin/organizations", json!({"name": name})).await;
        assert_eq!(status, StatusCode::OK, "{org}");
        let org_id = org["id"].as_str().unwrap().to_string();
        let key = self.key_for(&org_id, scopes).await;
        (org_id, key)
    }

    /// Creates a key for an existing organization.
    pub async fn key_for(&self, org_id: &str, scopes: &[&str]) -> String {
        let (status, key) = self.post("/v1/admin/keys", json!({"organization_id": org_id, "scopes": scopes})).await;
        assert_eq!(status, StatusCode::OK, "{key}");
        key["secret"].as_str().unwrap().to_string()
    }

    /// Creates a saved agent and returns its resource.
    pub async fn agent(&self, body: Value) -> Value {
        let (status, agent) = self.post("/v1/agents", body).await;
        assert_eq!(status, StatusCode::OK, "{agent}");
        agent
    }

    /// Creates a session and returns its resource.
    pub async fn session(&self, body: Value) -> Value {
        let (status, session) = self.post("/v1/agents/sessions", body).await;
        assert_eq!(status, StatusCode::OK, "{session}");
        session
    }
}

/// Asserts an error response: status, `error.type`, and (when given) `error.param`.
pub fn assert_error(got: &(StatusCode, Value), status: StatusCode, kind: &str, param: Option<&str>) {
    let (s, body) = got;
    assert_eq!(*s, status, "{body}");
    assert_eq!(body["error"]["type"], kind, "{body}");
    assert!(body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{body}");
    if let Some(param) = param {
        assert_eq!(body["error"]["param"], param, "{body}");
    }
}
