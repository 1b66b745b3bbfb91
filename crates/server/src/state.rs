//! `AppState`: what every handler shares, behind one `Arc`. Axum clones the
//! state for every middleware and handler of every request: one reference
//! count, not one per field (those clones and drops, their counters shared
//! by both cores, were a sixth of a `GET`'s CPU time).

use crate::auth::KeyCache;
use crate::metrics::Metrics;
use std::ops::Deref;
use std::sync::Arc;

#[derive(Clone)]
pub struct AppState(Arc<Shared>);

impl Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

impl From<Shared> for AppState {
    fn from(shared: Shared) -> Self {
        Self(Arc::new(shared))
    }
}

/// The state's fields, set up once before the server starts.
pub struct Shared {
    /// The application layer: every handler calls it.
    pub app: app::App,
    pub keys: Arc<KeyCache>,
    pub metrics: Arc<Metrics>,
    /// This node's membership of a cluster (PostgreSQL); `None` on SQLite.
    pub cluster: Option<Arc<store::Cluster>>,
    /// How this node signs and checks requests between nodes (in a cluster).
    pub peers: Option<Arc<crate::forward::Peers>>,
    /// Cancelled when the server begins to shut down: event streams end, so
    /// the graceful shutdown does not wait for clients that never hang up.
    pub shutdown: tokio_util::sync::CancellationToken,
}

impl Shared {
    pub fn new(app: app::App, work: Arc<telemetry::Metrics>) -> Self {
        Self {
            app,
            keys: Arc::default(),
            metrics: Arc::new(Metrics::new(work)),
            cluster: None,
            peers: None,
            shutdown: Default::default(),
        }
    }
}
