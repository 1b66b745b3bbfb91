//! Event sequence numbers: a hybrid logical clock. A number is a time in
//! microseconds times 64, plus the slot of the node that handed it out
//! (below 64, unique among a cluster's nodes), so no two nodes ever hand out
//! the same one. The time is this machine's clock corrected by the offset to
//! the database's clock (measured when the node joins), pushed forward past
//! every number this node has handed out or seen from another node, so a
//! session's numbers keep increasing when its turns move between nodes.

use std::sync::atomic::{AtomicI64, Ordering};

/// Bits of a sequence number that hold the node's slot.
const SLOT_BITS: u32 = 6;
/// How far back a new subscriber of another node's events starts reading
/// (an upper bound of two clocks' disagreement), in microseconds.
const RECENT_MICROS: i64 = 2_000_000;

/// How much earlier than a record's creation time its events may be
/// numbered (clocks of nodes disagree; creation times are whole seconds).
const BEFORE_MARGIN_SECS: i64 = 5;

/// A sequence number below every event of a record created at `unix_secs`:
/// where reading a turn's events from the store starts.
pub fn seq_before(unix_secs: i64) -> i64 {
    (unix_secs - BEFORE_MARGIN_SECS).max(0).saturating_mul(1_000_000) << SLOT_BITS
}

/// Hands out increasing sequence numbers.
#[derive(Debug, Default)]
pub struct Clock {
    /// The time part of the last number handed out or seen.
    last: AtomicI64,
    slot: AtomicI64,
    /// Microseconds to add to this machine's clock for the database's.
    offset: AtomicI64,
}

fn local_micros() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX >> SLOT_BITS))
}

impl Clock {
    /// Numbers from now on carry `slot` (below 64) and follow the database's
    /// clock, `offset` microseconds ahead of this machine's.
    pub fn join(&self, slot: i32, offset: i64) {
        self.slot.store(i64::from(slot) & ((1 << SLOT_BITS) - 1), Ordering::Relaxed);
        self.offset.store(offset, Ordering::Relaxed);
    }

    fn now(&self) -> i64 {
        local_micros().saturating_add(self.offset.load(Ordering::Relaxed))
    }

    /// The next number.
    pub fn next(&self) -> i64 {
        let now = self.now();
        let prev = self.last.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |last| Some((last + 1).max(now)));
        let time = prev.map_or(now, |last| (last + 1).max(now));
        (time << SLOT_BITS) | self.slot.load(Ordering::Relaxed)
    }

    /// The last number handed out (or seen): every later one is greater.
    pub fn last(&self) -> i64 {
        (self.last.load(Ordering::SeqCst) << SLOT_BITS) | ((1 << SLOT_BITS) - 1)
    }

    /// A number a little in the past: where reading another node's recent events starts.
    pub fn recent(&self) -> i64 {
        (self.last.load(Ordering::SeqCst) - RECENT_MICROS).max(0) << SLOT_BITS
    }

    /// Moves past `seq` (a number seen from another node, or stored).
    pub fn observe(&self, seq: i64) {
        self.last.fetch_max(seq >> SLOT_BITS, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_increase_carry_the_slot_and_pass_what_was_seen() {
        let clock = Clock::default();
        clock.join(5, 0);
        let a = clock.next();
        let b = clock.next();
        assert!(b > a);
        assert_eq!((a & 63, b & 63), (5, 5));
        assert!(clock.last() >= b);
        // Another node far ahead: the next number passes it.
        let ahead = (local_micros() + 60_000_000) << SLOT_BITS | 9;
        clock.observe(ahead);
        assert!(clock.next() > ahead);
        assert!(clock.recent() < clock.last());
        // Numbers follow the database's clock: a node behind it by a minute is set right.
        let behind = Clock::default();
        behind.join(1, 60_000_000);
        assert!(behind.next() >> SLOT_BITS >= local_micros() + 59_000_000);
    }
}
