//! The client side's answer to what a server sends on its own: `notifications/tools/list_changed`
//! bumps a generation counter the catalog cache compares against; everything else (logging,
//! progress, pings, notifications before the `initialize` answer) is tolerated and ignored.

use rmcp::ClientHandler;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::{NotificationContext, RoleClient};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// State shared between the rmcp service task and the [`super::Connection`].
#[derive(Debug, Default)]
pub(crate) struct Shared {
    // Bumped by every tools/list_changed; a catalog fetched at an older value is stale.
    tools_generation: AtomicU64,
}

impl Shared {
    pub(crate) fn tools_generation(&self) -> u64 {
        self.tools_generation.load(Ordering::Acquire)
    }
}

/// The rmcp client handler of every connection.
#[derive(Debug, Clone)]
pub(crate) struct Handler {
    pub(crate) shared: Arc<Shared>,
    label: Arc<str>,
}

impl Handler {
    pub(crate) fn new(label: Arc<str>) -> Self {
        Handler { shared: Arc::new(Shared::default()), label }
    }
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.label, "tools/list_changed");
        self.shared.tools_generation.fetch_add(1, Ordering::AcqRel);
    }

    fn get_info(&self) -> ClientConfig {
        // The newest revision that still has `initialize`: the npm reference servers speak it,
        // and rmcp's newest (2026-07-28) has no handshake at all.
        ClientConfig::new(ClientCapabilities::default(), Implementation::new("rebyte", env!("CARGO_PKG_VERSION")))
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}
