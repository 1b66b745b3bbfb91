//! What nodes tell each other, over PostgreSQL's `LISTEN/NOTIFY` on one
//! channel. A notice is sent in (or right after) the transaction of the
//! change it announces, so a node hears of a change only once it is
//! committed. Each starts with the sender's slot (`-` for a process that is
//! not a node, such as `rebyte keys`), so a node can tell its own notices.
//!
//! Notices are hints, never the data: a node that hears one reads the store.
//! One missed (the listening connection dropped) is [`Notice::Missed`]: its
//! listeners re-read what they follow.

use protocol::ids::SessionId;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// The channel every node listens on.
pub const CHANNEL: &str = "rebyte";
/// The largest payload PostgreSQL takes is 8,000 bytes; replies are cut well below.
pub(crate) const MAX_REPLY: usize = 7000;

/// A change another process committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// Events of a session were committed, the highest being `seq`.
    Events { session: SessionId, seq: i64 },
    /// A session's document changed (or it was deleted).
    Session(SessionId),
    /// API keys changed (a revocation).
    Keys,
    /// A request for the node running a session waits in its inbox; for
    /// `target` when only that node may run it (its environment lives there).
    Inbox { session: SessionId, org: String, target: Option<String> },
    /// The answer to inbox request `request`.
    Reply { request: i64, outcome: String },
    /// A node joined the cluster.
    Joined,
    /// Notices may have been lost (the connection dropped): re-read everything followed.
    Missed,
}

/// A notice with who sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heard {
    /// The sender's slot; `None` for a process outside the cluster.
    pub from: Option<i32>,
    pub notice: Notice,
}

impl Heard {
    /// Parses a payload; `None` for one this build does not know.
    pub fn parse(payload: &str) -> Option<Self> {
        let mut parts = payload.splitn(3, ' ');
        let from = match parts.next()? {
            "-" => None,
            slot => Some(slot.parse().ok()?),
        };
        let kind = parts.next()?;
        let rest = parts.next().unwrap_or("");
        let notice = match kind {
            "e" => {
                let (session, seq) = rest.split_once(' ')?;
                Notice::Events { session: SessionId::parse(session)?, seq: seq.parse().ok()? }
            }
            "s" => Notice::Session(SessionId::parse(rest)?),
            "k" => Notice::Keys,
            "q" => {
                let mut words = rest.split(' ');
                let session = SessionId::parse(words.next()?)?;
                let org = words.next()?.to_string();
                let target = words.next().filter(|t| !t.is_empty()).map(String::from);
                Notice::Inbox { session, org, target }
            }
            "r" => {
                let (request, outcome) = rest.split_once(' ')?;
                Notice::Reply { request: request.parse().ok()?, outcome: outcome.to_string() }
            }
            "j" => Notice::Joined,
            _ => return None,
        };
        Some(Self { from, notice })
    }
}

/// A notice's payload, as sent from `slot` (`< 0`: outside the cluster).
pub(crate) fn payload(slot: i32, notice: &Notice) -> String {
    let from = if slot < 0 { "-".to_string() } else { slot.to_string() };
    match notice {
        Notice::Events { session, seq } => format!("{from} e {session} {seq}"),
        Notice::Session(session) => format!("{from} s {session}"),
        Notice::Keys => format!("{from} k"),
        Notice::Inbox { session, org, target } => {
            format!("{from} q {session} {org} {}", target.as_deref().unwrap_or(""))
        }
        Notice::Reply { request, outcome } => {
            let mut cut = outcome.len().min(MAX_REPLY);
            while !outcome.is_char_boundary(cut) {
                cut -= 1;
            }
            format!("{from} r {request} {}", &outcome[..cut])
        }
        Notice::Joined => format!("{from} j"),
        Notice::Missed => format!("{from} m"),
    }
}

/// The slot this process's notices carry: set once it joins a cluster
/// (shared by the pool's writes, the journal's writer and the cluster).
#[derive(Debug)]
pub(crate) struct Sender {
    slot: AtomicI32,
    /// Whether other nodes run (someone hears what the journal commits).
    peers: AtomicBool,
    /// The node's id, once it joined (the journal's writes are fenced by its leases).
    node: std::sync::OnceLock<String>,
}

impl Default for Sender {
    fn default() -> Self {
        Self { slot: AtomicI32::new(-1), peers: AtomicBool::new(false), node: std::sync::OnceLock::new() }
    }
}

impl Sender {
    pub(crate) fn set_node(&self, node: &str) {
        let _ = self.node.set(node.to_string());
    }

    /// The node's id, once it joined a cluster.
    pub(crate) fn node(&self) -> Option<&str> {
        self.node.get().map(String::as_str)
    }

    pub(crate) fn set_slot(&self, slot: i32) {
        self.slot.store(slot, Ordering::Relaxed);
    }

    pub(crate) fn slot(&self) -> i32 {
        self.slot.load(Ordering::Relaxed)
    }

    /// Whether the journal's commits are announced: by a node, while other
    /// nodes run (a node that joins says so first, so none of its
    /// subscribers misses a commit announced after it).
    pub(crate) fn announces_commits(&self) -> bool {
        self.slot() >= 0 && self.peers.load(Ordering::Relaxed)
    }

    pub(crate) fn set_peers(&self, peers: bool) {
        self.peers.store(peers, Ordering::Relaxed);
    }

    pub(crate) fn payload(&self, notice: &Notice) -> String {
        payload(self.slot(), notice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_parse_back_to_their_notices() {
        let session = SessionId::new();
        let notices = [
            Notice::Events { session, seq: 123_456 },
            Notice::Session(session),
            Notice::Keys,
            Notice::Inbox { session, org: "org_1".into(), target: None },
            Notice::Inbox { session, org: "org_1".into(), target: Some("node-1".into()) },
            Notice::Reply { request: 7, outcome: r#"{"ok":"a b"}"#.into() },
            Notice::Joined,
        ];
        for notice in notices {
            let heard = Heard::parse(&payload(3, &notice)).unwrap();
            assert_eq!(heard, Heard { from: Some(3), notice: notice.clone() });
            assert_eq!(Heard::parse(&payload(-1, &notice)).unwrap().from, None);
        }
        assert_eq!(Heard::parse("3 zz"), None);
        assert_eq!(Heard::parse("x e"), None);
    }

    #[test]
    fn a_long_reply_is_cut_on_a_character_boundary() {
        let outcome = "é".repeat(MAX_REPLY);
        let sent = payload(1, &Notice::Reply { request: 1, outcome });
        assert!(sent.len() <= MAX_REPLY + 10, "{}", sent.len());
        assert!(Heard::parse(&sent).is_some());
    }
}
