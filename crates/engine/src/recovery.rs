//! Turns whose process is gone: at start, the ones a previous process of
//! this node (or a server without a cluster) left unfinished; in a cluster,
//! the ones of a lost node, whose leases another node took over. Each is
//! failed with a code that says why, its unfinished items closed, so the
//! session accepts input again. A turn left waiting for its caller (client
//! functions, approvals) is not failed: it is revived and waits again.

use crate::error::Result;
use crate::runtime::Engine;
use protocol::event::EventBody;
use protocol::ids::{SessionId, TurnId};
use protocol::item::{Content, Item, ItemStatus, Role, SummaryText};
use protocol::turn::{Turn, TurnError, TurnStatus};
use std::collections::HashMap;
use store::Write;

impl Engine {
    /// Fails the turns a previous process left unfinished, so that their
    /// sessions accept input again. Call once at start, after joining a
    /// cluster. In a cluster, only the turns of sessions no node holds or
    /// this node's id held (its previous process): another node's are its
    /// own (or, once its lease expires, the node that takes it over settles
    /// them).
    pub async fn recover(&self) -> Result<usize> {
        let open = self.inner.store.open_turns().await?;
        let mut count = 0;
        let mut waiting = Vec::new();
        for (org_id, turn) in open {
            if let Some(cluster) = self.cluster()
                && let Some(holder) = cluster.holder(turn.session_id).await?
                && holder != cluster.node().id
            {
                continue;
            }
            // A turn waiting for its caller needs nothing of the process that ran it.
            if turn.status == TurnStatus::Waiting {
                waiting.push((org_id, turn));
                continue;
            }
            let error = TurnError::new("server_restarted", "the server restarted while this turn was running");
            self.fail_left(&org_id, turn, error).await?;
            count += 1;
        }
        self.flush().await?;
        if let Some(cluster) = self.cluster() {
            cluster.drop_own_leases().await?;
        }
        // Not revived here: another node took the session meanwhile, and it is theirs.
        for (org_id, turn) in waiting {
            self.revive(&org_id, turn).await?;
        }
        Ok(count)
    }

    /// Fails the open turns of `session`, whose node `node` was lost (a
    /// waiting one is revived here instead, when it can run here).
    pub(crate) async fn settle_lost(&self, session_id: SessionId, node: &str) -> Result<usize> {
        let open = self.inner.store.open_turns().await?;
        let mut count = 0;
        for (org_id, turn) in open.into_iter().filter(|(_, t)| t.session_id == session_id) {
            // A turn waiting for its caller waits on here instead.
            if turn.status == TurnStatus::Waiting && self.revive(&org_id, turn.clone()).await.unwrap_or(false) {
                continue;
            }
            let error = TurnError::new(
                "node_lost",
                format!("the node '{node}' that ran this turn was lost (stopped or unreachable)"),
            );
            self.fail_left(&org_id, turn, error).await?;
            count += 1;
        }
        self.flush().await?;
        Ok(count)
    }

    /// Ends a turn no process runs any more as failed with `error`.
    async fn fail_left(&self, org_id: &str, turn: Turn, error: TurnError) -> Result<()> {
        let session_id = turn.session_id;
        let Some(session) = self.inner.store.get_session(org_id, session_id).await? else { return Ok(()) };
        self.close_interrupted_items(org_id, session_id, turn.id).await?;
        let mut rec = self.recorder(org_id, session, turn);
        rec.finish(TurnStatus::Failed, Some(error)).await
    }

    /// Marks the items a crashed turn left in progress as incomplete; a
    /// partial answer gets back the text its stored deltas carried.
    async fn close_interrupted_items(&self, org_id: &str, session_id: SessionId, turn_id: TurnId) -> Result<()> {
        let store = &self.inner.store;
        let items = store.turn_items(org_id, session_id, turn_id).await?;
        let open: Vec<(i64, Item)> = output_items(items)
            .into_iter()
            .filter(|(_, i)| {
                matches!(
                    i,
                    Item::Message { status: ItemStatus::InProgress, .. }
                        | Item::FunctionCall { status: ItemStatus::InProgress, .. }
                        | Item::McpCall { status: ItemStatus::InProgress, .. }
                        | Item::CommandExecution { status: ItemStatus::InProgress, .. }
                )
            })
            .collect();
        if open.is_empty() {
            return Ok(());
        }
        let mut texts: HashMap<String, String> = HashMap::new();
        let mut after = 0;
        loop {
            let events = store.events_after(session_id, after, 1000).await?;
            let Some(last) = events.last() else { break };
            after = last.event_id.seq();
            for e in &events {
                if let EventBody::OutputTextDelta { item_id, delta, .. }
                | EventBody::ReasoningSummaryTextDelta { item_id, delta, .. } = &e.body
                {
                    texts.entry(item_id.clone()).or_default().push_str(delta);
                }
            }
        }
        let sid = session_id;
        let mut events = Vec::new();
        for (index, mut item) in open {
            match &mut item {
                Item::Message { id, status, content, .. } => {
                    *status = ItemStatus::Incomplete;
                    let text = texts.remove(id.as_str()).unwrap_or_default();
                    events.extend(crate::turn::text_done(sid, turn_id, id, index, &text));
                    *content = vec![Content::OutputText { text }];
                }
                Item::Reasoning { id, status, summary, .. } => {
                    *status = ItemStatus::Incomplete;
                    let text = texts.remove(id.as_str()).unwrap_or_default();
                    if !text.is_empty() {
                        *summary = vec![SummaryText { text }];
                    }
                }
                Item::FunctionCall { status, .. }
                | Item::McpCall { status, .. }
                | Item::CommandExecution { status, .. } => {
                    *status = ItemStatus::Incomplete;
                }
                Item::FunctionCallOutput { .. } | Item::Program { .. } | Item::ProgramOutput { .. } => {}
            }
            self.inner.journal.write(Write::Item { org_id: org_id.to_string(), session_id, item: item.clone() });
            events.push(EventBody::ItemDone { session_id: sid, turn_id, output_index: index, item });
        }
        self.inner.bus.publish(session_id, events);
        Ok(())
    }
}

/// A turn's output items with their output indexes: every item but the
/// user's messages and the functions' results (session items), in order.
pub(crate) fn output_items(items: impl IntoIterator<Item = Item>) -> Vec<(i64, Item)> {
    items
        .into_iter()
        .filter(|i| !matches!(i, Item::Message { role: Role::User, .. } | Item::FunctionCallOutput { .. }))
        .enumerate()
        .map(|(index, item)| (index as i64, item))
        .collect()
}
