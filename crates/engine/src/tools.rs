//! The tools a turn offers the model: client functions (the turn waits for
//! the caller's result) and hosted tools that run inside the server (sandbox
//! built-ins, MCP helpers), which plug in through [`HostedTools`]. Deferred
//! functions are offered only once `tool_search` has found them.

use crate::record::Recorder;
use crate::tool_search::{Loaded, ToolSearch};
use models::ToolSpec;
use protocol::agent::AgentConfig;
use protocol::tool::{FunctionTool, ToolParam};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// What a hosted tool answered: the text for the model. The tool records its
/// own items (an `mcp_call`, a `command_execution`) through the recorder.
pub struct HostedOutput {
    pub text: String,
    /// Set when the turn cannot go on (its environment failed to start …).
    pub fatal: Option<protocol::turn::TurnError>,
}

impl HostedOutput {
    pub fn text(text: impl Into<String>) -> Self {
        Self { text: text.into(), fatal: None }
    }
}

/// A call that waits for approval: the MCP server, its tool and the arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalAsk {
    pub server: String,
    pub tool: String,
    pub arguments: Value,
}

/// Tools that run inside the server for one turn.
#[async_trait::async_trait]
pub trait HostedTools: Send + Sync {
    /// What the model is told about these tools.
    fn specs(&self) -> Vec<ToolSpec>;
    /// Whether `name` is one of these tools.
    fn handles(&self, name: &str) -> bool;
    /// Text added after the agent's instructions in every model request of
    /// the turn (the skills catalog).
    fn instructions(&self) -> Option<String> {
        None
    }
    /// What the caller should hear about these tools as the turn starts
    /// (an optional MCP server left out, and why): (code, message) pairs.
    fn warnings(&self) -> Vec<(String, String)> {
        Vec::new()
    }
    /// Whether [`Self::streaming`] wants the arguments of calls as the model streams them.
    fn wants_streaming(&self) -> bool {
        false
    }
    /// The model is streaming a call to `name` (one of these tools): `fragment` is the next
    /// piece of its arguments (joined, a prefix of the final ones; the first may be empty). A
    /// tool may start read-only work the call will need (never the call itself); `call_id`
    /// is the id the complete call will have.
    fn streaming(&self, _name: &str, _call_id: &str, _fragment: &str, _cancel: &CancellationToken) {}
    /// A new model step starts: whatever [`Self::streaming`] started for calls of earlier
    /// steps that never ran is dropped.
    fn step_started(&self) {}
    /// What a person must approve before this call runs, if anything.
    fn approval(&self, _name: &str, _arguments: &Value) -> Option<ApprovalAsk> {
        None
    }
    /// Runs one call; `cancel` fires when the turn is cancelled.
    async fn call(
        &self,
        name: &str,
        call_id: &str,
        arguments: Value,
        recorder: &mut Recorder,
        cancel: &CancellationToken,
    ) -> HostedOutput;
}

/// Builds the hosted tools for a turn of a session, if the session has any.
#[async_trait::async_trait]
pub trait HostedToolsFactory: Send + Sync {
    /// Connects what the turn needs before its first model call; an error
    /// (a required MCP server that cannot initialize) fails the turn.
    /// `cancel` fires when the turn is cancelled meanwhile; `rec` is the
    /// turn's recorder (its session, and events such as the environment's).
    async fn for_turn(
        &self,
        org_id: &str,
        rec: &mut crate::record::Recorder,
        cancel: &CancellationToken,
    ) -> Result<Vec<Arc<dyn HostedTools>>, protocol::turn::TurnError>;
    /// Runs after a turn's last step, before it is reported finished
    /// (collecting the session's outputs into artifacts).
    async fn after_turn(
        &self,
        _org_id: &str,
        _session: &protocol::session::SessionRecord,
        _turn_id: protocol::ids::TurnId,
    ) {
    }
    /// Where a session's turns must run: its environment and the node that
    /// runs it (in a cluster), if it has one.
    async fn home(
        &self,
        _org_id: &str,
        _session_id: protocol::ids::SessionId,
    ) -> Result<Option<(protocol::ids::EnvironmentId, String)>, store::Error> {
        Ok(None)
    }
}

/// The tool set of one turn.
pub struct ToolSet {
    pub functions: HashMap<String, FunctionTool>,
    pub hosted: Vec<Arc<dyn HostedTools>>,
    /// Deferred functions `tool_search` found this turn: offered from then on.
    loaded: Loaded,
}

impl ToolSet {
    pub fn new(config: &AgentConfig, mut hosted: Vec<Arc<dyn HostedTools>>) -> Self {
        let functions: HashMap<String, FunctionTool> = config
            .tools
            .iter()
            .filter_map(|t| match t {
                ToolParam::Function(f) => Some((f.name.clone(), f.clone())),
                _ => None,
            })
            .collect();
        let loaded = Loaded::default();
        if config.tools.iter().any(|t| matches!(t, ToolParam::ToolSearch)) {
            let mut deferred: Vec<&FunctionTool> = functions.values().filter(|f| f.defer_loading).collect();
            deferred.sort_by(|a, b| a.name.cmp(&b.name));
            hosted.push(Arc::new(ToolSearch::new(deferred, Arc::clone(&loaded))));
        }
        Self { functions, hosted, loaded }
    }

    /// Whether the model may call client function `name` now: it is not deferred, or
    /// `tool_search` has found it.
    pub fn offers_function(&self, name: &str) -> bool {
        match self.functions.get(name) {
            Some(f) if f.defer_loading => self.loaded.lock().is_ok_and(|loaded| loaded.contains(name)),
            Some(_) => true,
            None => false,
        }
    }

    /// Every tool as the model sees it.
    pub fn specs(&self) -> Vec<ToolSpec> {
        let mut specs: Vec<ToolSpec> = self
            .functions
            .values()
            .filter(|f| self.offers_function(&f.name))
            .map(|f| ToolSpec::new(&f.name, &f.description, Value::Object(f.parameters.clone())))
            .collect();
        specs.sort_by(|a, b| a.name.cmp(&b.name));
        for h in &self.hosted {
            specs.extend(h.specs());
        }
        specs
    }

    /// What the hosted tools add to the agent's instructions, joined.
    pub fn instructions(&self) -> Option<String> {
        let parts: Vec<String> = self.hosted.iter().filter_map(|h| h.instructions()).collect();
        (!parts.is_empty()).then(|| parts.concat())
    }

    /// Whether a hosted tool wants calls' arguments as they stream.
    pub fn wants_streaming(&self) -> bool {
        self.hosted.iter().any(|h| h.wants_streaming())
    }

    /// The hosted tool set that runs `name`, if any.
    pub fn hosted_for(&self, name: &str) -> Option<Arc<dyn HostedTools>> {
        self.hosted.iter().find(|h| h.handles(name)).cloned()
    }
}
