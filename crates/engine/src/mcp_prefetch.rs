//! The fresh `tools/list` of a `call_tool`, started while the model still streams the call's
//! arguments: as soon as they name the server (an incremental [`ServerScan`] of the fragments),
//! or at the first fragment when the turn has exactly one MCP server. When the call runs it
//! takes its own [`Prefetch`] (by call id, once); `mcp::Toolset` uses it only if it fits the
//! final arguments and falls back to fetching otherwise. Entries of calls that never ran are
//! dropped (and their fetches aborted) when the next model step starts or the turn ends.

use mcp::{Prefetch, ServerScan, Toolset};
use std::collections::HashMap;
use std::sync::Mutex;
use tokio_util::sync::CancellationToken;

/// Where one streaming call stands.
enum Streamed {
    /// Reading fragments until the server is named.
    Scanning(ServerScan),
    /// Its fetch is in flight or done.
    Started(Prefetch),
    /// Nothing to prefetch (no server named, or none configured under that name).
    Off,
}

/// The streaming `call_tool` calls of the current model step, by call id.
#[derive(Default)]
pub(crate) struct Prefetches {
    // A std mutex: held to update one entry, never across an await.
    calls: Mutex<HashMap<String, Streamed>>,
}

impl Prefetches {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Streamed>> {
        self.calls.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The next fragment of call `call_id`'s arguments; starts its prefetch once the server is
    /// known. `toolset` is `None` while it is being replaced (the fragment is still scanned).
    pub(crate) fn fragment(
        &self,
        toolset: Option<&Toolset>,
        call_id: &str,
        fragment: &str,
        cancel: &CancellationToken,
    ) {
        let mut calls = self.lock();
        let entry = calls.entry(call_id.to_owned()).or_insert_with(|| Streamed::Scanning(ServerScan::new()));
        let Streamed::Scanning(scan) = entry else { return };
        scan.feed(fragment);
        let label = match (scan.server(), toolset) {
            (Some(label), Some(_)) => label.to_owned(),
            (None, Some(toolset)) if toolset.servers().len() == 1 => toolset.servers()[0].config.label.clone(),
            _ => {
                if scan.is_done() && scan.server().is_none() {
                    *entry = Streamed::Off;
                }
                return;
            }
        };
        let Some(toolset) = toolset else { return };
        *entry = match toolset.prefetch(&label, cancel) {
            Some(prefetch) => {
                tracing::debug!(call_id, server = %label, "call_tool: tools/list started while its arguments stream");
                Streamed::Started(prefetch)
            }
            None => Streamed::Off,
        };
    }

    /// The prefetch of call `call_id`, if one was started; the entry is gone afterwards.
    pub(crate) fn take(&self, call_id: &str) -> Option<Prefetch> {
        match self.lock().remove(call_id) {
            Some(Streamed::Started(prefetch)) => Some(prefetch),
            _ => None,
        }
    }

    /// Drops every entry (a new model step starts).
    pub(crate) fn clear(&self) {
        let stale = std::mem::take(&mut *self.lock());
        drop(stale);
    }
}
