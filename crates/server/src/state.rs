//! `AppState`: what every handler shares. Cheap to clone (all `Arc`).

use crate::auth::KeyCache;
use crate::metrics::Metrics;
use std::sync::Arc;

#[derive(Clone)]
pub struct AppState {
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

impl AppState {
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
