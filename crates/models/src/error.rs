//! The crate's error type. Every variant that comes from a model call names
//! the provider and says what happened; none ever carries an API key.

use std::time::Duration;

/// What can go wrong resolving a model or calling it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    #[error(
        "no model provider serves model `{model}`: map it in rebyte.toml ([models.\"{model}\"]) \
         or set OPENAI_API_KEY / OPENAI_BASE_URL (or ANTHROPIC_API_KEY for claude-* models)"
    )]
    UnknownModel { model: String },

    /// The configuration (rebyte.toml or environment) is unusable.
    #[error("model configuration: {message}")]
    Config { message: String },

    /// The upstream answered with a non-2xx status.
    #[error("model provider `{provider}` answered HTTP {status}{}: {body}", attempts_note(*attempts))]
    Status { provider: String, status: u16, body: String, attempts: u32 },

    /// The upstream could not be reached at all.
    #[error("model provider `{provider}`: cannot connect to {url}{}: {message}", attempts_note(*attempts))]
    Connect { provider: String, url: String, message: String, attempts: u32 },

    #[error("model provider `{provider}`: timed out after {} ms {phase}", after.as_millis())]
    Timeout { provider: String, phase: TimeoutPhase, after: Duration },

    /// The connection failed while the request or the response was in flight.
    #[error("model provider `{provider}`: connection failed mid-response: {message}")]
    Transport { provider: String, message: String },

    /// The response could not be understood.
    #[error("model provider `{provider}`: malformed stream: {message}")]
    MalformedStream { provider: String, message: String },

    /// The body ended cleanly but without the stream's end marker.
    #[error("model provider `{provider}`: stream ended before {expected}")]
    StreamEnded { provider: String, expected: &'static str },

    /// The upstream reported an error inside a 2xx stream.
    #[error("model provider `{provider}` reported an error: {message}")]
    Upstream { provider: String, message: String },
}

/// Which wait ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutPhase {
    /// Establishing the TCP/TLS connection.
    Connect,
    /// From sending the request to the response headers.
    ResponseHeaders,
    /// Between two chunks of the response body.
    Idle,
}

impl std::fmt::Display for TimeoutPhase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Connect => "connecting",
            Self::ResponseHeaders => "waiting for the response headers",
            Self::Idle => "waiting for the next chunk of the response stream",
        })
    }
}

fn attempts_note(attempts: u32) -> String {
    if attempts > 1 { format!(" (after {attempts} attempts)") } else { String::new() }
}

impl ModelError {
    /// A stable short code for the turn's error item.
    pub fn code(&self) -> &'static str {
        match self {
            Self::UnknownModel { .. } => "model_not_found",
            Self::Config { .. } => "model_config_error",
            Self::Status { .. } => "model_http_error",
            Self::Connect { .. } => "model_unreachable",
            Self::Timeout { .. } => "model_timeout",
            Self::Transport { .. } | Self::MalformedStream { .. } | Self::StreamEnded { .. } => "model_stream_error",
            Self::Upstream { .. } => "model_error",
        }
    }

    /// Whether the same request may succeed if sent again: connect failures
    /// (refused or timed out), 429, 500/502/503/504, and Anthropic's 529
    /// "overloaded". The providers already retried these (before any event
    /// was yielded) as many times as their retry policy allows.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Connect { .. } | Self::Timeout { phase: TimeoutPhase::Connect, .. } => true,
            Self::Status { status, .. } => matches!(status, 429 | 500 | 502 | 503 | 504 | 529),
            _ => false,
        }
    }

    /// The HTTP status the upstream answered, if it answered one.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The provider the error comes from, if it comes from a model call.
    pub fn provider(&self) -> Option<&str> {
        match self {
            Self::UnknownModel { .. } | Self::Config { .. } => None,
            Self::Status { provider, .. }
            | Self::Connect { provider, .. }
            | Self::Timeout { provider, .. }
            | Self::Transport { provider, .. }
            | Self::MalformedStream { provider, .. }
            | Self::StreamEnded { provider, .. }
            | Self::Upstream { provider, .. } => Some(provider),
        }
    }
}

pub type Result<T, E = ModelError> = std::result::Result<T, E>;
