//! The hosted tools the server gives each turn: the sandbox built-ins when
//! the session has an environment (whose initialization starts with the
//! turn) and the catalog of its skills in the instructions, the MCP helpers
//! when it configures MCP servers (connected before the first model call) and
//! `dynamic_workflow` over them when the session enables it,
//! and the collection of outputs into artifacts after it.

use crate::environments::Environments;
use crate::mcp_connect::{Connector, McpSetup};
use crate::mcp_tools::McpTools;
use crate::record::Recorder;
use crate::sandbox_tools::{SandboxTools, collect_outputs, output_dir};
use crate::skill_catalog::{self, Catalog};
use crate::tools::{HostedTools, HostedToolsFactory};
use crate::workflow_tool::WorkflowTool;
use protocol::ids::{EnvironmentId, TurnId};
use protocol::session::{SessionEnvironment, SessionRecord};
use protocol::skill::HostedSkill;
use protocol::tool::ToolParam;
use protocol::turn::TurnError;
use std::sync::Arc;
use store::Store;
use tokio_util::sync::CancellationToken;

impl ServerTools {
    /// The skills catalog of a turn on `env_id`: the environment's skills,
    /// and those its capability directories hold now (which waits for the
    /// sandbox, announced as the tools announce it). `None` without skills.
    /// Both lists come from the session's view of its environment (fixed
    /// when the environment was created), so a turn without them reads nothing.
    async fn catalog(
        &self,
        org_id: &str,
        env_id: &EnvironmentId,
        sb: &SandboxTools,
        rec: &mut Recorder,
        cancel: &CancellationToken,
    ) -> Option<Catalog> {
        let SessionEnvironment::OpenaiHosted { skills, capability_directories: dirs, .. } = &rec.session.environment
        else {
            return None;
        };
        let installed: Vec<HostedSkill> =
            skills.iter().filter_map(|s| serde_json::from_value(s.clone()).ok()).collect();
        let (mut skills, dirs) = (skill_catalog::installed(&installed), dirs.clone());
        if !dirs.is_empty() {
            let setup = sb.announce_waiting(rec).await;
            let wait = async {
                tokio::select! {
                    biased;
                    _ = cancel.cancelled() => None,
                    ready = self.envs.sandbox(org_id, env_id) => Some(ready),
                }
            };
            let ready = sb.forward_setup(rec, setup, wait).await;
            if let Some(ready) = ready {
                let failed = ready.as_ref().err().map(|e| TurnError::new(e.code.clone(), e.message.clone()));
                sb.announce_outcome(rec, failed.as_ref()).await;
                if let Ok(sandbox) = ready {
                    let mut taken = skills.iter().map(|s| s.name.clone()).collect();
                    skills.extend(skill_catalog::scan(sandbox.as_ref(), &dirs, &mut taken).await);
                }
            }
        }
        (!skills.is_empty()).then(|| Catalog { text: skill_catalog::render(&skills) })
    }
}

/// The server's tool factory.
pub struct ServerTools {
    pub store: Arc<dyn Store>,
    pub envs: Arc<Environments>,
    /// The MCP hub and credentials; without them MCP tools are not offered.
    pub mcp: Option<McpSetup>,
}

#[async_trait::async_trait]
impl HostedToolsFactory for ServerTools {
    async fn for_turn(
        &self,
        org_id: &str,
        rec: &mut Recorder,
        cancel: &CancellationToken,
    ) -> Result<Vec<Arc<dyn HostedTools>>, TurnError> {
        let mut tools: Vec<Arc<dyn HostedTools>> = Vec::new();
        let mut sandbox_tools = None;
        if let Some(env_id) = rec.session.environment.id() {
            // Whether this turn finds the environment still to be initialized (its first use
            // then announces pending → ready), before warming starts that initialization.
            let pending = self.envs.running(env_id).is_none();
            // The environment goes pending → ready with the first turn.
            self.envs.warm(org_id, env_id);
            let sb = Arc::new(SandboxTools {
                pending: pending.into(),
                envs: Arc::clone(&self.envs),
                org_id: org_id.to_string(),
                env_id: env_id.clone(),
                session_id: rec.session.id,
                output_dir: output_dir(&rec.session),
                connected: Default::default(),
                waited: Default::default(),
                outputs_made: Default::default(),
            });
            sandbox_tools = Some(Arc::clone(&sb));
            tools.push(Arc::clone(&sb) as Arc<dyn HostedTools>);
            let env_id = env_id.clone();
            if let Some(catalog) = self.catalog(org_id, &env_id, &sb, rec, cancel).await {
                tools.push(Arc::new(catalog));
            }
        }
        let connector = self.mcp.as_ref().and_then(|setup| {
            Connector::new(setup.clone(), Arc::clone(&self.envs), Arc::clone(&self.store), org_id, &rec.session)
        });
        if let Some(connector) = connector {
            // Environment-origin servers wait for the environment: announce it as the tools do.
            let waits = sandbox_tools.as_ref().filter(|_| connector.uses_environment());
            let connect = McpTools::connect(connector, cancel);
            let connected = match waits {
                Some(sb) => {
                    let setup = sb.announce_waiting(rec).await;
                    sb.forward_setup(rec, setup, connect).await
                }
                None => connect.await,
            };
            if let Some(sb) = waits.filter(|_| !cancel.is_cancelled()) {
                sb.announce_outcome(rec, connected.as_ref().err()).await;
            }
            if let Some(mcp) = connected? {
                let mcp = Arc::new(mcp);
                tools.push(Arc::clone(&mcp) as Arc<dyn HostedTools>);
                let config = &rec.session.agent.config;
                if config.tools.iter().any(ToolParam::enables_workflow) {
                    let functions = config.tools.iter().filter_map(|t| match t {
                        ToolParam::Function(f) => Some(f.name.clone()),
                        _ => None,
                    });
                    tools.push(Arc::new(WorkflowTool::new(mcp, functions.collect())));
                }
            }
        }
        Ok(tools)
    }

    async fn home(
        &self,
        org_id: &str,
        session_id: protocol::ids::SessionId,
    ) -> Result<Option<(protocol::ids::EnvironmentId, String)>, store::Error> {
        let Some(session) = self.store.get_session(org_id, session_id).await? else { return Ok(None) };
        let Some(env_id) = session.environment.id() else { return Ok(None) };
        let env = self.store.get_environment(org_id, env_id).await?;
        Ok(env.and_then(|e| e.node).map(|node| (env_id.clone(), node)))
    }

    async fn after_turn(&self, org_id: &str, session: &SessionRecord, turn_id: TurnId) {
        if let Some(env_id) = session.environment.id() {
            collect_outputs(&self.envs, self.store.as_ref(), org_id, session, env_id, turn_id).await;
        }
    }
}
