//! MCP results turned into what the history records: [`CallOutput`] (a `tools/call` answer as
//! text: images and other non-text blocks are serialized as JSON text, since the model history
//! takes text) and [`McpCall`], the record of one `call_tool` for an `mcp_call` item.

use crate::error::McpError;
use rmcp::model::{CallToolResult, ContentBlock};
use serde::Serialize;
use serde_json::Value;

/// A `tools/call` answer as text.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallOutput {
    /// Text blocks as they are; every other block (image, audio, resource, link) as its JSON.
    pub text: String,
    /// The server's `isError`: the tool ran and reported a failure.
    pub is_error: bool,
    /// The tool's `structuredContent`, when it sent one (Dynamic Workflow programs receive it).
    #[serde(skip)]
    pub structured: Option<Value>,
}

impl CallOutput {
    pub(crate) fn from_result(result: &CallToolResult) -> Self {
        let mut parts: Vec<String> = Vec::with_capacity(result.content.len());
        for block in &result.content {
            match block {
                ContentBlock::Text(text) => parts.push(text.text.clone()),
                other => parts.push(serde_json::to_string(other).unwrap_or_default()),
            }
        }
        if parts.is_empty()
            && let Some(structured) = &result.structured_content
        {
            parts.push(structured.to_string());
        }
        CallOutput {
            text: parts.join("\n"),
            is_error: result.is_error.unwrap_or(false),
            structured: result.structured_content.clone(),
        }
    }
}

/// Status of an `mcp_call` item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum McpCallStatus {
    Completed,
    Failed,
    /// Cancelled before an answer came.
    Incomplete,
}

/// Everything an `mcp_call` item records about one `call_tool`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct McpCall {
    pub server_label: String,
    pub name: String,
    /// The arguments as JSON text, as the model gave them.
    pub arguments: String,
    pub output: Option<String>,
    /// What went wrong, in words meant for the model; also the tool result it sees.
    pub error: Option<String>,
    pub status: McpCallStatus,
    /// The failure as a value, for the engine (not part of the item).
    #[serde(skip)]
    pub failure: Option<McpError>,
    /// The tool's `structuredContent` of a completed call (not part of the item).
    #[serde(skip)]
    pub structured: Option<Value>,
}

impl McpCall {
    pub(crate) fn new(server_label: &str, name: &str, arguments: &Value) -> Self {
        McpCall {
            server_label: server_label.to_owned(),
            name: name.to_owned(),
            arguments: arguments.to_string(),
            output: None,
            error: None,
            status: McpCallStatus::Completed,
            failure: None,
            structured: None,
        }
    }

    pub(crate) fn completed(mut self, output: CallOutput) -> Self {
        if output.is_error {
            self.status = McpCallStatus::Failed;
            self.error = Some(output.text);
        } else {
            self.output = Some(output.text);
            self.structured = output.structured;
        }
        self
    }

    pub(crate) fn failed(mut self, error: McpError) -> Self {
        self.status =
            if matches!(error, McpError::Cancelled { .. }) { McpCallStatus::Incomplete } else { McpCallStatus::Failed };
        self.error = Some(error.to_string());
        self.failure = Some(error);
        self
    }

    /// A call refused before it reached the server, with the reason the model is told.
    pub fn refused(server_label: &str, name: &str, reason: String) -> Self {
        let mut call = Self::new(server_label, name, &Value::Null);
        call.status = McpCallStatus::Failed;
        call.error = Some(reason);
        call
    }

    /// What the model sees as the tool result: the output, or the error.
    pub fn model_text(&self) -> &str {
        self.output.as_deref().or(self.error.as_deref()).unwrap_or("")
    }
}
