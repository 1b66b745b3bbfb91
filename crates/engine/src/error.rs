//! The engine's error type.

/// What a submission to the engine can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error(transparent)]
    Store(#[from] store::Error),
    /// A tool result names a call the turn does not wait for.
    #[error("Unknown pending tool call: {call_id}")]
    UnknownToolCall { call_id: String },
    /// A cancel arrived with no turn to cancel.
    #[error("the session has no active turn to cancel")]
    NoActiveTurn,
    #[error("{0}")]
    Invalid(String),
}

pub type Result<T> = std::result::Result<T, Error>;
