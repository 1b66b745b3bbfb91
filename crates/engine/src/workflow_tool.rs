//! `dynamic_workflow`: the hosted tool that runs a model-written JavaScript program over the
//! turn's MCP servers (spec: Dynamic Workflow; the client's `programmatic_tool_calling`). The
//! program's `search_tools` and `call_tool` go through [`McpTools`] with exactly the model's
//! own arguments and checks (fresh catalog, `allowed_tools`, schema, the session's credentials)
//! and make no `mcp_call` items; the run is a `program` item (added as it starts, done as it
//! ends) and then a `program_output` item. The interpreter is the `workflow` crate.

use crate::mcp_tools::McpTools;
use crate::record::Recorder;
use crate::tools::{HostedOutput, HostedTools};
use futures::future::BoxFuture;
use models::ToolSpec;
use protocol::item::{Item, ItemStatus, new_item_id};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use telemetry::ToolKind;
use tokio_util::sync::CancellationToken;
use workflow::{Call, CallKind, Host, Limits, Status};

/// The tool's name.
pub const NAME: &str = "dynamic_workflow";

/// The sandbox built-ins, which a program may not call either.
const SANDBOX_TOOLS: [&str; 3] = ["shell", "read_file", "write_file"];

/// What the model reads about the tool.
const DESCRIPTION: &str = "Run JavaScript that discovers, calls and combines the tools of the configured MCP \
servers in one step. `code` is the body of an async function: use `await`, and `return` the result. Inside it:
- `await search_tools({query | pattern, server?, limit?})` takes the arguments of the search_tools tool and \
returns its answer as a value ({results: [{server, name, description, inputSchema}], ...}).
- `await call_tool({server, name, arguments})` takes the arguments of the call_tool tool and returns the \
tool's structuredContent when it has one, otherwise its content as a string (text parts joined). A failed \
call throws an Error whose message is the error call_tool would have answered. Calls may run at once with \
Promise.all.
- `console.log(...)` output is captured.
Only MCP tools are reachable: client functions and sandbox tools cannot be called from the program. There \
is no filesystem, network, timers or module loading. The tool answers the return value as JSON (at most \
64 KiB), then the console output (at most 16 KiB). Limits per run: 30 s of wall clock, 64 MiB of memory, \
100 nested calls; reaching one, an uncaught exception, or a return value that is not JSON-serializable \
ends the run as incomplete with an error saying why.";

/// The `dynamic_workflow` tool of one turn.
pub struct WorkflowTool {
    mcp: Arc<McpTools>,
    /// The session's client functions and the sandbox built-ins: named, never called.
    not_mcp: Arc<Vec<String>>,
    limits: Limits,
}

impl WorkflowTool {
    /// The tool over the turn's MCP helpers; `functions` are the session's client functions.
    pub fn new(mcp: Arc<McpTools>, functions: Vec<String>) -> Self {
        let mut not_mcp = functions;
        not_mcp.extend(SANDBOX_TOOLS.iter().map(|n| n.to_string()));
        WorkflowTool { mcp, not_mcp: Arc::new(not_mcp), limits: Limits::default() }
    }

    /// The same tool with other limits (tests and benchmarks).
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }
}

/// The bridge's answers: the turn's MCP helpers.
struct McpHost {
    mcp: Arc<McpTools>,
    not_mcp: Arc<Vec<String>>,
}

impl Host for McpHost {
    fn call(&self, call: Call, cancel: CancellationToken) -> BoxFuture<'static, Result<Value, String>> {
        let (mcp, not_mcp) = (Arc::clone(&self.mcp), Arc::clone(&self.not_mcp));
        Box::pin(async move {
            match call.kind {
                CallKind::SearchTools => match mcp.nested_search_tools(&call.arguments, &cancel).await {
                    Ok(found) => serde_json::to_value(found).map_err(|e| e.to_string()),
                    Err(e) => Err(e.to_string()),
                },
                CallKind::CallTool => {
                    if let Some(refusal) = refusal(&mcp, &not_mcp, &call.arguments).await {
                        return Err(refusal);
                    }
                    let record = mcp.nested_call_tool(&call.arguments, &cancel).await;
                    match (record.error, record.structured, record.output) {
                        (Some(error), _, _) => Err(error),
                        (None, Some(structured), _) => Ok(structured),
                        (None, None, output) => Ok(Value::String(output.unwrap_or_default())),
                    }
                }
            }
        })
    }
}

/// Why a program's `call_tool` names something that is not an MCP tool, if it does.
async fn refusal(mcp: &McpTools, not_mcp: &[String], arguments: &str) -> Option<String> {
    let args: Value = serde_json::from_str(arguments).ok()?;
    let server = args.get("server").and_then(Value::as_str).unwrap_or_default();
    let name = args.get("name").and_then(Value::as_str).unwrap_or_default();
    if mcp.has_server(server).await {
        return None;
    }
    let named = [server, name].into_iter().find(|n| not_mcp.iter().any(|f| f == n))?;
    Some(format!(
        "'{named}' is not an MCP tool: call_tool in a program reaches only the tools of the configured MCP \
         servers, never client functions or sandbox tools"
    ))
}

#[async_trait::async_trait]
impl HostedTools for WorkflowTool {
    fn specs(&self) -> Vec<ToolSpec> {
        let parameters = json!({
            "type": "object",
            "properties": {"code": {"type": "string", "description": "The body of an async JavaScript function."}},
            "required": ["code"],
            "additionalProperties": false
        });
        vec![ToolSpec::new(NAME, DESCRIPTION, parameters)]
    }

    fn handles(&self, name: &str) -> bool {
        name == NAME
    }

    async fn call(
        &self,
        _name: &str,
        call_id: &str,
        arguments: Value,
        rec: &mut Recorder,
        cancel: &CancellationToken,
    ) -> HostedOutput {
        let Some(code) = arguments.get("code").and_then(Value::as_str) else {
            return HostedOutput::text(
                "error: dynamic_workflow takes {\"code\": string}: the body of an async function",
            );
        };
        let turn_id = rec.turn.id;
        let fingerprint = format!("{:x}", Sha256::digest(code.as_bytes()));
        let program = Item::Program {
            id: new_item_id(),
            turn_id,
            call_id: call_id.to_string(),
            code: code.to_string(),
            fingerprint,
        };
        let index = match rec.add_item(program.clone()).await {
            Ok(index) => index,
            Err(e) => return HostedOutput::text(format!("error: {e}")),
        };
        self.mcp.touch().await;
        let host = Arc::new(McpHost { mcp: Arc::clone(&self.mcp), not_mcp: Arc::clone(&self.not_mcp) });
        let outcome = workflow::run(code, host.clone(), self.limits, cancel).await;
        let status = match outcome.status {
            Status::Completed => ItemStatus::Completed,
            Status::Incomplete => ItemStatus::Incomplete,
        };
        let text = outcome.text();
        tracing::debug!(
            calls = outcome.nested_calls,
            micros = outcome.elapsed.as_micros() as u64,
            completed = status == ItemStatus::Completed,
            "dynamic_workflow done"
        );
        let _ = rec.done_item(program, index, Vec::new()).await;
        let output = Item::ProgramOutput {
            id: new_item_id(),
            turn_id,
            call_id: call_id.to_string(),
            result: text.clone(),
            status,
        };
        let _ = rec.add_done_item(output).await;
        rec.tool_finished(ToolKind::Program, status);
        HostedOutput::text(text)
    }
}
