//! The one trait every model provider implements, and the stream it returns.

use crate::error::Result;
use crate::types::{ModelEvent, ModelRequest};
use futures::Stream;
use std::pin::Pin;

/// The events of one model call. Errors arrive in-band, and the stream ends
/// after `Finish` or after the first error. Dropping it aborts the call,
/// including the HTTP request in flight: that is how a turn is cancelled.
pub type ModelStream = Pin<Box<dyn Stream<Item = Result<ModelEvent>> + Send + 'static>>;

/// A model provider: something that turns a [`ModelRequest`] into a stream
/// of [`ModelEvent`]s. Object-safe; the engine holds `Arc<dyn Provider>`.
pub trait Provider: Send + Sync + std::fmt::Debug {
    /// The name errors and logs use (`openai`, `anthropic`, or a
    /// `[providers.<name>]` key of rebyte.toml).
    fn name(&self) -> &str;

    /// Starts one model call. The request is serialized at once, so the
    /// stream borrows nothing; nothing is sent until the stream is first
    /// polled. Retryable failures are retried inside the stream, but only
    /// before it has yielded anything.
    fn stream(&self, request: &ModelRequest) -> ModelStream;
}
