//! A turn waiting for its caller: client function calls announced as
//! `function_call` required actions, MCP calls that need a person's approval
//! as `mcp_approval_request`s; each answer (a result, a decision) recorded as
//! it arrives. A waiting turn is durable: its required actions are stored on
//! the session, so a restarted server rebuilds what the turn waits for
//! ([`pending_from`]) and waits again.

use crate::error::Result;
use crate::history::output_text;
use crate::tools::{ApprovalAsk, HostedOutput};
use crate::turn::{Ending, ToolResult, TurnRun};
use models::{Message, ToolCall};
use protocol::approval::{Decision, required_action};
use protocol::item::{Item, ItemStatus, new_item_id};
use protocol::session::SessionStatus;
use protocol::turn::TurnStatus;
use serde_json::{Value, json};
use telemetry::ToolKind;

/// What the caller sends a waiting turn.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Answer {
    /// A client function's result.
    Result(ToolResult),
    /// A decision on an MCP call waiting for approval.
    Approval { request_id: String, decision: Decision },
}

impl Answer {
    /// What it answers: a call id or an approval request id, with its kind.
    pub fn key(&self) -> String {
        match self {
            Answer::Result(r) => format!("call:{}", r.call_id),
            Answer::Approval { request_id, .. } => format!("approval:{request_id}"),
        }
    }
}

/// One thing a turn waits for.
pub enum Pending {
    /// A client function call, its item (in progress) at its output index.
    Function { call_id: String, item: Item, index: i64, action: Value },
    /// An MCP call (`call_tool`) waiting for approval.
    Approval { call: ToolCall, request_id: String, action: Value },
}

impl Pending {
    /// What answers it ([`Answer::key`]).
    fn key(&self) -> String {
        match self {
            Pending::Function { call_id, .. } => format!("call:{call_id}"),
            Pending::Approval { request_id, .. } => format!("approval:{request_id}"),
        }
    }

    fn action(&self) -> &Value {
        match self {
            Pending::Function { action, .. } | Pending::Approval { action, .. } => action,
        }
    }
}

/// The approval request id of a model's call.
fn request_id(call_id: &str) -> String {
    format!("mcpr_{call_id}")
}

/// The answer keys of a session's stored required actions.
pub(crate) fn keys_of(actions: &[Value]) -> std::collections::HashSet<String> {
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
    actions
        .iter()
        .filter_map(|a| match a.get("type").and_then(Value::as_str) {
            Some("function_call") => Some(format!("call:{}", text(a, "call_id"))),
            Some("mcp_approval_request") => Some(format!("approval:{}", text(a, "request_id"))),
            _ => None,
        })
        .collect()
}

/// What a waiting turn waits for, from the session's stored required actions
/// and the turn's output items (with their output indexes).
pub(crate) fn pending_from(actions: &[Value], outputs: &[(i64, Item)]) -> Vec<Pending> {
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
    actions
        .iter()
        .filter_map(|action| match action.get("type").and_then(Value::as_str) {
            Some("function_call") => {
                let call_id = text(action, "call_id");
                let (index, item) = outputs
                    .iter()
                    .find(|(_, i)| matches!(i, Item::FunctionCall { call_id: c, .. } if *c == call_id))?;
                Some(Pending::Function { call_id, item: item.clone(), index: *index, action: action.clone() })
            }
            Some("mcp_approval_request") => {
                let request = action.get("request").cloned().unwrap_or(Value::Null);
                let arguments = json!({"server": text(&request, "server_label"), "name": text(&request, "name"),
                                       "arguments": request.get("arguments").cloned().unwrap_or(Value::Null)});
                let call = ToolCall::new(text(action, "call_id"), "call_tool", arguments.to_string());
                Some(Pending::Approval { call, request_id: text(action, "request_id"), action: action.clone() })
            }
            _ => None,
        })
        .collect()
}

impl TurnRun {
    /// Records a client function call the turn will wait for.
    pub(crate) async fn function_pending(&mut self, call: &ToolCall, arguments: Value) -> Result<Pending> {
        let turn_id = self.rec.turn.id;
        let item = self.function_call_item(call, arguments.clone(), ItemStatus::InProgress);
        let index = self.rec.add_item(item.clone()).await?;
        let action = json!({"type": "function_call", "call_id": call.id, "name": call.name,
                            "arguments": arguments, "turn_id": turn_id});
        Ok(Pending::Function { call_id: call.id.clone(), item, index, action })
    }

    /// An MCP call that waits for approval before it runs.
    pub(crate) fn approval_pending(&self, call: ToolCall, ask: &ApprovalAsk) -> Pending {
        let request_id = request_id(&call.id);
        let turn_id = self.rec.turn.id.to_string();
        let action = required_action(&request_id, &turn_id, &call.id, &ask.server, &ask.tool, &ask.arguments);
        Pending::Approval { call, request_id, action }
    }

    /// Announces what the turn waits for, then records every answer as it
    /// arrives (running approved calls); the answers for the model go to `answers`.
    pub(crate) async fn wait_for_client(
        &mut self,
        mut pending: Vec<Pending>,
        answers: &mut Vec<Message>,
    ) -> Result<Option<Ending>> {
        (self.register)(pending.iter().map(Pending::key).collect());
        while !pending.is_empty() {
            let actions = pending.iter().map(|p| p.action().clone()).collect();
            self.rec.set_status(TurnStatus::Waiting, SessionStatus::RequiresAction, actions).await?;
            let answer = tokio::select! {
                biased;
                _ = self.cancel.cancelled() => return Ok(Some(Ending::Cancelled)),
                a = self.results.recv() => a,
            };
            let Some(answer) = answer else { return Ok(Some(Ending::Cancelled)) };
            let Some(pos) = pending.iter().position(|p| p.key() == answer.key()) else { continue };
            match (pending.remove(pos), answer) {
                (Pending::Function { call_id, item, index, .. }, Answer::Result(result)) => {
                    self.record_result(call_id, item, index, result, answers).await?;
                }
                (Pending::Approval { call, .. }, Answer::Approval { decision, .. }) => {
                    if let Some(ending) = self.decided(call, decision, answers).await? {
                        return Ok(Some(ending));
                    }
                }
                // Keys carry their kind: a key that matched has the same kind.
                (kept, _) => pending.insert(pos, kept),
            }
        }
        self.rec.set_status(TurnStatus::InProgress, SessionStatus::InProgress, Vec::new()).await?;
        Ok(None)
    }

    async fn record_result(
        &mut self,
        call_id: String,
        item: Item,
        index: i64,
        result: ToolResult,
        answers: &mut Vec<Message>,
    ) -> Result<()> {
        let turn_id = self.rec.turn.id;
        let status = if result.success { ItemStatus::Completed } else { ItemStatus::Failed };
        self.rec.tool_finished(ToolKind::Function, status);
        if let Item::FunctionCall { id, call_id, name, arguments, turn_id, .. } = item {
            let done = Item::FunctionCall { id, call_id, name, arguments, turn_id, status };
            self.rec.done_item(done, index, Vec::new()).await?;
        }
        let error = if result.success { None } else { Some(result.error.unwrap_or_else(|| "the tool failed".into())) };
        answers.push(Message::tool_result(&call_id, output_text(&result.output, &error)));
        let output =
            Item::FunctionCallOutput { id: new_item_id(), turn_id, call_id, output: result.output, error, status };
        self.rec.add_session_item(output);
        Ok(())
    }

    /// Runs an approved call, or records one that was denied or dismissed.
    async fn decided(
        &mut self,
        call: ToolCall,
        decision: Decision,
        answers: &mut Vec<Message>,
    ) -> Result<Option<Ending>> {
        let arguments = call.parse_arguments().unwrap_or(Value::Null);
        if decision == Decision::Approve {
            let answer = match self.tools.hosted_for(&call.name) {
                Some(hosted) => hosted.call(&call.name, &call.id, arguments, &mut self.rec, &self.cancel).await,
                None => HostedOutput::text("error: the MCP servers of this session are not connected"),
            };
            if let Some(fatal) = answer.fatal {
                return Ok(Some(Ending::Failed(fatal)));
            }
            answers.push(Message::tool_result(&call.id, answer.text));
            return Ok(self.cancel.is_cancelled().then_some(Ending::Cancelled));
        }
        let reason = match decision {
            Decision::Deny => "the user denied this call: it did not run",
            _ => "the approval request was dismissed: the call did not run",
        };
        let (server, name, args) = crate::mcp_tools::call_parts(&arguments);
        let item = Item::McpCall {
            id: new_item_id(),
            turn_id: self.rec.turn.id,
            call_id: call.id.clone(),
            server_label: server,
            name,
            arguments: args,
            output: Value::Null,
            error: Value::String(reason.to_string()),
            status: ItemStatus::Failed,
        };
        self.rec.add_done_item(item).await?;
        self.rec.tool_finished(ToolKind::Mcp, ItemStatus::Failed);
        answers.push(Message::tool_result(&call.id, format!("error: {reason}")));
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::ids::TurnId;

    #[test]
    fn stored_actions_give_back_what_a_turn_waits_for() {
        let turn_id = TurnId::new();
        let call = Item::FunctionCall {
            id: "fc".into(),
            turn_id,
            call_id: "c_fn".into(),
            name: "now".into(),
            arguments: json!({}),
            status: ItemStatus::InProgress,
        };
        let function = json!({"type": "function_call", "call_id": "c_fn", "name": "now", "arguments": {},
                              "turn_id": turn_id});
        let approval =
            required_action("mcpr_c_mcp", &turn_id.to_string(), "c_mcp", "files", "rm", &json!({"path": "/x"}));
        let actions = vec![function, approval, json!({"type": "environment_connection"})];
        let pending = pending_from(&actions, &[(3, call)]);
        assert_eq!(pending.iter().map(Pending::key).collect::<Vec<_>>(), ["call:c_fn", "approval:mcpr_c_mcp"]);
        assert!(matches!(&pending[0], Pending::Function { index: 3, .. }));
        let Pending::Approval { call, .. } = &pending[1] else { panic!("an approval") };
        assert_eq!((call.id.as_str(), call.name.as_str()), ("c_mcp", "call_tool"));
        assert_eq!(
            call.parse_arguments().unwrap(),
            json!({"server": "files", "name": "rm", "arguments": {"path": "/x"}})
        );
        let keys = keys_of(&actions);
        assert_eq!(keys.len(), 2);
        assert!(keys.contains("call:c_fn") && keys.contains("approval:mcpr_c_mcp"));
    }

    #[test]
    fn a_function_call_whose_item_is_gone_is_not_waited_for() {
        let actions = vec![json!({"type": "function_call", "call_id": "c_gone"})];
        assert!(pending_from(&actions, &[]).is_empty());
    }
}
