//! `AppState`: what every handler shares. Cheap to clone (all `Arc`).

use crate::auth::KeyCache;
use crate::metrics::Metrics;
use std::sync::Arc;
use store::Store;

#[derive(Clone)]
pub struct AppState {
    pub store: Arc<dyn Store>,
    pub keys: Arc<KeyCache>,
    pub metrics: Arc<Metrics>,
}

impl AppState {
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self { store, keys: Arc::default(), metrics: Arc::default() }
    }
}
