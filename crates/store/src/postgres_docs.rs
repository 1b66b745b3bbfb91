//! The session documents the PostgreSQL journal writer last committed, so a
//! batch holding a session's state is one statement and one round trip: the
//! state is merged into the document as this writer left it, and the
//! statement writes it only over that same document ([`Rows::statement`]'s
//! `expected`). Anything else that changed the document since (a
//! configuration update, a delete, a re-key, another node) makes the
//! statement fail whole, and the batch is merged again from the rows read
//! under lock — the way every batch with states was written before, four
//! round trips.
//!
//! [`Rows::statement`]: crate::postgres_rows::Rows::statement

use protocol::ids::SessionId;
use protocol::session::SessionState;
use std::collections::HashMap;

/// Documents remembered at most, and their bytes at most (past either the
/// writer forgets them all; an agent's instructions can make a document large).
const REMEMBERED: usize = 4096;
const REMEMBERED_BYTES: usize = 16 << 20;

/// Each session's organization and document, as last committed by this writer.
#[derive(Default)]
pub(crate) struct Known {
    docs: HashMap<SessionId, (String, String)>,
    /// The documents' bytes.
    bytes: usize,
}

/// A batch's states merged into documents: `(id, merged)` for the
/// statement, the document each merge started from, and each session's
/// id and organization.
#[derive(Default)]
pub(crate) struct Merged {
    pub(crate) docs: Vec<(String, String)>,
    pub(crate) expected: Vec<String>,
    pub(crate) sessions: Vec<(SessionId, String)>,
}

impl Known {
    /// The batch's states merged into the remembered documents; none when a
    /// session's document (in the state's organization) is not remembered.
    pub(crate) fn merge(&self, states: &[(&str, SessionId, &SessionState)]) -> crate::Result<Option<Merged>> {
        let mut merged = Merged::default();
        // The batch's last state of each session.
        for (at, (org_id, id, state)) in states.iter().enumerate() {
            if states[at + 1..].iter().any(|(_, later, _)| later == id) {
                continue;
            }
            let Some((_, doc)) = self.docs.get(id).filter(|(org, _)| org == org_id) else { return Ok(None) };
            merged.docs.push((id.to_string(), crate::sql::set_state(doc, state)?));
            merged.expected.push(doc.clone());
            merged.sessions.push((*id, org_id.to_string()));
        }
        Ok(Some(merged))
    }

    /// Remembers the documents a batch committed, except those of the
    /// `refused` sessions (not written).
    pub(crate) fn committed(&mut self, merged: Merged, refused: &[SessionId]) {
        let adding: usize = merged.docs.iter().map(|(_, doc)| doc.len()).sum();
        if self.docs.len() + merged.sessions.len() > REMEMBERED || self.bytes + adding > REMEMBERED_BYTES {
            self.docs.clear();
            self.bytes = 0;
        }
        for ((id, org_id), (_, doc)) in merged.sessions.into_iter().zip(merged.docs) {
            self.remove(&id);
            if !refused.contains(&id) && doc.len() <= REMEMBERED_BYTES {
                self.bytes += doc.len();
                self.docs.insert(id, (org_id, doc));
            }
        }
    }

    /// Forgets the documents of a merge that found them changed.
    pub(crate) fn forget(&mut self, merged: &Merged) {
        for (id, _) in &merged.sessions {
            self.remove(id);
        }
    }

    fn remove(&mut self, id: &SessionId) {
        if let Some((_, doc)) = self.docs.remove(id) {
            self.bytes -= doc.len();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(status: protocol::session::SessionStatus) -> SessionState {
        SessionState { status, error: None, last_active_at: 1, usage: None, required_actions: Vec::new() }
    }

    #[test]
    fn a_state_merges_into_the_document_last_committed_and_only_in_its_organization() {
        let (id, other) = (SessionId::new(), SessionId::new());
        let mut known = Known::default();
        let idle = state(protocol::session::SessionStatus::Idle);
        assert!(known.merge(&[("o", id, &idle)]).expect("merge").is_none(), "nothing known yet");
        let doc = r#"{"id":"s","status":"running","metadata":{"k":"v"}}"#.to_string();
        let first =
            Merged { docs: vec![(id.to_string(), doc.clone())], expected: vec![], sessions: vec![(id, "o".into())] };
        known.committed(first, &[]);
        assert_eq!(known.bytes, doc.len());
        let merged = known.merge(&[("o", id, &state(protocol::session::SessionStatus::Failed)), ("o", id, &idle)]);
        let merged = merged.expect("merge").expect("known");
        assert_eq!(merged.expected, vec![doc.clone()]);
        assert_eq!(merged.docs.len(), 1, "the batch's last state of each session");
        let written: serde_json::Value = serde_json::from_str(&merged.docs[0].1).expect("json");
        assert_eq!((written["status"].as_str(), written["metadata"]["k"].as_str()), (Some("idle"), Some("v")));
        assert!(known.merge(&[("another", id, &idle)]).expect("merge").is_none(), "another organization's");
        assert!(known.merge(&[("o", id, &idle), ("o", other, &idle)]).expect("merge").is_none(), "one unknown");
        known.forget(&merged);
        assert!(known.merge(&[("o", id, &idle)]).expect("merge").is_none());
        assert_eq!(known.bytes, 0);
    }

    #[test]
    fn past_its_budget_it_forgets_everything_and_a_refused_session_is_not_remembered() {
        let mut known = Known::default();
        let big = "x".repeat(REMEMBERED_BYTES / 2 + 1);
        for _ in 0..2 {
            let id = SessionId::new();
            known.committed(
                Merged {
                    docs: vec![(id.to_string(), big.clone())],
                    expected: vec![],
                    sessions: vec![(id, "o".into())],
                },
                &[],
            );
            assert_eq!((known.docs.len(), known.bytes), (1, big.len()), "the second emptied the first");
        }
        let refused = SessionId::new();
        let merged = Merged {
            docs: vec![(refused.to_string(), "{}".into())],
            expected: vec![],
            sessions: vec![(refused, "o".into())],
        };
        known.committed(merged, &[refused]);
        assert!(!known.docs.contains_key(&refused));
    }
}
