//! A read cache of records in front of the database, by id, each entry
//! tagged with its organization (another organization's read of the same id
//! misses). A write invalidates its entry after it commits; a read that
//! raced a write does not fill the cache (a generation counter tells), so
//! the cache never serves a stale record. It is per process: while other
//! nodes share the database it serves nothing. One [`Sharing`] says so for
//! every cache of a store ([`ReadCache::set_shared`] sets it). Sessions
//! ([`crate::session_cache`]) and agents use it.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

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

/// Whether other nodes share the database, for every cache of one store:
/// how many times that changed (odd: shared).
#[derive(Debug, Default)]
pub struct Sharing(AtomicU64);

impl Sharing {
    fn set(&self, shared: bool) {
        let flip = |state: u64| (Self::shared(state) != shared).then_some(state + 1);
        let _ = self.0.fetch_update(Ordering::SeqCst, Ordering::SeqCst, flip);
    }

    fn state(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }

    fn shared(state: u64) -> bool {
        state % 2 == 1
    }
}

pub(crate) struct Inner<V: Keyed> {
    pub entries: HashMap<V::Key, (String, V)>,
    /// Bumped by every invalidation.
    pub generation: u64,
    /// The [`Sharing`] state the entries were kept under.
    sharing: u64,
}

impl<V: Keyed> Default for Inner<V> {
    fn default() -> Self {
        Inner { entries: HashMap::new(), generation: 0, sharing: 0 }
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
    /// While other nodes write the same records, every read goes to the database.
    sharing: Arc<Sharing>,
}

impl<V: Keyed> Default for ReadCache<V> {
    fn default() -> Self {
        Self::new(Arc::default())
    }
}

impl<V: Keyed> std::fmt::Debug for ReadCache<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadCache").field("entries", &self.lock().entries.len()).finish()
    }
}

impl<V: Keyed> ReadCache<V> {
    /// A cache that serves nothing while `sharing` says other nodes share the database.
    pub fn new(sharing: Arc<Sharing>) -> Self {
        ReadCache { inner: Mutex::default(), sharing }
    }

    /// The entries, dropped first when sharing changed since they were kept
    /// (whether shared or not: what was kept meanwhile may be stale).
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, Inner<V>> {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let sharing = self.sharing.state();
        if inner.sharing != sharing {
            inner.sharing = sharing;
            inner.entries.clear();
            inner.generation += 1;
        }
        inner
    }

    /// Whether other nodes share the database: while they do, no cache of
    /// this one's [`Sharing`] serves anything (and each starts over when that
    /// changes).
    pub fn set_shared(&self, shared: bool) {
        self.sharing.set(shared);
    }

    /// The cached record, or the generation to pass to [`Self::fill`].
    pub fn get(&self, org_id: &str, id: &V::Key) -> Result<V, u64> {
        let inner = self.lock();
        if Sharing::shared(inner.sharing) {
            return Err(inner.generation);
        }
        match inner.entries.get(id) {
            Some((org, record)) if org == org_id => Ok(record.clone()),
            _ => Err(inner.generation),
        }
    }

    /// Caches a record read from the database, unless a write happened since
    /// `generation` (or sharing changed: that counts as one).
    pub fn fill(&self, org_id: &str, record: &V, generation: u64) {
        let mut inner = self.lock();
        if inner.generation != generation || Sharing::shared(inner.sharing) {
            return;
        }
        inner.insert(org_id, record);
    }

    /// Caches a record whose creation just committed: nothing can have
    /// written it before, so no generation is needed (the read right after a
    /// create then needs no query).
    pub fn created(&self, org_id: &str, record: &V) {
        let mut inner = self.lock();
        if !Sharing::shared(inner.sharing) {
            inner.insert(org_id, record);
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, PartialEq)]
    struct Rec(&'static str);

    impl Keyed for Rec {
        type Key = &'static str;
        fn key(&self) -> &'static str {
            self.0
        }
    }

    #[test]
    fn every_cache_of_one_sharing_follows_it() {
        let sharing = Arc::new(Sharing::default());
        let (sessions, agents) = (ReadCache::new(Arc::clone(&sharing)), ReadCache::new(sharing));
        sessions.created("org", &Rec("s"));
        agents.created("org", &Rec("a"));
        assert_eq!(agents.get("org", &"a"), Ok(Rec("a")));
        // The cluster says so through one cache; the other follows.
        sessions.set_shared(true);
        assert!(agents.get("org", &"a").is_err(), "another node may have changed it");
        let generation = agents.get("org", &"a").unwrap_err();
        agents.fill("org", &Rec("a"), generation);
        agents.created("org", &Rec("b"));
        assert!(agents.get("org", &"a").is_err() && agents.get("org", &"b").is_err(), "nothing kept while shared");
        sessions.set_shared(true);
        sessions.set_shared(false);
        assert!(agents.get("org", &"a").is_err(), "what was kept before is dropped");
        assert!(sessions.get("org", &"s").is_err(), "on both");
        let generation = agents.get("org", &"a").unwrap_err();
        agents.fill("org", &Rec("a"), generation);
        assert_eq!(agents.get("org", &"a"), Ok(Rec("a")), "alone again, it fills as before");
    }

    #[test]
    fn a_read_begun_before_sharing_changed_does_not_fill() {
        let cache: ReadCache<Rec> = ReadCache::default();
        let generation = cache.get("org", &"a").unwrap_err();
        cache.set_shared(true);
        cache.set_shared(false);
        cache.fill("org", &Rec("a"), generation);
        assert!(cache.get("org", &"a").is_err(), "read under other sharing: maybe stale");
    }
}
