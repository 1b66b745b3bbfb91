//! Fresh `tools/list` fetches shared by concurrent callers. A caller may share a fetch only if
//! that fetch was sent after the caller arrived, so every caller still gets a catalog at least
//! as new as its own request (what `call_tool` needs), while a burst of calls on one broker
//! costs one or two `tools/list` round trips instead of one each. Callers with different
//! `_meta` never share (the metadata may change the answer).

use super::{CallContext, Connection};
use crate::catalog::ToolInfo;
use crate::error::{McpError, Result, Step};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A finished fetch: its number and its answer.
type Finished = (u64, Result<Arc<Vec<ToolInfo>>>);

/// The shared fetches of one `_meta` value.
#[derive(Debug, Default)]
struct Lane {
    /// How many fetches have been sent; a fetch's number is its value after the increment.
    sent: AtomicU64,
    /// The last finished fetch: its number and its answer. The tokio mutex also makes the
    /// fetches of a lane one at a time: a caller holds it while its fetch is in flight.
    last: tokio::sync::Mutex<Option<Finished>>,
}

#[derive(Debug, Default)]
pub(crate) struct FreshLists {
    // A std mutex: held only to find a lane.
    lanes: std::sync::Mutex<HashMap<String, Arc<Lane>>>,
}

impl FreshLists {
    fn lane(&self, ctx: &CallContext) -> Arc<Lane> {
        let key = ctx.meta.as_ref().map(|meta| serde_json::Value::Object(meta.clone()).to_string()).unwrap_or_default();
        let mut lanes = self.lanes.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        lanes.entry(key).or_default().clone()
    }
}

impl Connection {
    /// Every page of `tools/list`, fetched by a request sent after this call began (possibly
    /// shared with concurrent callers with the same `_meta`).
    pub async fn list_tools_fresh(&self, ctx: &CallContext) -> Result<Arc<Vec<ToolInfo>>> {
        let lane = self.fresh.lane(ctx);
        let arrived = lane.sent.load(Ordering::Acquire);
        let mut last = tokio::select! {
            last = lane.last.lock() => last,
            _ = ctx.cancel.cancelled() => {
                return Err(McpError::Cancelled { server: self.label.to_string(), step: Step::ToolsList });
            }
        };
        if let Some((number, answer)) = last.as_ref()
            && *number > arrived
        {
            return answer.clone();
        }
        let number = lane.sent.fetch_add(1, Ordering::AcqRel) + 1;
        let answer = self.list_tools(ctx).await.map(Arc::new);
        // This caller's own cancellation is not an answer for the others.
        if !matches!(answer, Err(McpError::Cancelled { .. })) {
            *last = Some((number, answer.clone()));
        }
        answer
    }
}
