//! The hosted tools the server gives each turn: the sandbox built-ins when
//! the session has an environment (whose initialization starts with the
//! turn), and the collection of outputs into artifacts after it.

use crate::environments::Environments;
use crate::sandbox_tools::{SandboxTools, collect_outputs, output_dir};
use crate::tools::{HostedTools, HostedToolsFactory};
use protocol::session::SessionRecord;
use std::sync::Arc;
use store::Store;

/// The server's tool factory.
pub struct ServerTools {
    pub store: Arc<dyn Store>,
    pub envs: Arc<Environments>,
}

#[async_trait::async_trait]
impl HostedToolsFactory for ServerTools {
    async fn for_turn(&self, org_id: &str, session: &SessionRecord) -> Vec<Arc<dyn HostedTools>> {
        let Some(env_id) = session.environment.id() else { return Vec::new() };
        // The environment goes pending → ready with the first turn.
        self.envs.warm(org_id, env_id);
        vec![Arc::new(SandboxTools {
            envs: Arc::clone(&self.envs),
            org_id: org_id.to_string(),
            env_id: env_id.to_string(),
            session_id: session.id.to_string(),
            output_dir: output_dir(session),
        })]
    }

    async fn after_turn(&self, org_id: &str, session: &SessionRecord, turn_id: &str) {
        if let Some(env_id) = session.environment.id() {
            collect_outputs(&self.envs, self.store.as_ref(), org_id, session, env_id, turn_id).await;
        }
    }
}
