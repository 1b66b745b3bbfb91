//! A server's tool catalog ([`Catalog`]: every page of `tools/list`, with its search index built
//! by its first search, once) and the [`CatalogCache`]: 30 s per (organization, session, configuration, credentials).
//! A hit never extends an entry's expiry; an entry fetched before the connection's latest
//! `notifications/tools/list_changed` is never served. Only tool metadata is kept: no
//! credentials (the key holds SHA-256 fingerprints) and no tool results.

use crate::clock::Clock;
use crate::config::{ConfigHash, CredentialHash};
use crate::connection::Connection;
use crate::search::index::CatalogIndex;
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long a cached catalog may be served.
pub const CATALOG_TTL: Duration = Duration::from_secs(30);

/// One tool as `tools/list` describes it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolInfo {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub description: String,
    #[serde(rename = "inputSchema")]
    pub input_schema: Arc<Map<String, Value>>,
}

impl ToolInfo {
    pub fn new(name: impl Into<String>, description: impl Into<String>, input_schema: Map<String, Value>) -> Self {
        ToolInfo {
            name: name.into(),
            title: None,
            description: description.into(),
            input_schema: Arc::new(input_schema),
        }
    }
}

impl From<rmcp::model::Tool> for ToolInfo {
    fn from(tool: rmcp::model::Tool) -> Self {
        ToolInfo {
            name: tool.name.into_owned(),
            title: tool.title,
            description: tool.description.map(|d| d.into_owned()).unwrap_or_default(),
            input_schema: tool.input_schema,
        }
    }
}

/// The searchable tools of one server (already filtered by `allowed_tools`).
#[derive(Debug)]
pub struct Catalog {
    server: String,
    tools: Vec<ToolInfo>,
    // Built by the first search, once: a catalog fetched by `call_tool` may never be searched.
    index: OnceLock<CatalogIndex>,
}

impl Catalog {
    pub fn new(server_label: impl Into<String>, tools: Vec<ToolInfo>) -> Self {
        Catalog { server: server_label.into(), tools, index: OnceLock::new() }
    }

    /// The search index, built on first use.
    pub(crate) fn index(&self) -> &CatalogIndex {
        self.index.get_or_init(|| CatalogIndex::build(&self.tools))
    }

    /// Builds the search index now rather than in the first search.
    pub fn prepare_index(&self) {
        self.index();
    }

    pub fn server(&self) -> &str {
        &self.server
    }

    pub fn tools(&self) -> &[ToolInfo] {
        &self.tools
    }

    pub fn get(&self, name: &str) -> Option<&ToolInfo> {
        self.tools.iter().find(|tool| tool.name == name)
    }
}

/// What a cached catalog is scoped to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CacheKey {
    pub organization: String,
    pub session: String,
    pub config: ConfigHash,
    pub credentials: CredentialHash,
}

#[derive(Debug)]
struct Entry {
    catalog: Arc<Catalog>,
    expires_at: Instant,
    connection: u64,
    generation: u64,
}

/// Hit and miss counts, for tests and metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
}

/// The catalog cache shared by every session of the server.
#[derive(Debug)]
pub struct CatalogCache {
    clock: Arc<dyn Clock>,
    ttl: Duration,
    // A std mutex: held for a map lookup or insert, never across an await.
    entries: Mutex<HashMap<CacheKey, Entry>>,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl CatalogCache {
    /// A cache with the spec's 30 s expiry.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Self::with_ttl(clock, CATALOG_TTL)
    }

    pub fn with_ttl(clock: Arc<dyn Clock>, ttl: Duration) -> Self {
        CatalogCache {
            clock,
            ttl,
            entries: Mutex::new(HashMap::new()),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<CacheKey, Entry>> {
        self.entries.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The cached catalog for `key`, if it is unexpired, came from `connection`, and no
    /// `tools/list_changed` arrived since it was fetched. Never extends the expiry.
    pub fn get(&self, key: &CacheKey, connection: &Connection) -> Option<Arc<Catalog>> {
        let now = self.clock.now();
        let mut entries = self.lock();
        let fresh = entries.get(key).and_then(|entry| {
            let valid = now < entry.expires_at
                && entry.connection == connection.id()
                && entry.generation == connection.tools_generation();
            valid.then(|| entry.catalog.clone())
        });
        if fresh.is_none() {
            entries.remove(key);
            self.misses.fetch_add(1, Ordering::Relaxed);
        } else {
            self.hits.fetch_add(1, Ordering::Relaxed);
        }
        fresh
    }

    /// Stores a catalog fetched from `connection` when its list-changed generation was
    /// `generation` (read before the fetch, so a change during the fetch leaves it stale).
    pub fn put(&self, key: CacheKey, connection: &Connection, generation: u64, catalog: Arc<Catalog>) {
        let now = self.clock.now();
        let mut entries = self.lock();
        entries.retain(|_, entry| now < entry.expires_at);
        let entry = Entry { catalog, expires_at: now + self.ttl, connection: connection.id(), generation };
        entries.insert(key, entry);
    }

    /// When the entry for `key` expires, if there is one.
    pub fn expires_at(&self, key: &CacheKey) -> Option<Instant> {
        self.lock().get(key).map(|entry| entry.expires_at)
    }

    /// Drops every entry fetched over `connection` (e.g. when it is terminated).
    pub fn forget_connection(&self, connection: &Connection) {
        self.lock().retain(|_, entry| entry.connection != connection.id());
    }

    /// Entries held right now, expired ones included until the next insert.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn stats(&self) -> CacheStats {
        CacheStats { hits: self.hits.load(Ordering::Relaxed), misses: self.misses.load(Ordering::Relaxed) }
    }
}
