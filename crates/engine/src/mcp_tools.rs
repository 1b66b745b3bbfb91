//! The MCP helpers a turn offers the model when the session configures MCP servers:
//! `search_tools`, `call_tool`, `list_mcp_resources`, `list_mcp_resource_templates` and
//! `read_mcp_resource` over an [`mcp::Toolset`] — never the servers' whole catalogs.
//!
//! Each `call_tool` is recorded as an `mcp_call` item (added `in_progress`, done with its
//! output or error and status). Searches and resource reads answer the model only: they change
//! nothing and the Responses view shows only `mcp_call`s. A `call_tool` refused with a 401 by a
//! server whose credential came from a vault is retried once after a forced refresh.

use crate::mcp_connect::{Connector, Planned, Problem, unauthorized};
use crate::mcp_prefetch::Prefetches;
use crate::record::Recorder;
use crate::tools::{ApprovalAsk, HostedOutput, HostedTools};
use mcp::{McpCall, McpCallStatus, Origin, Toolset};
use models::ToolSpec;
use protocol::item::{Item, ItemStatus, new_item_id};
use protocol::tool::ToolParam;
use protocol::turn::TurnError;
use serde_json::Value;
use telemetry::ToolKind;
use tokio_util::sync::CancellationToken;

/// The names of the helpers.
pub const HELPERS: [&str; 5] =
    ["search_tools", "call_tool", "list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource"];

/// What a turn uses now: the toolset and the servers it was built from.
struct Live {
    toolset: Toolset,
    planned: Vec<Planned>,
}

/// The MCP helpers of one turn.
pub struct McpTools {
    connector: Connector,
    /// Optional servers left out of the turn, as (code, message).
    left_out: Vec<(String, String)>,
    // Replaced only after a forced credential refresh; calls otherwise share it.
    live: tokio::sync::RwLock<Live>,
    /// `call_tool` catalogs fetched while the calls' arguments stream.
    prefetches: Prefetches,
}

impl McpTools {
    /// Connects the session's servers. `Ok(None)`: the turn was cancelled while connecting. A
    /// required server that cannot initialize, or then cannot list its tools, is the turn's error.
    pub async fn connect(connector: Connector, cancel: &CancellationToken) -> Result<Option<McpTools>, TurnError> {
        let connecting = async {
            let (planned, mut problems) = connector.plan().await;
            let (connected, kept, mut more) = match connector.touch(&planned).await {
                Ok(()) => connector.connect(planned).await,
                Err(message) => {
                    // Environment-origin servers cannot start without the environment.
                    let (env, rest): (Vec<Planned>, Vec<Planned>) =
                        planned.into_iter().partition(|p| matches!(p.spec.origin, Origin::Environment { .. }));
                    problems.extend(env.into_iter().map(|p| Problem {
                        label: p.spec.config.label.clone(),
                        required: p.spec.required,
                        step: "environment".into(),
                        code: "sandbox_error",
                        message: message.clone(),
                    }));
                    connector.connect(rest).await
                }
            };
            problems.append(&mut more);
            problems.extend(connector.check_required(&connected, &kept, cancel).await);
            (connected, kept, problems)
        };
        let (connected, planned, problems) = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Ok(None),
            done = connecting => done,
        };
        for p in &problems {
            let (server, step, required) = (&p.label, &p.step, p.required);
            tracing::warn!(%server, %step, required, code = %p.code, error = %p.message, "MCP server failed to connect");
        }
        if let Some(required) = problems.iter().find(|p| p.required) {
            return Err(required.turn_error());
        }
        let left_out = problems
            .iter()
            .map(|p| {
                (
                    "mcp_server_unavailable".to_string(),
                    format!(
                        "optional MCP server '{}' is left out of this turn (step: {}): {}",
                        p.label, p.step, p.message
                    ),
                )
            })
            .collect();
        let live = Live { toolset: connected.toolset, planned };
        let live = tokio::sync::RwLock::new(live);
        Ok(Some(McpTools { connector, left_out, live, prefetches: Prefetches::default() }))
    }

    async fn toolset(&self) -> Toolset {
        self.live.read().await.toolset.clone()
    }

    async fn call_tool(
        &self,
        call_id: &str,
        args: &Value,
        rec: &mut Recorder,
        cancel: &CancellationToken,
    ) -> HostedOutput {
        let began = std::time::Instant::now();
        let (server, name, arguments) = call_parts(args);
        let (item_id, turn_id) = (new_item_id(), rec.turn.id);
        let item = |output: &Option<String>, error: &Option<String>, status| Item::McpCall {
            id: item_id.clone(),
            turn_id,
            call_id: call_id.to_string(),
            server_label: server.clone(),
            name: name.clone(),
            arguments: arguments.clone(),
            output: output.clone().map_or(Value::Null, Value::String),
            error: error.clone().map_or(Value::Null, Value::String),
            status,
        };
        let started = item(&None, &None, ItemStatus::InProgress);
        let index = match rec.add_item(started).await {
            Ok(index) => index,
            Err(e) => return HostedOutput::text(format!("error: {e}")),
        };
        let text = args.to_string();
        let prefetch = self.prefetches.take(call_id);
        let mut record = self.toolset().await.call_tool_json_prefetched(&text, prefetch, cancel).await;
        if record.failure.as_ref().is_some_and(unauthorized) && self.refresh(&server).await {
            record = self.toolset().await.call_tool_json(&text, cancel).await;
        }
        let status = match record.status {
            McpCallStatus::Completed => ItemStatus::Completed,
            McpCallStatus::Incomplete => ItemStatus::Incomplete,
            _ => ItemStatus::Failed,
        };
        // Under its label only when the label is one of the turn's servers: the model names
        // the server, and a label that is not configured must not become a series.
        let configured = self.live.read().await.planned.iter().any(|p| p.spec.config.label == server);
        rec.metrics.mcp_call(if configured { &server } else { "unknown" }, began.elapsed());
        rec.tool_finished(ToolKind::Mcp, status);
        // The call as the server runs it (the `mcp_turn` bench reads this): JSON arguments in,
        // prefetch taken or fetch made, checks, the call through the broker, the record out.
        tracing::debug!(server = %server, tool = %name, micros = began.elapsed().as_micros() as u64, "call_tool done");
        let _ = rec.done_item(item(&record.output, &record.error, status), index, Vec::new()).await;
        HostedOutput::text(model_text(&record))
    }

    /// Whether the session's configuration makes calls of `tool` on `server` wait for approval.
    fn needs_approval(&self, server: &str, tool: &str) -> bool {
        self.connector.session.agent.config.tools.iter().any(|t| match t {
            ToolParam::Mcp(m) => m.server_label == server && m.require_approval.as_ref().is_some_and(|r| r.needs(tool)),
            _ => false,
        })
    }

    /// A `call_tool` from a Dynamic Workflow program: the same checks, credentials and refresh
    /// as the model's own, but no item (the program's output records it). A tool that needs
    /// approval does not run from a program (a program cannot wait for a person).
    pub(crate) async fn nested_call_tool(&self, arguments: &str, cancel: &CancellationToken) -> McpCall {
        if let Ok(args) = serde_json::from_str::<Value>(arguments) {
            let (server, tool, _) = call_parts(&args);
            if self.needs_approval(&server, &tool) {
                return McpCall::refused(
                    &server,
                    &tool,
                    format!(
                        "the tool '{tool}' of '{server}' needs a person's approval: call it with call_tool, \
                         not from a program"
                    ),
                );
            }
        }
        let mut record = self.toolset().await.call_tool_json(arguments, cancel).await;
        if record.failure.as_ref().is_some_and(unauthorized) && self.refresh(&record.server_label).await {
            record = self.toolset().await.call_tool_json(arguments, cancel).await;
        }
        record
    }

    /// A `search_tools` from a Dynamic Workflow program.
    pub(crate) async fn nested_search_tools(
        &self,
        arguments: &str,
        cancel: &CancellationToken,
    ) -> Result<mcp::SearchOutput, mcp::McpError> {
        self.toolset().await.search_tools_json(arguments, cancel).await
    }

    /// Whether `label` is one of the turn's servers.
    pub(crate) async fn has_server(&self, label: &str) -> bool {
        self.live.read().await.planned.iter().any(|p| p.spec.config.label == label)
    }

    /// Resumes a paused sandbox, which would hold an environment-origin server's answer back.
    pub(crate) async fn touch(&self) {
        let planned: Vec<Planned> = self.live.read().await.planned.clone();
        let _ = self.connector.touch(&planned).await;
    }

    /// After a 401 from `label`: forces a refresh of its vault credential and reconnects.
    /// `true` when a new connection is in place.
    async fn refresh(&self, label: &str) -> bool {
        let mut live = self.live.write().await;
        let Some(at) = live.planned.iter().position(|p| p.spec.config.label == label) else { return false };
        // A broker keeps its first configuration: only service connections take new tokens.
        let candidate = &live.planned[at];
        if candidate.vault.is_none() || candidate.spec.origin != Origin::Service {
            return false;
        }
        let Ok(fresh) = self.connector.refreshed(candidate.clone()).await else { return false };
        let mut planned = live.planned.clone();
        planned[at] = fresh;
        let (connected, kept, problems) = self.connector.connect(planned).await;
        if problems.iter().any(|p| p.label == label) {
            return false;
        }
        *live = Live { toolset: connected.toolset, planned: kept };
        true
    }
}

/// A `call_tool`'s server label, tool name and arguments (a JSON string decoded).
pub(crate) fn call_parts(args: &Value) -> (String, String, Value) {
    let server = args.get("server").and_then(Value::as_str).unwrap_or_default().to_string();
    let name = args.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
    let arguments = match args.get("arguments") {
        None | Some(Value::Null) => Value::Object(Default::default()),
        Some(Value::String(text)) => serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.clone())),
        Some(other) => other.clone(),
    };
    (server, name, arguments)
}

/// What the model sees of a `call_tool`: the output, or the error.
fn model_text(record: &McpCall) -> String {
    match (&record.output, &record.error) {
        (_, Some(error)) => format!("error: {error}"),
        (Some(output), None) => output.clone(),
        (None, None) => String::new(),
    }
}

fn answer<T: serde::Serialize>(outcome: Result<T, mcp::McpError>) -> HostedOutput {
    match outcome {
        Ok(value) => HostedOutput::text(serde_json::to_string(&value).unwrap_or_default()),
        Err(e) => HostedOutput::text(format!("error: {e}")),
    }
}

#[async_trait::async_trait]
impl HostedTools for McpTools {
    fn specs(&self) -> Vec<ToolSpec> {
        mcp::helper_tools().into_iter().map(|h| ToolSpec::new(h.name, h.description, h.parameters)).collect()
    }

    fn handles(&self, name: &str) -> bool {
        HELPERS.contains(&name)
    }

    fn warnings(&self) -> Vec<(String, String)> {
        self.left_out.clone()
    }

    fn wants_streaming(&self) -> bool {
        true
    }

    fn streaming(&self, name: &str, call_id: &str, fragment: &str, cancel: &CancellationToken) {
        if name != "call_tool" {
            return;
        }
        let live = self.live.try_read().ok();
        self.prefetches.fragment(live.as_ref().map(|live| &live.toolset), call_id, fragment, cancel);
    }

    fn step_started(&self) {
        self.prefetches.clear();
    }

    fn approval(&self, name: &str, arguments: &Value) -> Option<ApprovalAsk> {
        if name != "call_tool" {
            return None;
        }
        let (server, tool, arguments) = call_parts(arguments);
        self.needs_approval(&server, &tool).then_some(ApprovalAsk { server, tool, arguments })
    }

    async fn call(
        &self,
        name: &str,
        call_id: &str,
        arguments: Value,
        rec: &mut Recorder,
        cancel: &CancellationToken,
    ) -> HostedOutput {
        self.touch().await;
        let text = arguments.to_string();
        match name {
            "call_tool" => self.call_tool(call_id, &arguments, rec, cancel).await,
            "search_tools" => answer(self.toolset().await.search_tools_json(&text, cancel).await),
            "list_mcp_resources" => answer(self.toolset().await.list_resources_json(&text, cancel).await),
            "list_mcp_resource_templates" => {
                answer(self.toolset().await.list_resource_templates_json(&text, cancel).await)
            }
            "read_mcp_resource" => answer(self.toolset().await.read_resource_json(&text, cancel).await),
            other => HostedOutput::text(format!("error: unknown MCP helper '{other}'")),
        }
    }
}
