//! A read cache of records in front of the database, by id, each entry
//! tagged with its organization (another organization's read of the same id
//! misses). A write invalidates its entry after it commits; a read that
//! raced a write does not fill the cache (a generation counter tells), so
//! the cache never serves a stale record. It is per process: while other
//! nodes share the database it serves nothing ([`ReadCache::set_shared`]).
//! Sessions ([`crate::session_cache`]) and agents use it.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Entries kept at most; past that the cache starts over.
const CAPACITY: usize = 50_000;

/// A record the cache can hold: it knows its own id.
pub trait Keyed: Clone {
    type Key: Hash + Eq + Clone;
    fn key(&self) -> Self::Key;
}

impl Keyed for protocol::agent::AgentRecord {
    type Key = String;
    fn key(&self) -> String {
        self.id.clone()
    }
}

pub(crate) struct Inner<V: Keyed> {
    pub entries: HashMap<V::Key, (String, V)>,
    /// Bumped by every invalidation.
    pub generation: u64,
}

impl<V: Keyed> Default for Inner<V> {
    fn default() -> Self {
        Inner { entries: HashMap::new(), generation: 0 }
    }
}

impl<V: Keyed> Inner<V> {
    /// Caches `record`, starting over when full.
    fn insert(&mut self, org_id: &str, record: &V) {
        if self.entries.len() >= CAPACITY {
            self.entries.clear();
        }
        self.entries.insert(record.key(), (org_id.to_string(), record.clone()));
    }
}

/// The cache.
pub struct ReadCache<V: Keyed> {
    inner: Mutex<Inner<V>>,
    /// Other nodes write the same records: every read goes to the database.
    shared: AtomicBool,
}

impl<V: Keyed> Default for ReadCache<V> {
    fn default() -> Self {
        ReadCache { inner: Mutex::default(), shared: AtomicBool::new(false) }
    }
}

impl<V: Keyed> std::fmt::Debug for ReadCache<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadCache").field("entries", &self.lock().entries.len()).finish()
    }
}

impl<V: Keyed> ReadCache<V> {
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, Inner<V>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether other nodes share the database: while they do, nothing is
    /// served from the cache (and it starts over when that changes).
    pub fn set_shared(&self, shared: bool) {
        if self.shared.swap(shared, Ordering::SeqCst) != shared {
            self.clear();
        }
    }

    /// Whether other nodes share the database now.
    pub fn is_shared(&self) -> bool {
        self.shared.load(Ordering::SeqCst)
    }

    /// The cached record, or the generation to pass to [`Self::fill`].
    pub fn get(&self, org_id: &str, id: &V::Key) -> Result<V, u64> {
        let inner = self.lock();
        if self.is_shared() {
            return Err(inner.generation);
        }
        match inner.entries.get(id) {
            Some((org, record)) if org == org_id => Ok(record.clone()),
            _ => Err(inner.generation),
        }
    }

    /// Caches a record read from the database, unless a write happened since `generation`.
    pub fn fill(&self, org_id: &str, record: &V, generation: u64) {
        let mut inner = self.lock();
        if inner.generation != generation {
            return;
        }
        inner.insert(org_id, record);
    }

    /// Caches a record whose creation just committed: nothing can have
    /// written it before, so no generation is needed (the read right after a
    /// create then needs no query).
    pub fn created(&self, org_id: &str, record: &V) {
        self.lock().insert(org_id, record);
    }

    /// Forgets records after a write to them committed.
    pub fn invalidate(&self, ids: impl IntoIterator<Item = V::Key>) {
        let mut inner = self.lock();
        for id in ids {
            inner.entries.remove(&id);
        }
        inner.generation += 1;
    }

    /// Forgets every record (changes made elsewhere may have been missed).
    pub fn clear(&self) {
        let mut inner = self.lock();
        inner.entries.clear();
        inner.generation += 1;
    }
}
