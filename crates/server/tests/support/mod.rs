//! Test support: a running server with a known key, and a small HTTP client.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use server::Config;
use std::net::SocketAddr;
use tempfile::TempDir;
use tokio::sync::oneshot;

/// A server running in this process on a free loopback port.
pub struct TestServer {
    pub addr: SocketAddr,
    /// The bootstrap key of organization `default` (every scope).
    pub key: String,
    pub dir: Scratch,
    pub http: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

/// A server's temporary data directory: what a server left mounted under it
/// (a killed one cannot unmount; an in-process one may keep its images until
/// the process ends) is detached when it is dropped, before the directory
/// goes. Moved from a stopped server to the next one, it keeps its mounts.
pub struct Scratch(TempDir);

impl Scratch {
    pub fn new() -> Self {
        Self(tempfile::tempdir().unwrap())
    }

    pub fn path(&self) -> &std::path::Path {
        self.0.path()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        sandbox::disk::detach_below(self.0.path());
    }
}

/// A rebyte.toml sending every model to the scripted server, with short
/// timeouts and no retries so that failure tests are quick.
pub fn models_toml(model: &test_support::model_server::ModelServer) -> String {
    format!(
        "[providers.openai]\nbase_url = \"{}\"\nresponse_timeout_ms = 2000\nidle_timeout_ms = 1000\nmax_retries = 0\n",
        model.base_url()
    )
}

/// `target/<profile>/rebyte`, next to this test binary's `deps/` directory.
pub fn rebyte_bin() -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    let bin = exe.parent().and_then(|d| d.parent()).unwrap().join("rebyte");
    assert!(bin.exists(), "{} is missing: run `cargo build --bins` before the tests", bin.display());
    bin
}

pub fn test_key(tag: &str) -> String {
    let body: String =
        format!("{tag}{}", uuid::Uuid::new_v4().simple()).chars().filter(|c| c.is_ascii_alphanumeric()).collect();
    format!("rbk_{body}")
}

/// The PostgreSQL database of the data directory `dir` when the tests run on
/// PostgreSQL (`REBYTE_TEST_DATABASE_URL`): created on the first start.
async fn postgres_database(dir: &std::path::Path) -> Option<String> {
    let base = std::env::var(test_support::postgres::URL_VAR).ok().filter(|url| !url.is_empty())?;
    if let Some(url) = test_database(dir) {
        return Some(url);
    }
    let url = test_support::postgres::fresh_database(&base).await;
    std::fs::write(dir.join(DATABASE_URL_FILE), &url).unwrap();
    Some(url)
}

/// Where a data directory keeps the URL of its test database.
const DATABASE_URL_FILE: &str = "test-database-url";

/// The database URL a server on data directory `dir` used, when it ran on
/// PostgreSQL: for tests that build a `Config` of their own over the same data.
pub fn test_database(dir: &std::path::Path) -> Option<String> {
    std::fs::read_to_string(dir.join(DATABASE_URL_FILE)).ok()
}

impl TestServer {
    pub async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    /// Starts a server whose models all go to `model` (the scripted server).
    pub async fn with_model(model: &test_support::model_server::ModelServer) -> Self {
        let toml = models_toml(model);
        Self::start_with(|c| c.models_toml = Some(toml)).await
    }

    /// Starts a server after letting `configure` adjust its configuration.
    pub async fn start_with(configure: impl FnOnce(&mut Config)) -> Self {
        Self::start_in(Scratch::new(), configure).await
    }

    /// Starts a server on an existing data directory (for restart tests).
    /// With `REBYTE_TEST_DATABASE_URL` set, the store is a PostgreSQL database
    /// of that cluster, fresh for each data directory (its URL is kept in the
    /// directory, so a restart finds the same database).
    pub async fn start_in(dir: Scratch, configure: impl FnOnce(&mut Config)) -> Self {
        let mut config = Config::new(dir.path());
        config.database_url = postgres_database(dir.path()).await;
        config.bootstrap_key = Some(test_key("boot"));
        // Sandboxes run the real binary's agent (`cargo build --bins` first).
        config.sandbox_agent = Some((rebyte_bin(), vec!["sandbox-agent".into()]));
        configure(&mut config);
        let key = config.bootstrap_key.clone().unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let state = server::start(&config).await.unwrap();
        let app = server::router(state, config.body_limit);
        let task = tokio::spawn(async move {
            axum::serve(
                axum::serve::ListenerExt::tap_io(listener, |t| drop(t.set_nodelay(true))),
                app.into_make_service(),
            )
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await
            .unwrap();
        });
        Self { addr, key, dir, http: reqwest::Client::new(), stop: Some(stop), task: Some(task) }
    }

    /// Stops the server and hands back its data directory.
    pub async fn stop(mut self) -> Scratch {
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

impl TestServer {
    /// Polls a turn until it reaches a terminal status (or 10 s pass).
    pub async fn wait_turn(&self, session_id: &str, turn_id: &str) -> Value {
        self.wait_turn_status(session_id, turn_id, &["completed", "failed", "cancelled"]).await
    }

    /// Polls a turn until its status is one of `statuses` (or 10 s pass).
    pub async fn wait_turn_status(&self, session_id: &str, turn_id: &str, statuses: &[&str]) -> Value {
        let path = format!("/v1/agents/sessions/{session_id}/turns/{turn_id}");
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let (_, turn) = self.get(&path).await;
            if statuses.iter().any(|s| turn["status"] == *s) {
                return turn;
            }
            assert!(tokio::time::Instant::now() < deadline, "turn never reached {statuses:?}: {turn}");
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }

    /// Submits a user message; returns the id of the turn it created.
    pub async fn send(&self, session_id: &str, text: &str) -> String {
        let before = self.get(&format!("/v1/agents/sessions/{session_id}/turns?limit=1")).await.1;
        let body = json!({"events": [{"type": "agent.session.input.message",
            "input": [{"role": "user", "content": [{"type": "input_text", "text": text}]}]}]});
        let (status, answer) = self.post(&format!("/v1/agents/sessions/{session_id}/events"), body).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
        let (_, after) = self.get(&format!("/v1/agents/sessions/{session_id}/turns?limit=1")).await;
        let id = after["data"][0]["id"].as_str().unwrap().to_string();
        assert_ne!(before["data"][0]["id"], after["data"][0]["id"], "a new turn was created");
        id
    }

    /// Every stored event of a session (replayed from the start).
    pub async fn events(&self, session_id: &str) -> Vec<Value> {
        let resp = self
            .http
            .get(self.url(&format!("/v1/agents/sessions/{session_id}/events")))
            .bearer_auth(&self.key)
            .header("Last-Event-ID", "evt_0")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        let mut out = Vec::new();
        let mut body = resp.bytes_stream();
        let mut buf = String::new();
        use futures::StreamExt;
        // Read until no event arrives for a moment: the standing stream never ends.
        while let Ok(Some(Ok(chunk))) = tokio::time::timeout(std::time::Duration::from_millis(300), body.next()).await {
            buf.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buf.find("\n\n") {
                let frame: String = buf.drain(..end + 2).collect();
                for line in frame.lines() {
                    if let Some(data) = line.strip_prefix("data: ") {
                        out.push(serde_json::from_str(data).unwrap());
                    }
                }
            }
        }
        out
    }
}

/// The `type` of each event.
pub fn types(events: &[Value]) -> Vec<String> {
    events.iter().map(|e| e["type"].as_str().unwrap_or_default().to_string()).collect()
}

/// A session's live event stream, subscribed once this returns.
pub async fn open_stream(s: &TestServer, session_id: &str) -> reqwest::Response {
    let url = s.url(&format!("/v1/agents/sessions/{session_id}/events"));
    let resp = s.http.get(url).bearer_auth(&s.key).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    resp
}

/// The events of a live stream until `last` matches one (or 30 s pass).
pub async fn read_until(resp: reqwest::Response, mut last: impl FnMut(&Value) -> bool) -> Vec<Value> {
    use futures::StreamExt;
    let mut body = resp.bytes_stream();
    let (mut buf, mut events) = (String::new(), Vec::new());
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let chunk = tokio::time::timeout_at(deadline, body.next()).await;
        let chunk = chunk.unwrap_or_else(|_| panic!("no end: {events:?}")).unwrap().unwrap();
        buf.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buf.find("\n\n") {
            let frame: String = buf.drain(..end + 2).collect();
            for data in frame.lines().filter_map(|l| l.strip_prefix("data: ")) {
                let event: Value = serde_json::from_str(data).unwrap();
                let stop = last(&event);
                events.push(event);
                if stop {
                    return events;
                }
            }
        }
    }
}
