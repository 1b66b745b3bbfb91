//! `AppState`: what every handler shares. Cheap to clone (all `Arc`).

use crate::auth::KeyCache;
use crate::credentials::Credentials;
use crate::metrics::Metrics;
use engine::Engine;
use std::sync::Arc;
use store::Store;

#[derive(Clone)]
pub struct AppState {
    pub store: Arc<dyn Store>,
    pub engine: Engine,
    pub envs: Arc<engine::environments::Environments>,
    pub keys: Arc<KeyCache>,
    pub metrics: Arc<Metrics>,
    /// Vault credentials: sealing, choice, OAuth refresh.
    pub credentials: Credentials,
    /// Every MCP connection: closed when sessions and environments are deleted.
    pub mcp: Arc<mcp::Hub>,
}

impl AppState {
    pub fn new(
        store: Arc<dyn Store>,
        engine: Engine,
        envs: Arc<engine::environments::Environments>,
        credentials: Credentials,
        mcp: Arc<mcp::Hub>,
        work: Arc<telemetry::Metrics>,
    ) -> Self {
        let metrics = Arc::new(Metrics::new(work));
        Self { store, engine, envs, keys: Arc::default(), metrics, credentials, mcp }
    }
}
