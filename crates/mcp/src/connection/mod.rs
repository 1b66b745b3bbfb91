//! One initialized MCP client connection, built on `rmcp`: over stdio (any byte-stream pair, or a
//! process spawned on the host) or Streamable HTTP. Requests from many callers share it; rmcp
//! multiplexes them by JSON-RPC id. Every request has a timeout, honours the caller's
//! cancellation token (and being dropped) by sending `notifications/cancelled` — without waiting
//! for the server to take it — and carries the caller's `_meta`.

mod errors;
mod fresh;
mod handler;
mod http;
mod requests;
mod stdio;

use crate::error::{McpError, Result, Step};
use handler::{Handler, Shared};
use rmcp::service::{Peer, RoleClient, RunningService};
use serde_json::{Map, Value};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

pub use http::Termination;

/// How long each step may take before the server counts as hung.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Launch or connect, then `initialize`.
    pub initialize: Duration,
    /// A whole paginated listing (`tools/list`, `resources/list` …), all pages together.
    pub list: Duration,
    /// One `tools/call` or `resources/read`.
    pub call: Duration,
    /// Closing the connection (HTTP `DELETE`).
    pub terminate: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            initialize: Duration::from_secs(30),
            list: Duration::from_secs(30),
            call: Duration::from_secs(60),
            terminate: Duration::from_secs(10),
        }
    }
}

impl Timeouts {
    /// The same limit for every step (tests).
    pub fn all(limit: Duration) -> Self {
        Timeouts { initialize: limit, list: limit, call: limit, terminate: limit }
    }
}

/// What a caller brings to one request: its `_meta`, its cancellation and its own call limit.
#[derive(Debug, Clone, Default)]
pub struct CallContext {
    /// Sent as the request's `_meta` (the configuration's `request_metadata`).
    pub meta: Option<Map<String, Value>>,
    /// Cancelling it stops waiting at once and sends MCP cancellation for the request in flight.
    pub cancel: CancellationToken,
    /// The limit of a `tools/call` or `resources/read` instead of [`Timeouts::call`] (the
    /// configuration's `call_timeout`: a broker's connection is shared by sessions whose
    /// servers may set different limits).
    pub call_timeout: Option<Duration>,
}

impl CallContext {
    pub fn new(meta: Option<Map<String, Value>>, cancel: CancellationToken) -> Self {
        CallContext { meta, cancel, call_timeout: None }
    }

    /// The same context with its own call limit.
    pub fn with_call_timeout(mut self, limit: Option<Duration>) -> Self {
        self.call_timeout = limit;
        self
    }
}

static NEXT_CONNECTION_ID: AtomicU64 = AtomicU64::new(1);

/// An initialized MCP client. Cheap to share behind an `Arc`; all methods take `&self`.
pub struct Connection {
    label: Arc<str>,
    // Distinguishes this connection from a later one with the same label in cache entries.
    id: u64,
    peer: Peer<RoleClient>,
    shared: Arc<Shared>,
    // Held only to close; requests go through `peer`, so a tokio mutex never blocks them.
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, Handler>>>,
    timeouts: Timeouts,
    termination: Option<Arc<http::TerminationSlot>>,
    fresh: fresh::FreshLists,
    // Whatever the caller needs kept alive as long as the connection (e.g. a sandbox process).
    _keep_alive: Option<Box<dyn std::any::Any + Send + Sync>>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("label", &self.label)
            .field("id", &self.id)
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}

impl Connection {
    fn from_service(
        label: Arc<str>,
        service: RunningService<RoleClient, Handler>,
        timeouts: Timeouts,
        termination: Option<Arc<http::TerminationSlot>>,
    ) -> Self {
        Connection {
            label,
            id: NEXT_CONNECTION_ID.fetch_add(1, Ordering::Relaxed),
            peer: service.peer().clone(),
            shared: service.service().shared.clone(),
            service: tokio::sync::Mutex::new(Some(service)),
            timeouts,
            termination,
            fresh: fresh::FreshLists::default(),
            _keep_alive: None,
        }
    }

    /// Keeps `guard` alive as long as this connection (e.g. the handle of a sandboxed process).
    pub fn keep_alive(mut self, guard: impl std::any::Any + Send + Sync) -> Self {
        self._keep_alive = Some(Box::new(guard));
        self
    }

    /// The server label this connection was opened for.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// A process-unique id of this connection.
    pub fn id(&self) -> u64 {
        self.id
    }

    pub fn timeouts(&self) -> Timeouts {
        self.timeouts
    }

    /// How many `notifications/tools/list_changed` the server has sent so far.
    pub fn tools_generation(&self) -> u64 {
        self.shared.tools_generation()
    }

    /// Whether the connection is gone (the server exited, crashed or closed it, or it was terminated).
    pub fn is_closed(&self) -> bool {
        self.peer.is_transport_closed()
    }

    /// Protocol version the server settled on in `initialize`.
    pub fn protocol_version(&self) -> Option<String> {
        self.peer.peer_info().map(|info| info.protocol_version.to_string())
    }

    /// The server's name from its `initialize` answer.
    pub fn server_name(&self) -> Option<String> {
        self.peer.peer_info().and_then(|info| info.server_info.as_ref().map(|i| i.name.clone()))
    }

    /// Closes the connection. Over HTTP this sends `DELETE` for the MCP session; a 404 or 405
    /// answer counts as already gone. Over stdio it closes the streams (and stops a host
    /// process this crate spawned). Closing twice is harmless.
    pub async fn terminate(&self) -> Result<Termination> {
        let service = self.service.lock().await.take();
        let Some(mut service) = service else { return Ok(Termination::AlreadyClosed) };
        match tokio::time::timeout(self.timeouts.terminate, service.close()).await {
            Err(_) => {
                return Err(McpError::Timeout {
                    server: self.label.to_string(),
                    step: Step::Terminate,
                    after: self.timeouts.terminate,
                });
            }
            Ok(Err(join)) => {
                return Err(McpError::Transport {
                    server: self.label.to_string(),
                    step: Step::Terminate,
                    message: join.to_string(),
                });
            }
            Ok(Ok(_)) => {}
        }
        match &self.termination {
            None => Ok(Termination::Closed),
            Some(slot) => slot.outcome(&self.label),
        }
    }
}
