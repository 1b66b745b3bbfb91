//! `/v1/responses`: the Responses view over sessions and turns. A response
//! is one turn (`resp_<uuid>` = turn `<uuid>`) of a conversation (`conv_<uuid>`
//! = session `<uuid>`); without a conversation, a new one is created.

use crate::auth::Auth;
use crate::error::{ApiError, ApiResult};
use crate::extract::{Json, ListQuery};
use crate::state::AppState;
use app::responses::input::response_input;
use app::responses::{ConversationRequest, Started, settle};
use axum::extract::{Path, RawQuery, State};
use axum::response::{IntoResponse, Response};
use protocol::admin::Scope;
use protocol::agent::{AgentConfig, Reasoning, ServiceTier};
use protocol::response::{self as view, ResponseContext};
use protocol::session::SessionRecord;
use protocol::tool::ToolParam;
use protocol::turn::Turn;
use protocol::turn_settings::{NewTurn, ResponseText, TurnSettings};
use serde::Deserialize;
use serde_json::{Value, json};

mod stream;

/// `POST /v1/responses`. Parameters this server has no use for are accepted
/// and ignored (caching, storage and tool-choice hints); unknown ones are refused.
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
    #[serde(default)]
    pub text: Option<ResponseText>,
    #[serde(default)]
    pub temperature: Option<f64>,
    #[serde(default)]
    pub top_p: Option<f64>,
    #[serde(default)]
    pub max_output_tokens: Option<u32>,
    #[serde(default)]
    pub reasoning: Option<Reasoning>,
    #[serde(default)]
    pub service_tier: Option<ServiceTier>,
    #[serde(default)]
    pub include: Option<Vec<String>>,
    #[serde(flatten)]
    pub ignored: Ignored,
}

impl ResponseCreate {
    /// The settings this request sets for its response alone.
    fn settings(&self) -> TurnSettings {
        TurnSettings {
            text: self.text.clone(),
            temperature: self.temperature,
            top_p: self.top_p,
            max_output_tokens: self.max_output_tokens,
            reasoning: self.reasoning.clone(),
            service_tier: self.service_tier,
        }
    }
}

/// Accepted, without effect (read only by serde).
#[allow(dead_code)]
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Ignored {
    #[serde(default)]
    parallel_tool_calls: Option<Value>,
    #[serde(default)]
    store: Option<Value>,
    #[serde(default)]
    user: Option<Value>,
    #[serde(default)]
    max_tool_calls: Option<Value>,
    #[serde(default)]
    tool_choice: Option<Value>,
    #[serde(default)]
    truncation: Option<Value>,
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

/// The response object of a turn, as stored now.
pub async fn render(
    state: &AppState,
    auth: &Auth,
    session: &SessionRecord,
    turn: &Turn,
    background: bool,
) -> ApiResult<Value> {
    let items = state.app.responses(&auth.org_id).items(session, turn).await?;
    // A waiting response shows what it waits for as the session has it now.
    let waiting = match turn.status {
        protocol::turn::TurnStatus::Waiting => Some(state.app.sessions(&auth.org_id).get(session.id).await?),
        _ => None,
    };
    let ctx = ResponseContext {
        model: &session.agent.config.model,
        instructions: session.agent.config.instructions.as_deref(),
        tools: function_tools(&session.agent.config),
        background,
        metadata: json!(session.metadata),
        required_actions: waiting.as_ref().map_or(&session.required_actions, |s| &s.required_actions),
    };
    Ok(view::response(turn, &items, &ctx))
}

pub async fn create(
    State(state): State<AppState>,
    auth: Auth,
    Json(mut req): Json<ResponseCreate>,
) -> ApiResult<Response> {
    auth.require(Scope::TasksWrite)?;
    let input = response_input(req.input.take())?;
    let background = req.background == Some(true);
    let new = NewTurn { background, settings: Some(req.settings()) };
    let responses = state.app.responses(&auth.org_id);
    responses.include(req.include.as_deref().unwrap_or_default())?;
    responses.check(&new)?;
    let session = responses
        .conversation(ConversationRequest {
            conversation: req.conversation,
            model: req.model,
            instructions: req.instructions,
            tools: req.tools,
            metadata: req.metadata,
            previous_response_id: req.previous_response_id,
        })
        .await?;
    let Started { turn_id, mut events } = responses.start(&session, input, new).await?;
    if req.stream == Some(true) {
        let from = stream::From::Live(events);
        return Ok(stream::respond(state, auth, session, turn_id, from, background).await?.into_response());
    }
    if !background {
        settle(&mut events, turn_id).await;
    }
    let (_, turn) =
        responses.get(turn_id).await?.ok_or_else(|| ApiError::not_found("response", &turn_id.response()))?;
    Ok(axum::Json(render(&state, &auth, &session, &turn, background).await?).into_response())
}

/// `GET /v1/responses/{id}`: the response as stored, or with `stream=true`
/// its events replayed (after `starting_after`) and followed while it runs.
pub async fn retrieve(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    auth.require(Scope::TasksRead)?;
    let q =
        ListQuery::parse(q.as_deref(), &["stream", "starting_after", "include", "include[", "include_obfuscation"])?;
    let mut stream = false;
    let mut starting_after = None;
    for (key, value) in &q.rest {
        match key.as_str() {
            "stream" => stream = flag(key, value)?,
            "include_obfuscation" => _ = flag(key, value)?,
            "starting_after" => {
                starting_after = Some(value.parse::<u64>().map_err(|_| {
                    ApiError::invalid(key, format!("starting_after must be an event's sequence number, got '{value}'"))
                })?)
            }
            _ => {}
        }
    }
    let responses = state.app.responses(&auth.org_id);
    responses.include(&q.values("include"))?;
    let (session, turn) = responses.find(&id).await?;
    if stream {
        let from = stream::From::Replay { starting_after, created_at: turn.created_at };
        return Ok(stream::respond(state, auth, session, turn.id, from, turn.background).await?.into_response());
    }
    Ok(axum::Json(render(&state, &auth, &session, &turn, turn.background).await?).into_response())
}

/// A boolean query parameter.
fn flag(param: &str, value: &str) -> ApiResult<bool> {
    match value {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(ApiError::invalid(param, format!("{param} must be true or false, got '{value}'"))),
    }
}

/// `POST /v1/responses/input_tokens`: counting needs a provider that counts
/// without answering, which none of this server's providers is asked to do.
pub async fn input_tokens(auth: Auth) -> ApiResult<Response> {
    auth.require(Scope::TasksRead)?;
    Err(ApiError::unsupported(
        "input",
        "counting input tokens (responses.input_tokens.count) is not supported by this server: its model providers \
         are not asked to count without answering",
    ))
}

pub async fn delete(State(state): State<AppState>, auth: Auth, Path(id): Path<String>) -> ApiResult<axum::Json<Value>> {
    auth.require(Scope::TasksWrite)?;
    state.app.responses(&auth.org_id).delete(&id).await?;
    Ok(axum::Json(serde_json::json!({"id": id, "object": "response", "deleted": true})))
}

pub async fn cancel(State(state): State<AppState>, auth: Auth, Path(id): Path<String>) -> ApiResult<axum::Json<Value>> {
    auth.require(Scope::TasksWrite)?;
    let (session, turn) = state.app.responses(&auth.org_id).cancel(&id).await?;
    Ok(axum::Json(render(&state, &auth, &session, &turn, false).await?))
}

pub async fn input_items(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<String>,
    RawQuery(q): RawQuery,
) -> ApiResult<axum::Json<Value>> {
    auth.require(Scope::TasksRead)?;
    let q = ListQuery::parse(q.as_deref(), &["include", "include["])?;
    state.app.responses(&auth.org_id).include(&q.values("include"))?;
    let (session, turn) = state.app.responses(&auth.org_id).find(&id).await?;
    let page = state.app.turns(&auth.org_id).items(session.id, Some(turn.id), &q.page).await?;
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
