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

/// Documents remembered at most (the writer forgets them all past this).
const REMEMBERED: usize = 4096;

/// Each session's organization and document, as last committed by this writer.
#[derive(Default)]
pub(crate) struct Known {
    docs: HashMap<SessionId, (String, String)>,
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
        if self.docs.len() + merged.sessions.len() > REMEMBERED {
            self.docs.clear();
        }
        for ((id, org_id), (_, doc)) in merged.sessions.into_iter().zip(merged.docs) {
            if refused.contains(&id) {
                self.docs.remove(&id);
            } else {
                self.docs.insert(id, (org_id, doc));
            }
        }
    }

    /// Forgets the documents of a merge that found them changed.
    pub(crate) fn forget(&mut self, merged: &Merged) {
        for (id, _) in &merged.sessions {
            self.docs.remove(id);
        }
    }
}
