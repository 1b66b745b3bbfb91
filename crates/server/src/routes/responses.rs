//! `/v1/responses`: the Responses view over sessions and turns. A response
//! is one turn (`resp_<uuid>` = turn `<uuid>`) of a conversation (`conv_<uuid>`
//! = session `<uuid>`); without a conversation, a new one is created.

use crate::auth::Auth;
use crate::error::{ApiError, ApiResult};
use crate::extract::{Json, ListQuery};
use crate::state::AppState;
use app::sessions::{NewSession, check_agent};
use axum::extract::{Path, RawQuery, State};
use axum::response::{IntoResponse, Response};
use engine::turn::ToolResult;
use protocol::admin::Scope;
use protocol::agent::AgentConfig;
use protocol::event::{Event, EventBody};
use protocol::item::Content;
use protocol::response::{self as view, ResponseContext};
use protocol::session::{INLINE_AGENT_ID, SessionRecord};
use protocol::tool::{FunctionTool, ToolParam};
use protocol::turn::Turn;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::sync::broadcast;
use uuid::Uuid;

mod stream;

/// `POST /v1/responses`. Parameters this server has no use for are accepted
/// and ignored (sampling, caching and storage hints); unknown ones are refused.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResponseCreate {
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub conversation: Option<Value>,
    #[serde(default)]
    pub input: Option<Value>,
    #[serde(default)]
    pub instructions: Option<String>,
    #[serde(default)]
    pub tools: Option<Vec<Value>>,
    #[serde(default)]
    pub stream: Option<bool>,
    #[serde(default)]
    pub background: Option<bool>,
    #[serde(default)]
    pub metadata: Option<protocol::Metadata>,
    #[serde(default)]
    pub previous_response_id: Option<String>,
    #[serde(flatten)]
    pub ignored: Ignored,
}

/// Accepted, without effect (read only by serde).
#[allow(dead_code)]
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Ignored {
    #[serde(default)]
    temperature: Option<Value>,
    #[serde(default)]
    top_p: Option<Value>,
    #[serde(default)]
    parallel_tool_calls: Option<Value>,
    #[serde(default)]
    store: Option<Value>,
    #[serde(default)]
    include: Option<Value>,
    #[serde(default)]
    user: Option<Value>,
    #[serde(default)]
    max_output_tokens: Option<Value>,
    #[serde(default)]
    max_tool_calls: Option<Value>,
    #[serde(default)]
    reasoning: Option<Value>,
    #[serde(default)]
    text: Option<Value>,
    #[serde(default)]
    tool_choice: Option<Value>,
    #[serde(default)]
    truncation: Option<Value>,
    #[serde(default)]
    service_tier: Option<Value>,
    #[serde(default)]
    prompt_cache_key: Option<Value>,
    #[serde(default)]
    prompt_cache_retention: Option<Value>,
    #[serde(default)]
    safety_identifier: Option<Value>,
    #[serde(default)]
    stream_options: Option<Value>,
    #[serde(default)]
    top_logprobs: Option<Value>,
}

/// What the input asks for: new user messages, or results for waiting calls.
enum Planned {
    Messages(Vec<Vec<Content>>),
    Results(Vec<ToolResult>),
}

fn plan(input: Option<Value>) -> ApiResult<Planned> {
    let items = match input {
        None | Some(Value::Null) => return Err(ApiError::invalid("input", "input is required")),
        Some(Value::String(text)) if !text.is_empty() => {
            return Ok(Planned::Messages(vec![vec![Content::InputText { text }]]));
        }
        Some(Value::Array(items)) if !items.is_empty() => items,
        Some(_) => return Err(ApiError::invalid("input", "input must be a non-empty string or list of items")),
    };
    let mut messages = Vec::new();
    let mut results = Vec::new();
    for (i, item) in items.into_iter().enumerate() {
        let kind = item.get("type").and_then(Value::as_str).unwrap_or("message");
        match kind {
            "function_call_output" => {
                let call_id = item.get("call_id").and_then(Value::as_str).ok_or_else(|| {
                    ApiError::invalid(format!("input[{i}].call_id"), "a function_call_output needs call_id")
                })?;
                results.push(ToolResult {
                    call_id: call_id.to_string(),
                    success: true,
                    output: item.get("output").cloned(),
                    error: None,
                });
            }
            "message" => {
                let role = item.get("role").and_then(Value::as_str).unwrap_or("user");
                if !matches!(role, "user" | "system" | "developer") {
                    return Err(ApiError::invalid(
                        format!("input[{i}].role"),
                        format!("input messages cannot have role '{role}'"),
                    ));
                }
                let content: protocol::item::InputContent =
                    serde_json::from_value(item.get("content").cloned().unwrap_or(Value::Null))
                        .map_err(|e| ApiError::invalid(format!("input[{i}].content"), e.to_string()))?;
                messages.push(content.into_parts());
            }
            other => {
                return Err(ApiError::unsupported(
                    format!("input[{i}].type"),
                    format!("input items of type '{other}' are not supported"),
                ));
            }
        }
    }
    match (messages.is_empty(), results.is_empty()) {
        (false, true) => check_messages(messages),
        (true, false) => Ok(Planned::Results(results)),
        _ => Err(ApiError::invalid("input", "send either messages or function_call_output items, not both")),
    }
}

fn check_messages(messages: Vec<Vec<Content>>) -> ApiResult<Planned> {
    if messages.iter().any(Vec::is_empty) {
        return Err(ApiError::invalid("input", "every message needs content"));
    }
    Ok(Planned::Messages(messages))
}

/// Function tools in the Responses shape (`{"type":"function","name",…}`).
fn function_tools(config: &AgentConfig) -> Vec<Value> {
    config
        .tools
        .iter()
        .filter_map(|t| match t {
            ToolParam::Function(f) => Some(json!({"type": "function", "name": f.name, "description": f.description,
                                                  "parameters": f.parameters, "strict": false})),
            _ => None,
        })
        .collect()
}

fn parse_request_tools(tools: Option<Vec<Value>>) -> ApiResult<Option<Vec<ToolParam>>> {
    let Some(tools) = tools else { return Ok(None) };
    tools
        .into_iter()
        .enumerate()
        .map(|(i, mut t)| {
            if let Some(obj) = t.as_object_mut() {
                obj.remove("strict");
                obj.entry("description").or_insert(json!(""));
            }
            serde_json::from_value::<FunctionTool>(t.get("type").map_or(t.clone(), |_| {
                let mut t = t.clone();
                if let Some(o) = t.as_object_mut() {
                    o.remove("type");
                }
                t
            }))
            .map(ToolParam::Function)
            .map_err(|e| {
                ApiError::invalid(format!("tools[{i}]"), format!("only function tools are supported here: {e}"))
            })
        })
        .collect::<ApiResult<Vec<_>>>()
        .map(Some)
}

/// The conversation a request names, or a new one.
async fn conversation(state: &AppState, auth: &Auth, req: &mut ResponseCreate) -> ApiResult<SessionRecord> {
    let named = match req.conversation.take() {
        None | Some(Value::Null) => None,
        Some(Value::String(id)) => Some(id),
        Some(Value::Object(o)) => o.get("id").and_then(Value::as_str).map(str::to_string),
        Some(_) => return Err(ApiError::invalid("conversation", "conversation must be an id or {\"id\": …}")),
    };
    let tools = parse_request_tools(req.tools.take())?;
    let mut session = match named {
        Some(id) => {
            let uuid = crate::extract::conversation_id(&id).map_err(|_| {
                ApiError::invalid("conversation", format!("'{id}' is not a conversation id: expected conv_<uuid>"))
            })?;
            state.app.sessions(&auth.org_id).get(uuid).await.map_err(|_| ApiError::not_found("conversation", &id))?
        }
        None => {
            let new = NewSession::conversation(req.metadata.clone().unwrap_or_default(), Vec::new());
            state.app.sessions(&auth.org_id).create(new).await?.session
        }
    };
    // The conversation's agent wins; the request fills in what it lacks.
    let mut changed = false;
    let config = &mut session.agent.config;
    if config.model.is_empty() {
        config.model = req
            .model
            .clone()
            .ok_or_else(|| ApiError::invalid("model", "model is required: the conversation has none"))?;
        changed = true;
    }
    if config.instructions.is_none() && req.instructions.is_some() {
        config.instructions = req.instructions.clone();
        changed = true;
    }
    if let Some(tools) = tools.filter(|_| session.agent.id == INLINE_AGENT_ID) {
        session.agent.config.tools = tools;
        changed = true;
    }
    if changed {
        check_agent(&session.agent.config)?;
        state.app.sessions(&auth.org_id).put(&session).await?;
    }
    Ok(session)
}

/// The response object of a turn, as stored now.
pub async fn render(
    state: &AppState,
    auth: &Auth,
    session: &SessionRecord,
    turn: &Turn,
    background: bool,
) -> ApiResult<Value> {
    let items = state.app.turns(&auth.org_id).turn_items(session.id, &turn.id).await?;
    let ctx = ResponseContext {
        model: &session.agent.config.model,
        instructions: session.agent.config.instructions.as_deref(),
        tools: function_tools(&session.agent.config),
        background,
        metadata: json!(session.metadata),
    };
    Ok(view::response(turn, &items, &ctx))
}

/// Waits until the turn ends or waits for the caller.
pub async fn settle(rx: &mut broadcast::Receiver<Arc<Event>>, turn_id: &str) {
    loop {
        match rx.recv().await {
            Ok(e) if e.body.ends_turn() && e.body.turn_id() == Some(turn_id) => return,
            Ok(e)
                if matches!(&e.body, EventBody::SessionRequiresAction { session }
                if session.required_actions.iter().any(|a| a["turn_id"] == turn_id)) =>
            {
                return;
            }
            Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

pub async fn create(
    State(state): State<AppState>,
    auth: Auth,
    Json(mut req): Json<ResponseCreate>,
) -> ApiResult<Response> {
    auth.require(Scope::TasksWrite)?;
    if req.previous_response_id.is_some() {
        return Err(ApiError::unsupported(
            "previous_response_id",
            "pass the conversation instead of chaining response ids",
        ));
    }
    let planned = plan(req.input.take())?;
    let session = conversation(&state, &auth, &mut req).await?;
    let engine = &state.app.engine;
    let mut rx = engine.bus().subscribe(session.id);
    let turn_id = match planned {
        Planned::Messages(messages) => {
            let turn = state.app.turns(&auth.org_id).submit(&session, messages, req.background == Some(true)).await?;
            Uuid::parse_str(&turn.id).map_err(|e| ApiError::internal(e.to_string()))?
        }
        Planned::Results(results) => {
            let turn_id = engine.active_turn(session.id).ok_or_else(|| {
                ApiError::invalid("input", "the conversation has no response waiting for function_call_output")
            })?;
            for result in results {
                engine.submit_tool_result(session.id, &turn_id.to_string(), result)?;
            }
            turn_id
        }
    };
    let background = req.background == Some(true);
    if req.stream == Some(true) {
        return Ok(stream::respond(state, auth, session, turn_id, rx, background).await?.into_response());
    }
    if !background {
        settle(&mut rx, &turn_id.to_string()).await;
    }
    let (_, turn) = state
        .app
        .turns(&auth.org_id)
        .find(turn_id)
        .await?
        .ok_or_else(|| ApiError::not_found("response", &turn_id.to_string()))?;
    Ok(axum::Json(render(&state, &auth, &session, &turn, background).await?).into_response())
}

/// Loads the turn and session behind a `resp_` id.
async fn load(state: &AppState, auth: &Auth, id: &str) -> ApiResult<(SessionRecord, Turn)> {
    let uuid = view::parse_response_id(id).ok_or_else(|| {
        ApiError::invalid("response_id", format!("'{id}' is not a response id: expected resp_<uuid>"))
    })?;
    state.app.turns(&auth.org_id).find(uuid).await?.ok_or_else(|| ApiError::not_found("response", id))
}

pub async fn retrieve(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<Value>> {
    auth.require(Scope::TasksRead)?;
    let (session, turn) = load(&state, &auth, &id).await?;
    Ok(axum::Json(render(&state, &auth, &session, &turn, false).await?))
}

pub async fn cancel(State(state): State<AppState>, auth: Auth, Path(id): Path<String>) -> ApiResult<axum::Json<Value>> {
    auth.require(Scope::TasksWrite)?;
    let (session, turn) = load(&state, &auth, &id).await?;
    if !turn.status.is_terminal() {
        let mut rx = state.app.engine.bus().subscribe(session.id);
        let turn_uuid = Uuid::parse_str(&turn.id).map_err(|e| ApiError::internal(e.to_string()))?;
        if state.app.engine.cancel(&auth.org_id, session.id, Some(turn_uuid)).await.is_ok() {
            let wait = async {
                loop {
                    match rx.recv().await {
                        Ok(e) if e.body.ends_turn() && e.body.turn_id() == Some(&turn.id) => return,
                        Err(broadcast::error::RecvError::Closed) => return,
                        _ => {}
                    }
                }
            };
            let _ = tokio::time::timeout(std::time::Duration::from_secs(10), wait).await;
        }
    }
    let (session, turn) = load(&state, &auth, &id).await?;
    Ok(axum::Json(render(&state, &auth, &session, &turn, false).await?))
}

pub async fn input_items(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
    RawQuery(q): RawQuery,
) -> ApiResult<axum::Json<Value>> {
    auth.require(Scope::TasksRead)?;
    let q = ListQuery::parse(q.as_deref(), &["include"])?;
    let (session, turn) = load(&state, &auth, &id).await?;
    let page = state.app.turns(&auth.org_id).items(session.id, Some(&turn.id), &q.page).await?;
    let data: Vec<Value> = page
        .items
        .iter()
        .filter(|i| {
            matches!(
                i,
                protocol::item::Item::Message { role: protocol::item::Role::User, .. }
                    | protocol::item::Item::FunctionCallOutput { .. }
            )
        })
        .filter_map(view::conversation_item)
        .collect();
    Ok(axum::Json(list(data, page.has_more)))
}

/// A Responses-style list.
pub fn list(data: Vec<Value>, has_more: bool) -> Value {
    let first = data.first().and_then(|v| v.get("id").cloned());
    let last = data.last().and_then(|v| v.get("id").cloned());
    json!({"object": "list", "data": data, "first_id": first, "last_id": last, "has_more": has_more})
}
