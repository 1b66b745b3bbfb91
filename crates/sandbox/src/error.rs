//! The crate's error type: what can go wrong talking to a sandbox, and which
//! failures are the caller's fault (bad path → 400, too large → 413).

use std::time::Duration;

/// Errors from sandbox backends, the agent connection and the agent itself.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The path escapes `/workspace` (`..`, an absolute path elsewhere, or a
    /// symlink that points out). The API layer answers 400.
    #[error("path escapes /workspace: {0}")]
    PathEscape(String),
    /// The path is malformed or names the wrong kind of object (empty, a NUL
    /// byte, a directory where a file was expected, `/workspace` itself). 400.
    #[error("invalid path {path}: {reason}")]
    InvalidPath { path: String, reason: String },
    /// The file is larger than the transfer limit. The API layer answers 413.
    #[error("file of {size} bytes exceeds the limit of {limit} bytes")]
    TooLarge { size: u64, limit: u64 },
    /// No such file or directory inside the sandbox. 404.
    #[error("not found: {0}")]
    NotFound(String),
    /// The command could not be started (its working directory is missing, …).
    #[error("could not start the command: {0}")]
    Spawn(String),
    /// The agent inside the sandbox is gone (destroyed, crashed, killed).
    #[error("the sandbox is not running: {0}")]
    Gone(String),
    /// The sandbox could not be created or set up.
    #[error("could not create the sandbox: {0}")]
    Create(String),
    /// The agent did not answer in time.
    #[error("the sandbox agent did not answer within {0:?}")]
    Timeout(Duration),
    /// The agent broke the protocol (a bad frame, an unexpected reply).
    #[error("sandbox protocol error: {0}")]
    Protocol(String),
    /// The network policy refused a connection, or it could not be made.
    #[error(transparent)]
    Egress(#[from] crate::egress::EgressError),
    /// Environment setup failed: the step, its output and the log so far.
    #[error(transparent)]
    Setup(Box<crate::setup::SetupFailure>),
    /// The operation cannot be done while the sandbox is as it is (a fork
    /// while a process holds a workspace file open for writing). 409.
    #[error("{0}")]
    Busy(String),
    /// The backend does not offer the operation.
    #[error("{0}")]
    Unsupported(String),
    /// An I/O error inside the sandbox or on the host.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io { context: context.into(), source }
    }

    /// The HTTP status the API layer should answer with for this error.
    pub fn http_status(&self) -> u16 {
        match self {
            Error::PathEscape(_) | Error::InvalidPath { .. } => 400,
            Error::NotFound(_) => 404,
            Error::TooLarge { .. } => 413,
            Error::Busy(_) => 409,
            Error::Timeout(_) => 504,
            _ => 500,
        }
    }
}

impl From<nix::Error> for Error {
    fn from(e: nix::Error) -> Self {
        Error::io("system call", std::io::Error::from(e))
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
