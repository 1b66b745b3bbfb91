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
    /// An approval decision names no request a turn waits for (unknown, or answered).
    #[error("no MCP approval request '{request_id}' is waiting for an answer")]
    UnknownApproval { request_id: String },
    /// A cancel arrived with no turn to cancel.
    #[error("the session has no active turn to cancel")]
    NoActiveTurn,
    #[error("{0}")]
    Invalid(String),
    /// The session's environment lives on a node that is not running.
    #[error(
        "environment '{environment}' lives on node '{node}', which is not running; it is back with its files when that node is"
    )]
    EnvironmentUnavailable { environment: String, node: String },
    /// The session already has [`crate::MAX_QUEUED_TURNS`] turns waiting to
    /// run: a new one is refused, and nothing of it is written.
    #[error("the session already has {limit} queued turns; wait for some to end or cancel them")]
    QueueFull { limit: usize },
    /// The database cannot be reached now (the same request may succeed later).
    #[error("the database is unavailable")]
    Unavailable,
}

impl From<crate::journal::FlushError> for Error {
    fn from(e: crate::journal::FlushError) -> Self {
        match e {
            crate::journal::FlushError::Unavailable => Error::Unavailable,
            e => Error::Invalid(e.to_string()),
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;
