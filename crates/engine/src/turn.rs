//! One turn: model steps and tool calls until the model answers without
//! calling a tool, the step limit is reached, the turn is cancelled, or
//! something fails. Every item and state change is stored as it happens.

use crate::error::Result;
use crate::history;
use crate::reasoning_item;
use crate::record::{Recorder, add_usage};
use crate::tools::{HostedOutput, ToolSet};
use crate::waiting::{Answer, Pending};
use futures::StreamExt;
use models::{Message, ModelEvent, ModelRequest, ResolvedModel, ToolCall};
use protocol::event::EventBody;
use protocol::item::{Content, Item, ItemStatus, Phase, Role, new_item_id};
use protocol::turn::TurnError;
use serde_json::Value;
use std::sync::Arc;
use std::task::Poll;
use std::time::Instant;
use telemetry::ToolKind;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// A client's answer to a function call.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct ToolResult {
    pub call_id: String,
    pub success: bool,
    pub output: Option<Value>,
    pub error: Option<String>,
}

/// How a turn ended.
pub enum Ending {
    Completed,
    Cancelled,
    Failed(TurnError),
}

/// Everything a running turn needs.
pub struct TurnRun {
    pub rec: Recorder,
    pub model: ResolvedModel,
    /// The model's metrics, found once for the turn's steps.
    pub series: Arc<telemetry::ModelSeries>,
    pub tools: ToolSet,
    pub messages: Vec<Message>,
    /// The history's wire encodings, reused by each step's request.
    pub encoded: models::EncodedHistory,
    pub cancel: CancellationToken,
    pub results: mpsc::UnboundedReceiver<Answer>,
    /// Registers the calls the turn now waits for (so that results naming
    /// them are accepted) before they are announced.
    pub register: Box<dyn Fn(Vec<String>) + Send + Sync>,
    /// What a turn revived after a restart still waits for (empty for a new turn).
    pub resume: Vec<Pending>,
    /// Told once the first model request is on its way: the submission
    /// waits for it to commit the turn (see `Engine::submit_here`).
    pub sent: Option<tokio::sync::oneshot::Sender<()>>,
}

impl TurnRun {
    /// The step's model request. It holds the turn's history, moved in (not
    /// copied: the history grows to hundreds of kilobytes); the caller hands
    /// it back with [`Self::keep_history`] once the request is sent.
    fn request(&mut self) -> ModelRequest {
        let c = &self.rec.session.agent.config;
        let mut req = self.model.request();
        req.instructions = match (c.instructions.clone(), self.tools.instructions()) {
            (Some(own), Some(added)) => Some(own + &added),
            (None, Some(added)) => Some(added.trim_start().to_string()),
            (own, None) => own,
        };
        req.messages = std::mem::take(&mut self.messages);
        req.encoded = self.encoded.clone();
        req.tools = self.tools.specs();
        req.tool_call_deltas = self.tools.wants_streaming();
        crate::output_format::apply(&mut req, c, self.rec.turn.settings.as_ref());
        req
    }

    /// Takes the history back from a request that was sent.
    fn keep_history(&mut self, request: ModelRequest) {
        self.messages = request.messages;
    }

    /// Runs the loop to its end, handing the recorder back for the ending.
    pub async fn run_with(mut self, out: &mut Option<Recorder>) -> Result<Ending> {
        let ending = self.run().await;
        *out = Some(self.rec);
        ending
    }

    /// Runs the loop to its end.
    async fn run(&mut self) -> Result<Ending> {
        let max_steps = self.rec.session.agent.config.max_steps();
        if let Some(ending) = self.resume_waiting().await? {
            return Ok(ending);
        }
        for _ in 0..max_steps {
            let (reasoning, text, calls) = match self.step().await? {
                Step::Answered { reasoning, text, calls } => (reasoning, text, calls),
                Step::Ended(ending) => return Ok(ending),
            };
            self.messages.extend(reasoning.into_iter().map(Message::Reasoning));
            if !text.is_empty() {
                self.messages.push(Message::assistant(text));
            }
            if calls.is_empty() {
                return Ok(Ending::Completed);
            }
            if let Some(ending) = self.run_calls(calls).await? {
                return Ok(ending);
            }
        }
        Ok(Ending::Failed(TurnError::new(
            "max_steps_exceeded",
            format!("the turn reached its limit of {max_steps} model steps without a final answer"),
        )))
    }

    /// One model call, streamed into a message item, counted in the model's metrics.
    async fn step(&mut self) -> Result<Step> {
        let began = Instant::now();
        let step = self.stream_step().await;
        self.series.step(began.elapsed());
        step
    }

    async fn stream_step(&mut self) -> Result<Step> {
        let request = self.request();
        if request.tool_call_deltas {
            self.tools.hosted.iter().for_each(|h| h.step_started());
        }
        let mut stream = self.model.stream(&request);
        self.keep_history(request);
        // The first poll hands the request to its connection; the yield lets
        // that connection's task write it before the submission's commit runs.
        let mut early = None;
        if let Some(sent) = self.sent.take() {
            if let Poll::Ready(ev) = futures::poll!(stream.next()) {
                early = Some(ev);
            }
            tokio::task::yield_now().await;
            let _ = sent.send(());
            // Committed by the submission's flush, or here if it no longer waits.
            self.rec.commit_soon();
        }
        let mut message: Option<(String, i64)> = None;
        let mut thinking = None;
        let mut reasoning = Vec::new();
        let mut text = String::new();
        let mut calls = Vec::new();
        let sid = self.rec.session.id;
        let tid = self.rec.turn.id;
        loop {
            let next = match early.take() {
                Some(ev) => Some(ev),
                None => tokio::select! {
                    biased;
                    _ = self.cancel.cancelled() => None,
                    ev = stream.next() => Some(ev),
                },
            };
            let Some(ev) = next else {
                drop(stream);
                reasoning_item::close_incomplete(&mut self.rec, &mut thinking).await?;
                self.close_message(message, text, ItemStatus::Incomplete, None).await?;
                return Ok(Step::Ended(Ending::Cancelled));
            };
            match ev {
                Some(Ok(ModelEvent::TextDelta(delta))) => {
                    text.push_str(&delta);
                    let event = |item_id: &str, index| EventBody::OutputTextDelta {
                        session_id: sid,
                        turn_id: tid,
                        item_id: item_id.to_string(),
                        output_index: index,
                        content_index: 0,
                        delta,
                    };
                    match &message {
                        Some((item_id, index)) => self.rec.emit_now(vec![event(item_id, *index)]),
                        // The message starts with its first text, announced together.
                        None => {
                            let id = new_item_id();
                            let item = self.message_item(&id, String::new(), ItemStatus::InProgress, None);
                            let (session_id, turn_id) = (self.rec.session.id, self.rec.turn.id);
                            let index = self.rec.add_item_now(item, |index| {
                                let part = Content::OutputText { text: String::new() };
                                let item_id = id.clone();
                                let started = EventBody::ContentPartAdded {
                                    session_id,
                                    turn_id,
                                    item_id,
                                    output_index: index,
                                    content_index: 0,
                                    part,
                                };
                                vec![started, event(&id, index)]
                            });
                            message = Some((id, index));
                        }
                    }
                }
                Some(Ok(ModelEvent::ReasoningDelta(delta))) => {
                    reasoning_item::delta(&mut self.rec, &mut thinking, delta)
                }
                Some(Ok(ModelEvent::Reasoning(block))) => {
                    reasoning_item::block(&mut self.rec, &mut thinking, &block).await?;
                    reasoning.push(block);
                }
                Some(Ok(ModelEvent::ToolCallDelta(delta))) => {
                    if let Some(hosted) = self.tools.hosted_for(&delta.name) {
                        hosted.streaming(&delta.name, &delta.id, &delta.arguments, &self.cancel);
                    }
                }
                Some(Ok(ModelEvent::ToolCall(call))) => calls.push(call),
                Some(Ok(ModelEvent::Usage(u))) => {
                    self.series.tokens(u.input_tokens, u.output_tokens);
                    add_usage(&mut self.rec.turn.usage, &u);
                }
                Some(Ok(ModelEvent::Finish(_))) | None => break,
                Some(Err(e)) => {
                    reasoning_item::close_incomplete(&mut self.rec, &mut thinking).await?;
                    self.close_message(message, text, ItemStatus::Incomplete, None).await?;
                    let model = &self.rec.session.agent.config.model;
                    tracing::warn!(
                        provider = %e.provider().unwrap_or("none"),
                        status = e.status(),
                        %model,
                        session = %self.rec.session.id,
                        turn = %self.rec.turn.id,
                        error = %e,
                        "model call failed"
                    );
                    return Ok(Step::Ended(Ending::Failed(TurnError::new(
                        crate::record::model_error_code(&e),
                        format!("model '{model}' failed: {e}"),
                    ))));
                }
            }
        }
        // A block the provider never closed still ends with the step.
        reasoning_item::close_incomplete(&mut self.rec, &mut thinking).await?;
        let phase = if calls.is_empty() { Phase::FinalAnswer } else { Phase::Commentary };
        self.close_message(message, text.clone(), ItemStatus::Completed, Some(phase)).await?;
        Ok(Step::Answered { reasoning, text, calls })
    }

    fn message_item(&self, id: &str, text: String, status: ItemStatus, phase: Option<Phase>) -> Item {
        let content = if text.is_empty() && status == ItemStatus::InProgress {
            Vec::new()
        } else {
            vec![Content::OutputText { text }]
        };
        Item::Message { id: id.to_string(), turn_id: self.rec.turn.id, role: Role::Assistant, status, content, phase }
    }

    async fn close_message(
        &mut self,
        message: Option<(String, i64)>,
        text: String,
        status: ItemStatus,
        phase: Option<Phase>,
    ) -> Result<()> {
        let Some((id, index)) = message else { return Ok(()) };
        let done = text_done(self.rec.session.id, self.rec.turn.id, &id, index, &text);
        let item = self.message_item(&id, text, status, phase);
        self.rec.done_item(item, index, done).await
    }

    /// Runs one step's tool calls; `Some` when the turn ended while doing so.
    async fn run_calls(&mut self, calls: Vec<ToolCall>) -> Result<Option<Ending>> {
        let mut answers = Vec::new();
        let mut waiting = Vec::new();
        for call in &calls {
            self.messages.push(Message::ToolCall(call.clone()));
        }
        for call in calls {
            let parsed = call.parse_arguments();
            if let Some(hosted) = self.tools.hosted_for(&call.name) {
                if let Some(ask) = parsed.as_ref().ok().and_then(|args| hosted.approval(&call.name, args)) {
                    waiting.push(self.approval_pending(call, &ask));
                    continue;
                }
                let answer = match parsed {
                    Ok(args) => hosted.call(&call.name, &call.id, args, &mut self.rec, &self.cancel).await,
                    Err(e) => HostedOutput::text(format!("error: the arguments are not valid JSON: {e}")),
                };
                if let Some(fatal) = answer.fatal {
                    return Ok(Some(Ending::Failed(fatal)));
                }
                answers.push(Message::tool_result(&call.id, answer.text));
                if self.cancel.is_cancelled() {
                    return Ok(Some(Ending::Cancelled));
                }
                continue;
            }
            let known = self.tools.offers_function(&call.name);
            let problem = match (&parsed, known) {
                (_, false) => Some(format!("unknown tool '{}'", call.name)),
                (Err(e), true) => Some(format!("the arguments are not valid JSON: {e}")),
                (Ok(_), true) => None,
            };
            let arguments = parsed.unwrap_or_else(|_| Value::String(call.arguments.clone()));
            if let Some(problem) = problem {
                self.record_failed_call(&call, arguments, &problem).await?;
                answers.push(Message::tool_result(&call.id, format!("error: {problem}")));
            } else {
                waiting.push(self.function_pending(&call, arguments).await?);
            }
        }
        if !waiting.is_empty()
            && let Some(ending) = self.wait_for_client(waiting, &mut answers).await?
        {
            return Ok(Some(ending));
        }
        self.messages.extend(answers);
        Ok(None)
    }

    /// A turn revived after a restart waits again for what it waited for
    /// (its approval calls are not in the stored history: they go back first).
    async fn resume_waiting(&mut self) -> Result<Option<Ending>> {
        let pending = std::mem::take(&mut self.resume);
        if pending.is_empty() {
            return Ok(None);
        }
        for p in &pending {
            if let Pending::Approval { call, .. } = p {
                self.messages.push(Message::ToolCall(call.clone()));
            }
        }
        let mut answers = Vec::new();
        if let Some(ending) = self.wait_for_client(pending, &mut answers).await? {
            return Ok(Some(ending));
        }
        self.messages.extend(answers);
        Ok(None)
    }

    /// A new `function_call` item of this turn for the model's call.
    pub(crate) fn function_call_item(&self, call: &ToolCall, arguments: Value, status: ItemStatus) -> Item {
        Item::FunctionCall {
            id: new_item_id(),
            turn_id: self.rec.turn.id,
            call_id: call.id.clone(),
            name: call.name.clone(),
            arguments,
            status,
        }
    }

    async fn record_failed_call(&mut self, call: &ToolCall, arguments: Value, problem: &str) -> Result<()> {
        let turn_id = self.rec.turn.id;
        let item = self.function_call_item(call, arguments, ItemStatus::Failed);
        self.rec.add_done_item(item).await?;
        self.rec.tool_finished(ToolKind::Function, ItemStatus::Failed);
        let output = Item::FunctionCallOutput {
            id: new_item_id(),
            turn_id,
            call_id: call.id.clone(),
            output: None,
            error: Some(problem.to_string()),
            status: ItemStatus::Failed,
        };
        self.rec.add_session_item(output);
        Ok(())
    }
}

enum Step {
    /// The model's reasoning blocks, its text and its tool calls.
    Answered {
        reasoning: Vec<models::Reasoning>,
        text: String,
        calls: Vec<ToolCall>,
    },
    Ended(Ending),
}

/// The model's view of a session's stored history.
pub fn initial_messages(items: &[Item]) -> Vec<Message> {
    history::messages(items)
}

/// The end of a message's text part: `output_text.done`, then `content_part.done`.
pub(crate) fn text_done(
    session_id: protocol::ids::SessionId,
    turn_id: protocol::ids::TurnId,
    item_id: &str,
    output_index: i64,
    text: &str,
) -> Vec<EventBody> {
    let (item_id, text) = (item_id.to_string(), text.to_string());
    vec![
        EventBody::OutputTextDone {
            session_id,
            turn_id,
            item_id: item_id.clone(),
            output_index,
            content_index: 0,
            text: text.clone(),
        },
        EventBody::ContentPartDone {
            session_id,
            turn_id,
            item_id,
            output_index,
            content_index: 0,
            part: Content::OutputText { text },
        },
    ]
}
