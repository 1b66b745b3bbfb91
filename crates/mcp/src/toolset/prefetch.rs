//! A `call_tool`'s own fresh `tools/list`, started while the model is still streaming the
//! call's arguments (as soon as they name the server), so that the fetch the spec requires
//! before every call overlaps with the rest of the stream instead of following it.
//!
//! A [`Prefetch`] belongs to one call: [`Toolset::call_tool_prefetched`] takes it by value and
//! uses it only if it was started for the server the final arguments name, over the connection
//! the toolset still uses, and succeeded; otherwise the call fetches as usual. Nothing is ever
//! called speculatively: only `tools/list` runs early. A prefetch dropped unused is aborted.

use super::{ServerBinding, Toolset};
use crate::catalog::ToolInfo;
use crate::error::Result;
use std::sync::Arc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A fresh `tools/list` of one server, in flight or done, for one coming call.
#[derive(Debug)]
pub struct Prefetch {
    server: String,
    connection: u64,
    fetch: JoinHandle<Result<Arc<Vec<ToolInfo>>>>,
}

impl Prefetch {
    /// The server label it fetches.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The full tool list, waiting for it if still in flight; `None` if it failed, was
    /// cancelled, or `cancel` fired while waiting.
    async fn tools(mut self, cancel: &CancellationToken) -> Option<Arc<Vec<ToolInfo>>> {
        tokio::select! {
            joined = &mut self.fetch => joined.ok()?.ok(),
            _ = cancel.cancelled() => None,
        }
    }
}

impl Drop for Prefetch {
    fn drop(&mut self) {
        // An unused fetch still in flight is not worth finishing (its request is cancelled).
        self.fetch.abort();
    }
}

impl Toolset {
    /// Starts the fresh `tools/list` of `server` for a call whose arguments are still arriving
    /// (it refreshes the catalog cache like any fetch). `None` if the session has no such
    /// server. Must be called inside a tokio runtime.
    pub fn prefetch(&self, server: &str, cancel: &CancellationToken) -> Option<Prefetch> {
        let binding = self.binding(server).ok()?.clone();
        let toolset = self.clone();
        let cancel = cancel.clone();
        let connection = binding.connection.id();
        let fetch = tokio::spawn(async move { toolset.fetch(&binding, &cancel).await.map(|(_, tools)| tools) });
        Some(Prefetch { server: server.to_owned(), connection, fetch })
    }

    /// The fresh tool list a call to `binding` uses: its prefetch when that fits and succeeded,
    /// a fetch now otherwise.
    pub(super) async fn fresh_tools(
        &self,
        binding: &ServerBinding,
        prefetch: Option<Prefetch>,
        cancel: &CancellationToken,
    ) -> Result<Arc<Vec<ToolInfo>>> {
        let fits = |p: &Prefetch| p.server == binding.config.label && p.connection == binding.connection.id();
        let server = binding.config.label.as_str();
        match prefetch {
            Some(prefetch) if fits(&prefetch) => match prefetch.tools(cancel).await {
                Some(tools) => {
                    tracing::debug!(server, "call_tool uses its prefetched tools/list");
                    return Ok(tools);
                }
                None => tracing::debug!(server, "call_tool's prefetched tools/list failed: fetching again"),
            },
            Some(prefetch) => {
                tracing::debug!(server, prefetched = prefetch.server(), "call_tool's prefetch does not fit: fetching");
            }
            None => {}
        }
        Ok(self.fetch(binding, cancel).await?.1)
    }
}
