//! Each session's history — the items of its finished turns — kept in memory
//! after a turn ends, so that the next turn need not read it back from the
//! store before asking the model. Whatever changes a history outside a turn
//! (conversation items added directly, a queued turn cancelled, a failed
//! turn's cleanup, a delete) invalidates it; a generation per session keeps a
//! turn that started before such a change from storing a stale history.

use protocol::ids::SessionId;
use protocol::item::Item;
use std::collections::HashMap;
use std::sync::Mutex;

/// Sessions whose history is kept at most; past that the map starts over.
const CAPACITY: usize = 1024;

#[derive(Default)]
struct Entry {
    generation: u64,
    items: Option<Vec<Item>>,
}

/// The histories.
#[derive(Default)]
pub struct Histories {
    map: Mutex<HashMap<SessionId, Entry>>,
}

impl Histories {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Entry>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The generation to pass to [`Self::put`], and the history if kept,
    /// taken out (no copy): the turn that takes it puts back the longer one.
    pub fn take(&self, session_id: SessionId) -> (u64, Option<Vec<Item>>) {
        let mut map = self.lock();
        let Some(entry) = map.get_mut(&session_id) else { return (0, None) };
        (entry.generation, entry.items.take())
    }

    /// Keeps a session's history, unless it changed since `generation`.
    pub fn put(&self, session_id: SessionId, generation: u64, items: Vec<Item>) {
        let mut map = self.lock();
        if map.len() >= CAPACITY && !map.contains_key(&session_id) {
            map.clear();
        }
        let entry = map.entry(session_id).or_default();
        if entry.generation == generation {
            entry.items = Some(items);
        }
    }

    /// Forgets a session's history (it changed outside a turn).
    pub fn invalidate(&self, session_id: SessionId) {
        let mut map = self.lock();
        let entry = map.entry(session_id).or_default();
        entry.generation += 1;
        entry.items = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_that_started_before_a_change_does_not_store_its_history() {
        let h = Histories::default();
        let id = SessionId::new();
        let (generation, none) = h.take(id);
        assert!(none.is_none());
        h.invalidate(id);
        h.put(id, generation, Vec::new());
        assert!(h.take(id).1.is_none(), "a stale history is not kept");
        let (generation, _) = h.take(id);
        h.put(id, generation, Vec::new());
        let (generation, kept) = h.take(id);
        assert!(kept.is_some());
        assert!(h.take(id).1.is_none(), "taken out until the turn puts it back");
        h.put(id, generation, Vec::new());
        assert!(h.take(id).1.is_some());
    }
}
