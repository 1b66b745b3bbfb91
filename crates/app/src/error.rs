//! [`Error`]: what the application layer answers when a request cannot be
//! done. The HTTP edge turns each kind into a status and code (one table, in
//! the server); an internal cause is logged there and never shown.

use protocol::admin::Scope;
use protocol::validate::Invalid;

/// Why an operation failed, in terms a caller can act on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A request field is wrong: 400 naming the field.
    #[error("{message}")]
    Invalid { param: Option<String>, code: &'static str, message: String },
    #[error("{0}")]
    Unauthorized(String),
    #[error("this key lacks the '{0}' scope")]
    MissingScope(Scope),
    /// The caller's organization has no such thing.
    #[error("{0}")]
    NotFound(String),
    /// An id in the request names nothing this organization can see: 404
    /// naming the field.
    #[error("{message}")]
    MissingReference { param: String, message: String },
    #[error("{0}")]
    MethodNotAllowed(String),
    /// The current state forbids it (and retrying will not help).
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    TooLarge(String),
    /// A limit on work waiting to be done is reached (a session's queued
    /// turns): 429, and nothing of the request was applied.
    #[error("{0}")]
    TooManyQueued(String),
    /// A per-organization limit that clears by itself (a request rate,
    /// active turns): 429 with `Retry-After`, nothing of the request applied.
    #[error("{message}")]
    RateLimited { code: &'static str, message: String, retry_after: std::time::Duration },
    /// The database cannot be reached now (restarting, say): 503, and the
    /// same request may succeed shortly.
    #[error("The database is unavailable; retry the request shortly.")]
    Unavailable,
    /// An environment lives on a cluster node that is not running: 503
    /// until that node is back (with the environment's files).
    #[error("{0}")]
    EnvironmentUnavailable(String),
    /// A fault of the server; the message is for the log, not the caller.
    #[error("internal error: {0}")]
    Internal(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A 400 naming the field at fault.
    pub fn invalid(param: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Invalid { param: Some(param.into()), code: "invalid_value", message: message.into() }
    }

    /// A 400 for a feature this server does not offer (yet).
    pub fn unsupported(param: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Invalid { param: Some(param.into()), code: "unsupported", message: message.into() }
    }

    /// A 404 for a resource id that this organization cannot see.
    pub fn not_found(what: &str, id: &str) -> Self {
        Error::NotFound(format!("No {what} found with id '{id}'."))
    }

    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::NotFound(_))
    }
}

impl From<Invalid> for Error {
    fn from(e: Invalid) -> Self {
        Error::invalid(e.param, e.message)
    }
}

impl From<store::Error> for Error {
    fn from(e: store::Error) -> Self {
        match e {
            store::Error::UnknownCursor(id) => {
                Error::invalid("after", format!("the cursor '{id}' names no item of this list"))
            }
            store::Error::Conflict(message) => Error::Conflict(message),
            other if other.is_unavailable() => {
                tracing::warn!(error = %other, "database unavailable");
                Error::Unavailable
            }
            other => Error::Internal(other.to_string()),
        }
    }
}

impl From<engine::Error> for Error {
    fn from(e: engine::Error) -> Self {
        match e {
            engine::Error::Store(e) => e.into(),
            engine::Error::Unavailable => Error::Unavailable,
            e @ engine::Error::EnvironmentUnavailable { .. } => Error::EnvironmentUnavailable(e.to_string()),
            e @ engine::Error::UnknownApproval { .. } => Error::Conflict(e.to_string()),
            e @ engine::Error::QueueFull { .. } => Error::TooManyQueued(e.to_string()),
            // The client's tool dispatcher recognises exactly this shape.
            engine::Error::UnknownToolCall { call_id } => Error::Invalid {
                param: Some("call_id".into()),
                code: "invalid_request_error",
                message: format!("Unknown pending tool call: {call_id}"),
            },
            engine::Error::NoActiveTurn => Error::Invalid {
                param: None,
                code: "no_active_turn",
                message: "The session has no active turn to cancel.".into(),
            },
            other => Error::Internal(other.to_string()),
        }
    }
}
