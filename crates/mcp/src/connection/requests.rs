//! The requests a [`Connection`] makes: `tools/list` (every page), `tools/call`,
//! `resources/list`, `resources/templates/list` and `resources/read`. They go through
//! [`Connection::request`], which owns the timeout, the cancellation and `_meta`.
//!
//! Requests are sent with rmcp's typed `ClientRequest`s rather than its `Peer::list_tools`
//! helpers because those read and fill rmcp's own response cache (and serve stale entries on
//! error), and a `tools/call` must always see a fresh catalog.

use super::{CallContext, Connection, errors};
use crate::catalog::ToolInfo;
use crate::error::{McpError, Result, Step};
use crate::output::CallOutput;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotification, CancelledNotificationParam, ClientRequest,
    ListResourceTemplatesRequest, ListResourcesRequest, ListToolsRequest, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequest, ReadResourceRequestParams, RequestId, RequestMetaObject, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient};
use serde_json::{Map, Value};
use std::time::Duration;
use tokio::time::Instant;

/// Most pages one listing may have: a server that keeps handing out cursors is broken.
const MAX_PAGES: usize = 1000;

/// Sends `notifications/cancelled` for a request unless disarmed: when the caller stops
/// waiting (cancelled, timed out) or the waiting future is dropped (the caller's task was
/// aborted). The notification is sent from a task of its own: the caller never waits for it,
/// since a server that is stuck (its event loop blocked, an HTTP proxy slow) may take it only
/// when its tool is done.
struct CancelOnDrop {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
    reason: &'static str,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let peer = self.peer.clone();
        let notification =
            CancelledNotification::new(CancelledNotificationParam::new(Some(id), Some(self.reason.to_owned())));
        runtime.spawn(async move {
            let _ = peer.send_notification(notification.into()).await;
        });
    }
}

impl Connection {
    fn error(&self, step: Step, make: impl FnOnce(String, Step) -> McpError) -> McpError {
        make(self.label.to_string(), step)
    }

    /// Sends one request and waits for its answer until `deadline`, or until `ctx.cancel`.
    async fn request(
        &self,
        step: Step,
        request: ClientRequest,
        ctx: &CallContext,
        deadline: Instant,
        limit: Duration,
    ) -> Result<ServerResult> {
        if ctx.cancel.is_cancelled() {
            return Err(self.error(step, |server, step| McpError::Cancelled { server, step }));
        }
        let mut options = PeerRequestOptions::no_options();
        if let Some(meta) = &ctx.meta {
            options = options.with_meta(RequestMetaObject::from(meta.clone()));
        }
        let handle = self
            .peer
            .send_cancellable_request(request, options)
            .await
            .map_err(|e| errors::from_service(&self.label, step, e))?;
        let mut guard =
            CancelOnDrop { peer: self.peer.clone(), id: Some(handle.id.clone()), reason: "abandoned by the caller" };
        let rx = handle.rx;
        tokio::select! {
            biased;
            answer = rx => {
                guard.id = None;
                match answer {
                    Ok(Ok(result)) => Ok(result),
                    Ok(Err(error)) => Err(errors::from_service(&self.label, step, error)),
                    Err(_) => Err(self.error(step, |server, step| McpError::Closed { server, step })),
                }
            }
            _ = ctx.cancel.cancelled() => {
                guard.reason = "cancelled by the caller";
                Err(self.error(step, |server, step| McpError::Cancelled { server, step }))
            }
            _ = tokio::time::sleep_until(deadline) => {
                guard.reason = "request timed out";
                Err(self.error(step, |server, step| McpError::Timeout { server, step, after: limit }))
            }
        }
    }

    /// The limit of one `tools/call` or `resources/read`: the caller's, or the connection's.
    fn call_limit(&self, ctx: &CallContext) -> Duration {
        ctx.call_timeout.unwrap_or(self.timeouts.call)
    }

    fn unexpected(&self, step: Step, result: ServerResult, expected: fn(Value) -> Option<String>) -> McpError {
        let message = match result {
            ServerResult::CustomResult(custom) => {
                expected(custom.0).unwrap_or_else(|| "the answer has an unexpected shape".to_owned())
            }
            _ => "the answer is a result of another kind".to_owned(),
        };
        self.error(step, |server, step| McpError::Protocol { server, step, message })
    }

    /// Every page of `tools/list`, following `nextCursor`, within one `list` timeout.
    pub async fn list_tools(&self, ctx: &CallContext) -> Result<Vec<ToolInfo>> {
        let step = Step::ToolsList;
        let limit = self.timeouts.list;
        let deadline = Instant::now() + limit;
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let params = PaginatedRequestParams::default().with_cursor(cursor.clone());
            let request = ClientRequest::ListToolsRequest(ListToolsRequest::with_param(params));
            let page = match self.request(step, request, ctx, deadline, limit).await? {
                ServerResult::ListToolsResult(page) => page,
                other => return Err(self.unexpected(step, other, schema_error::<ListToolsResult>)),
            };
            tools.extend(page.tools.into_iter().map(ToolInfo::from));
            match page.next_cursor {
                Some(next) if Some(&next) == cursor.as_ref() => {
                    let message = format!("nextCursor {next:?} repeats the cursor it answered");
                    return Err(self.error(step, |server, step| McpError::Protocol { server, step, message }));
                }
                Some(next) => cursor = Some(next),
                None => return Ok(tools),
            }
        }
        let message = format!("more than {MAX_PAGES} pages");
        Err(self.error(step, |server, step| McpError::Protocol { server, step, message }))
    }

    /// One `tools/call`, within `ctx.call_timeout` (or [`super::Timeouts::call`]). Neither the catalog nor the arguments are checked here: see
    /// [`crate::Toolset::call_tool`] for the checked path the model uses.
    pub async fn call_tool(&self, name: &str, arguments: Map<String, Value>, ctx: &CallContext) -> Result<CallOutput> {
        let step = Step::ToolsCall;
        let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let limit = self.call_limit(ctx);
        match self.request(step, request, ctx, Instant::now() + limit, limit).await? {
            ServerResult::CallToolResult(result) => Ok(CallOutput::from_result(&result)),
            other => Err(self.unexpected(step, other, schema_error::<rmcp::model::CallToolResult>)),
        }
    }

    /// One page of `resources/list`, as the server sent it (`resources`, `nextCursor`).
    pub async fn list_resources(&self, cursor: Option<String>, ctx: &CallContext) -> Result<Value> {
        let step = Step::ResourcesList;
        let params = PaginatedRequestParams::default().with_cursor(cursor);
        let request = ClientRequest::ListResourcesRequest(ListResourcesRequest::with_param(params));
        let deadline = Instant::now() + self.timeouts.list;
        match self.request(step, request, ctx, deadline, self.timeouts.list).await? {
            ServerResult::ListResourcesResult(result) => Ok(to_json(&result)),
            other => Err(self.unexpected(step, other, schema_error::<rmcp::model::ListResourcesResult>)),
        }
    }

    /// One page of `resources/templates/list` (`resourceTemplates`, `nextCursor`).
    pub async fn list_resource_templates(&self, cursor: Option<String>, ctx: &CallContext) -> Result<Value> {
        let step = Step::ResourceTemplatesList;
        let params = PaginatedRequestParams::default().with_cursor(cursor);
        let request = ClientRequest::ListResourceTemplatesRequest(ListResourceTemplatesRequest::with_param(params));
        let deadline = Instant::now() + self.timeouts.list;
        match self.request(step, request, ctx, deadline, self.timeouts.list).await? {
            // `resources/list` and `resources/templates/list` answers can have the same shape;
            // serde's untagged union may pick either.
            ServerResult::ListResourceTemplatesResult(result) => Ok(to_json(&result)),
            ServerResult::ListResourcesResult(result) => Ok(to_json(&result)),
            other => Err(self.unexpected(step, other, schema_error::<rmcp::model::ListResourceTemplatesResult>)),
        }
    }

    /// `resources/read` of one URI (`contents`).
    pub async fn read_resource(&self, uri: &str, ctx: &CallContext) -> Result<Value> {
        let step = Step::ResourcesRead;
        let request = ClientRequest::ReadResourceRequest(ReadResourceRequest::new(ReadResourceRequestParams::new(uri)));
        let limit = self.call_limit(ctx);
        match self.request(step, request, ctx, Instant::now() + limit, limit).await? {
            ServerResult::ReadResourceResult(result) => Ok(to_json(&result)),
            other => Err(self.unexpected(step, other, schema_error::<rmcp::model::ReadResourceResult>)),
        }
    }
}

fn to_json(value: &impl serde::Serialize) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// Why `value` is not a `T`, in serde's words.
fn schema_error<T: serde::de::DeserializeOwned>(value: Value) -> Option<String> {
    serde_json::from_value::<T>(value).err().map(|e| e.to_string())
}
