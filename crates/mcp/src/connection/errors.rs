//! Turning rmcp's errors into [`McpError`]s that name the server and the step. A transport
//! error is described by its cause: rmcp's own text names its internal transport types
//! (`Transport [rmcp::transport::worker::WorkerTransport<…>] error: …`), which [`plain`] also
//! takes out of any text that still carries one.

use crate::error::{McpError, Step};
use rmcp::ServiceError;
use rmcp::service::ClientInitializeError;

pub(crate) fn from_service(server: &str, step: Step, error: ServiceError) -> McpError {
    let server = server.to_owned();
    match error {
        ServiceError::McpError(data) => {
            McpError::Server { server, step, code: data.code.0, message: data.message.into() }
        }
        ServiceError::TransportClosed => McpError::Closed { server, step },
        ServiceError::TransportSend(error) => {
            McpError::Transport { server, step, message: plain(&error.error.to_string()) }
        }
        ServiceError::UnexpectedResponse => {
            McpError::Protocol { server, step, message: "the answer is not a result of the expected kind".into() }
        }
        ServiceError::Timeout { timeout } => McpError::Timeout { server, step, after: timeout },
        ServiceError::Cancelled { .. } => McpError::Cancelled { server, step },
        other => McpError::Transport { server, step, message: plain(&other.to_string()) },
    }
}

pub(crate) fn from_initialize(server: &str, error: ClientInitializeError) -> McpError {
    let server = server.to_owned();
    let step = Step::Initialize;
    match error {
        ClientInitializeError::ConnectionClosed(_) => McpError::Closed { server, step },
        ClientInitializeError::JsonRpcError(data) => {
            McpError::Server { server, step, code: data.code.0, message: data.message.into() }
        }
        ClientInitializeError::TransportError { error, context } => {
            McpError::Transport { server, step, message: plain(&format!("{} ({context})", error.error)) }
        }
        ClientInitializeError::Cancelled => McpError::Cancelled { server, step },
        other @ (ClientInitializeError::ExpectedInitResponse(_)
        | ClientInitializeError::ExpectedInitResult(_)
        | ClientInitializeError::ConflictInitResponseId(..)
        | ClientInitializeError::UncorrelatedErrorResponse { .. }
        | ClientInitializeError::NoCompatibleProtocolVersion { .. }) => {
            McpError::Protocol { server, step, message: plain(&other.to_string()) }
        }
        other => McpError::Transport { server, step, message: plain(&other.to_string()) },
    }
}

/// `text` without rmcp's type names: each `Transport [<type>] error: ` wrapper is dropped and
/// any other `rmcp::…` path (with its generic arguments) becomes "the MCP transport".
pub(crate) fn plain(text: &str) -> String {
    const WRAPPER: &str = "Transport [";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(WRAPPER).filter(|at| rest[at + WRAPPER.len()..].starts_with("rmcp::")) {
        out.push_str(&rest[..at]);
        let after = &rest[at + WRAPPER.len()..];
        let end = type_end(after);
        rest =
            after[end..].strip_prefix("] error: ").or_else(|| after[end..].strip_prefix(']')).unwrap_or(&after[end..]);
    }
    out.push_str(rest);
    let mut text = String::with_capacity(out.len());
    let mut rest = out.as_str();
    while let Some(at) = rest.find("rmcp::") {
        text.push_str(&rest[..at]);
        text.push_str("the MCP transport");
        rest = &rest[at + type_end(&rest[at..])..];
    }
    text.push_str(rest);
    text
}

/// Where the type path at the start of `text` ends: after its balanced `<…>` arguments, at the
/// first character that cannot be part of it.
fn type_end(text: &str) -> usize {
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '<' => depth += 1,
            '>' if depth > 0 => depth -= 1,
            _ if depth > 0 => {}
            c if c.is_alphanumeric() || c == '_' || c == ':' => {}
            _ => return i,
        }
    }
    text.len()
}

#[cfg(test)]
mod tests {
    use super::plain;

    #[test]
    fn rmcp_type_names_are_taken_out() {
        let worker = "rmcp::transport::worker::WorkerTransport<rmcp::transport::streamable_http_client::\
                      StreamableHttpClientWorker<mcp::connection::http::Client>>";
        let wrapped = format!("Transport [{worker}] error: Transport channel closed");
        assert_eq!(plain(&wrapped), "Transport channel closed");
        assert_eq!(
            plain(&format!("Send message error {wrapped}, when send initialize request")),
            "Send message error Transport channel closed, when send initialize request"
        );
        assert_eq!(plain(&format!("{worker} quit")), "the MCP transport quit");
        assert_eq!(plain("HTTP 502 (connection refused)"), "HTTP 502 (connection refused)");
    }
}
