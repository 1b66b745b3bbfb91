//! A read cache of session records in front of SQLite: reading a session is
//! the hottest path of the API. Every write to a session — its
//! configuration, the engine's state, a delete — invalidates its entry after
//! the write commits; a read that raced a write does not fill the cache (a
//! generation counter tells), so the cache never serves a stale record.
//! It is per process: a second process writing the same file would not be
//! seen (the server is the only writer of sessions). With other nodes alive
//! on the same PostgreSQL database it serves nothing ([`SessionCache::set_shared`]):
//! another node's commit reaches this one's cache only when its notice is
//! heard, which a client reading here right after writing there can beat.

use crate::read_cache::{Keyed, ReadCache};
use protocol::ids::SessionId;
use protocol::session::{SessionRecord, SessionState};

/// The cache of sessions.
pub type SessionCache = ReadCache<SessionRecord>;

impl Keyed for SessionRecord {
    type Key = SessionId;
    fn key(&self) -> SessionId {
        self.id
    }
}

impl ReadCache<SessionRecord> {
    /// Applies the engine's committed state writes to cached records (as the
    /// store applied them to the stored documents), so the next read of a
    /// session that just ran a turn needs no trip to SQLite.
    pub fn set_states<'a>(&self, states: impl IntoIterator<Item = (&'a str, SessionId, &'a SessionState)>) {
        let mut inner = self.lock();
        for (org_id, id, state) in states {
            if let Some((org, record)) = inner.entries.get_mut(&id)
                && org == org_id
            {
                record.set_state(state.clone());
            }
        }
        inner.generation += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::agent::AgentConfig;
    use protocol::session::{SessionAgent, SessionStatus};

    fn record(id: SessionId, status: SessionStatus) -> SessionRecord {
        let agent = SessionAgent { id: "a".into(), version: None, name: None, config: AgentConfig::default() };
        SessionRecord { id, status, ..SessionRecord::new(agent, Default::default(), 0) }
    }

    #[test]
    fn a_read_that_raced_a_write_does_not_fill_the_cache() {
        let cache = SessionCache::default();
        let id = SessionId::new();
        let generation = cache.get("org", &id).unwrap_err();
        // A write commits and invalidates while the read was in flight.
        cache.invalidate([id]);
        cache.fill("org", &record(id, SessionStatus::Idle), generation);
        assert!(cache.get("org", &id).is_err(), "the stale read was not cached");
        let generation = cache.get("org", &id).unwrap_err();
        cache.fill("org", &record(id, SessionStatus::InProgress), generation);
        assert_eq!(cache.get("org", &id).unwrap().status, SessionStatus::InProgress);
        assert!(cache.get("other-org", &id).is_err(), "another organization never sees it");
        cache.invalidate([id]);
        assert!(cache.get("org", &id).is_err());
    }

    #[test]
    fn a_cache_shared_with_other_nodes_serves_nothing() {
        let cache = SessionCache::default();
        let id = SessionId::new();
        cache.created("org", &record(id, SessionStatus::Idle));
        assert!(cache.get("org", &id).is_ok());
        cache.set_shared(true);
        assert!(cache.get("org", &id).is_err(), "another node may have changed it");
        let generation = cache.get("org", &id).unwrap_err();
        cache.fill("org", &record(id, SessionStatus::Idle), generation);
        assert!(cache.get("org", &id).is_err());
        // Alone again: it starts over, and fills as before.
        cache.set_shared(false);
        assert!(cache.get("org", &id).is_err(), "what was kept meanwhile is dropped");
        let generation = cache.get("org", &id).unwrap_err();
        cache.fill("org", &record(id, SessionStatus::Idle), generation);
        assert!(cache.get("org", &id).is_ok());
    }

    #[test]
    fn committed_state_writes_update_the_cached_record() {
        let cache = SessionCache::default();
        let id = SessionId::new();
        let generation = cache.get("org", &id).unwrap_err();
        cache.fill("org", &record(id, SessionStatus::Idle), generation);
        let mut state = record(id, SessionStatus::InProgress).state();
        state.last_active_at = 42;
        // Another organization's write names the same id: not applied.
        cache.set_states([("other-org", id, &record(id, SessionStatus::Failed).state())]);
        assert_eq!(cache.get("org", &id).unwrap().status, SessionStatus::Idle);
        let generation = cache.get("org", &SessionId::new()).unwrap_err();
        cache.set_states([("org", id, &state)]);
        let cached = cache.get("org", &id).unwrap();
        assert_eq!((cached.status, cached.last_active_at), (SessionStatus::InProgress, 42));
        // A read that raced the write still does not fill.
        cache.fill("org", &record(id, SessionStatus::Idle), generation);
        assert_eq!(cache.get("org", &id).unwrap().status, SessionStatus::InProgress);
    }
}
