//! The scripted model server: a real HTTP server on `127.0.0.1` that speaks
//! the OpenAI Chat Completions, OpenAI Responses and Anthropic Messages wire
//! formats and plays
//! a script, one step per request, recording every request it receives.
//!
//! # Layout
//! - [`ModelServer`]: start it, queue [`Step`]s, read the recorded requests.
//! - [`script`]: the steps, their builders and their JSON form.
//! - `openai`, `responses`, `anthropic`: a reply rendered in each wire format.
//! - `playback`: delivering a streamed reply (delays, cut, stall, abort).
//! - `control`: the HTTP control endpoints, for tests outside Rust:
//!   `POST /_script` (append steps: a JSON list, or `{"steps": […]}`, each
//!   step may carry `"repeat": n`), `GET /_script`, `DELETE /_script`,
//!   `GET /_requests`, `DELETE /_requests`, `GET /_stats`, `POST /_reset`.
//!
//! Model endpoints: `POST /v1/chat/completions` (also `/chat/completions`),
//! `POST /v1/responses` (also `/responses`) and `POST /v1/messages`. A request's `stream` field picks SSE or one JSON
//! answer. When the script is exhausted the answer is a 500 saying so.

mod anthropic;
mod control;
mod openai;
mod playback;
mod responses;
pub mod script;

pub use script::{ErrorReply, Reply, ScriptedToolCall, ScriptedUsage, Step};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use bytes::Bytes;
use playback::{AbortGuard, Delivery};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::sync::watch;

/// One request the server received.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedRequest {
    pub path: String,
    /// Header names in lower case.
    pub headers: BTreeMap<String, String>,
    /// The JSON body (a string if it was not JSON).
    pub body: Value,
    /// When the whole request had arrived (not serialized).
    #[serde(skip, default = "std::time::Instant::now")]
    pub at: std::time::Instant,
}

/// When frames of a streamed reply were handed to the connection, in order.
pub(crate) type FrameTimes = Arc<Mutex<Vec<std::time::Instant>>>;

/// State shared by the handlers and the [`ModelServer`] handle.
struct Shared {
    /// The queue and the log change together; a plain mutex, never held
    /// across an await.
    state: Mutex<Script>,
    /// Responses the client dropped before their scripted end.
    aborted: Arc<AtomicUsize>,
    /// Set to `true` on drop: stalls end and the server stops.
    shutdown: watch::Sender<bool>,
}

#[derive(Default)]
struct Script {
    steps: VecDeque<Step>,
    requests: Vec<RecordedRequest>,
    /// Each streamed reply: when its request arrived, and when each of its
    /// frames was handed to the connection.
    replies: Vec<(std::time::Instant, FrameTimes)>,
    /// Requests since start or the last reset (the log can be cleared apart).
    served: usize,
    /// Each played step goes back to the end of the queue (a demo that
    /// answers every conversation the same way).
    looping: bool,
}

impl Shared {
    fn script(&self) -> MutexGuard<'_, Script> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A running scripted model server; it stops when dropped.
pub struct ModelServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for ModelServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelServer").field("addr", &self.addr).finish_non_exhaustive()
    }
}

impl ModelServer {
    /// Starts on `127.0.0.1` with a free port and an empty script.
    pub async fn start() -> std::io::Result<Self> {
        Self::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await
    }

    /// Starts with these steps queued.
    pub async fn with_script(steps: impl IntoIterator<Item = Step>) -> std::io::Result<Self> {
        let server = Self::start().await?;
        server.push_all(steps);
        Ok(server)
    }

    pub async fn bind(addr: SocketAddr) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let (shutdown, _) = watch::channel(false);
        let shared = Arc::new(Shared { state: Mutex::default(), aborted: Arc::default(), shutdown });
        let mut down = shared.shutdown.subscribe();
        let app = router(shared.clone());
        tokio::spawn(async move {
            let stop = async move {
                let _ = down.wait_for(|down| *down).await;
            };
            let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
                let _ = tcp.set_nodelay(true);
            });
            let _ = axum::serve(listener, app).with_graceful_shutdown(stop).await;
        });
        Ok(Self { addr, shared })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The OpenAI-style base URL, `http://127.0.0.1:PORT/v1` (for `OPENAI_BASE_URL`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The Anthropic-style base URL, `http://127.0.0.1:PORT` (for `ANTHROPIC_BASE_URL`).
    pub fn anthropic_base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Queues one step after those already queued.
    pub fn push(&self, step: Step) {
        self.shared.script().steps.push_back(step);
    }

    pub fn push_all(&self, steps: impl IntoIterator<Item = Step>) {
        self.shared.script().steps.extend(steps);
    }

    /// Plays the script in a loop: each step, once played, is queued again.
    pub fn set_looping(&self, looping: bool) {
        self.shared.script().looping = looping;
    }

    /// Steps not played yet.
    pub fn pending(&self) -> usize {
        self.shared.script().steps.len()
    }

    /// Every model request received, oldest first.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.script().requests.clone()
    }

    /// When each frame of the last streamed reply was handed to the
    /// connection (benches subtract the script's own delays with it).
    pub fn last_frame_times(&self) -> Vec<std::time::Instant> {
        let last = self.shared.script().replies.last().map(|(_, frames)| Arc::clone(frames));
        last.map(|frames| frames.lock().unwrap_or_else(PoisonError::into_inner).clone()).unwrap_or_default()
    }

    /// Each streamed reply so far, oldest first: when its request arrived
    /// and when its last frame was handed over (the script's own time).
    pub fn reply_spans(&self) -> Vec<(std::time::Instant, Option<std::time::Instant>)> {
        let replies = self.shared.script().replies.clone();
        let last = |frames: &FrameTimes| frames.lock().unwrap_or_else(PoisonError::into_inner).last().copied();
        replies.iter().map(|(arrived, frames)| (*arrived, last(frames))).collect()
    }

    /// Forgets the requests received so far (the count of requests served stays).
    pub fn clear_requests(&self) {
        self.shared.script().requests.clear();
    }

    /// When the last model request arrived (without copying the log, which
    /// after a long turn holds every request's whole history).
    pub fn last_request_at(&self) -> Option<std::time::Instant> {
        self.shared.script().requests.last().map(|r| r.at)
    }

    /// The body of the last model request.
    pub fn last_request(&self) -> Option<Value> {
        self.shared.script().requests.last().map(|r| r.body.clone())
    }

    /// Model requests received since start.
    pub fn request_count(&self) -> usize {
        self.shared.script().served
    }

    /// Responses the client dropped before their scripted end.
    pub fn aborted_count(&self) -> usize {
        self.shared.aborted.load(Ordering::SeqCst)
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        self.shared.shutdown.send_replace(true);
    }
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(chat_completions))
        .route("/chat/completions", post(chat_completions))
        .route("/v1/responses", post(responses))
        .route("/responses", post(responses))
        .route("/v1/messages", post(messages))
        .merge(control::routes())
        .with_state(shared)
}

/// The three wire formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wire {
    OpenAi,
    Responses,
    Anthropic,
}

async fn chat_completions(State(shared): State<Arc<Shared>>, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    answer(shared, Wire::OpenAi, uri, headers, body).await
}

async fn responses(State(shared): State<Arc<Shared>>, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    answer(shared, Wire::Responses, uri, headers, body).await
}

async fn messages(State(shared): State<Arc<Shared>>, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    answer(shared, Wire::Anthropic, uri, headers, body).await
}

async fn answer(shared: Arc<Shared>, wire: Wire, uri: Uri, headers: HeaderMap, raw: Bytes) -> Response {
    // The whole request is here: the script's own time starts.
    let arrived = std::time::Instant::now();
    let body: Value =
        serde_json::from_slice(&raw).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&raw).into_owned()));
    let recorded = RecordedRequest {
        path: uri.path().to_owned(),
        headers: headers
            .iter()
            .map(|(name, value)| (name.as_str().to_owned(), String::from_utf8_lossy(value.as_bytes()).into_owned()))
            .collect(),
        body: body.clone(),
        at: arrived,
    };
    let (request_no, step) = {
        let mut script = shared.script();
        script.served += 1;
        script.requests.push(recorded);
        let step = script.steps.pop_front();
        if script.looping
            && let Some(step) = &step
        {
            script.steps.push_back(step.clone());
        }
        (script.served, step)
    };
    let error_body = |kind: &str, message: &str| match wire {
        Wire::OpenAi => openai::error_body(kind, message),
        Wire::Responses => responses::error_body(kind, message),
        Wire::Anthropic => anthropic::error_body(kind, message),
    };
    let reply = match step {
        None => {
            let message = format!(
                "scripted model: script exhausted: no step is queued for request #{request_no} \
                 (queue steps with POST /_script or ModelServer::push)"
            );
            return json_response(StatusCode::INTERNAL_SERVER_ERROR, &error_body("script_exhausted", &message));
        }
        Some(Step::Stall) => {
            let mut guard = AbortGuard::new(shared.aborted.clone());
            let _ = shared.shutdown.subscribe().wait_for(|down| *down).await;
            guard.complete();
            let message = "scripted model: stalled request released by shutdown";
            return json_response(StatusCode::SERVICE_UNAVAILABLE, &error_body("shutdown", message));
        }
        Some(Step::Error(error)) => {
            sleep_ms(error.latency_ms).await;
            let status = StatusCode::from_u16(error.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            if error.body.is_empty() {
                let message = format!("scripted error (HTTP {})", status.as_u16());
                return json_response(status, &error_body("scripted_error", &message));
            }
            return (status, [(header::CONTENT_TYPE, "application/json")], error.body).into_response();
        }
        Some(Step::Reply(reply)) => reply,
    };
    sleep_ms(reply.latency_ms).await;
    let model = body.get("model").and_then(Value::as_str).unwrap_or("scripted-model");
    let include_usage = body.pointer("/stream_options/include_usage").and_then(Value::as_bool).unwrap_or(false);
    let ctx = openai::Ctx { model, request_no, include_usage };
    if body.get("stream").and_then(Value::as_bool) != Some(true) {
        let complete = match wire {
            Wire::OpenAi => openai::complete(&reply, &ctx),
            Wire::Responses => responses::complete(&reply, &ctx),
            Wire::Anthropic => anthropic::complete(&reply, &ctx),
        };
        return json_response(StatusCode::OK, &complete);
    }
    let frames = match wire {
        Wire::OpenAi => openai::stream(&reply, &ctx),
        Wire::Responses => responses::stream(&reply, &ctx),
        Wire::Anthropic => anthropic::stream(&reply, &ctx),
    };
    let sent_at = FrameTimes::default();
    shared.script().replies.push((arrived, Arc::clone(&sent_at)));
    let delivery = Delivery {
        sent_at,
        chunk_delay: Duration::from_millis(reply.chunk_delay_ms),
        cut_after: reply.cut_after,
        stall_after: reply.stall_after,
        abort_after: reply.abort_after,
    };
    let guard = AbortGuard::new(shared.aborted.clone());
    let body = playback::body(frames, &delivery, guard, shared.shutdown.subscribe());
    ([(header::CONTENT_TYPE, "text/event-stream"), (header::CACHE_CONTROL, "no-cache")], body).into_response()
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

async fn sleep_ms(ms: u64) {
    if ms > 0 {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}
