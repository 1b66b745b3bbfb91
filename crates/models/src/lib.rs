//! Model providers behind one trait: OpenAI Chat Completions, OpenAI
//! Responses and Anthropic Messages, streaming, tool calls and reasoning.
//!
//! # Layout
//! - [`types`]: the provider-neutral [`ModelRequest`] (instructions, history of
//!   [`Message`]s, [`ToolSpec`]s) and the [`ModelEvent`]s that come back.
//! - [`provider`]: the [`Provider`] trait; a call is a [`ModelStream`].
//! - [`response`]: [`ModelResponse`], the final message folded from the events.
//! - [`registry`]: [`Registry`], model name → provider and upstream name, from
//!   the environment and rebyte.toml (the precedence is documented there).
//! - [`openai`], [`openai_responses`], [`anthropic`]: the three wire formats.
//! - [`settings`]: base URL, [`ApiKey`], [`Timeouts`], [`RetryPolicy`].
//! - [`error`]: [`ModelError`]; each variant names the provider and what happened.
//! - `transport` (sending, retries), `driver` (body → events), `sse`: internals.
//!
//! # Use from the engine
//! ```no_run
//! # async fn step(registry: &models::Registry, history: Vec<models::Message>) -> models::Result<()> {
//! use futures::StreamExt;
//! let model = registry.resolve("gpt-6-luna")?;
//! let mut request = model.request();
//! request.messages = history;
//! let mut stream = model.stream(&request); // drop it to cancel
//! let mut answer = models::ModelResponse::default();
//! while let Some(event) = stream.next().await {
//!     let event = event?; // forward TextDelta to subscribers here
//!     answer.apply(&event);
//! }
//! # Ok(()) }
//! ```

#![forbid(unsafe_code)]

pub mod anthropic;
mod driver;
pub mod error;
pub mod openai;
pub mod openai_responses;
pub mod provider;
pub mod registry;
pub mod response;
pub mod settings;
mod sse;
mod transport;
pub mod types;

pub use anthropic::Anthropic;
pub use error::{ModelError, Result, TimeoutPhase};
pub use openai::OpenAiChat;
pub use openai_responses::OpenAiResponses;
pub use provider::{ModelStream, Provider};
pub use registry::{ProviderKind, Registry, RegistryBuilder, ResolvedModel};
pub use response::ModelResponse;
pub use settings::{ApiKey, ProviderConfig, ProviderSettings, RetryPolicy, Timeouts};
pub use types::{
    EncodedHistory, FinishReason, Message, ModelEvent, ModelRequest, Reasoning, ReasoningEffort, ReasoningSummary,
    TextFormat, ToolCall, ToolCallDelta, ToolSpec, Usage, Verbosity,
};
