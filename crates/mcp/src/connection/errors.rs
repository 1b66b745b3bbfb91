//! Turning rmcp's errors into [`McpError`]s that name the server and the step. A transport
//! error is described by its cause: rmcp's own text names its internal transport types.

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
        ServiceError::TransportSend(error) => McpError::Transport { server, step, message: error.error.to_string() },
        ServiceError::UnexpectedResponse => {
            McpError::Protocol { server, step, message: "the answer is not a result of the expected kind".into() }
        }
        ServiceError::Timeout { timeout } => McpError::Timeout { server, step, after: timeout },
        ServiceError::Cancelled { .. } => McpError::Cancelled { server, step },
        other => McpError::Transport { server, step, message: other.to_string() },
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
            McpError::Transport { server, step, message: format!("{} ({context})", error.error) }
        }
        ClientInitializeError::Cancelled => McpError::Cancelled { server, step },
        other @ (ClientInitializeError::ExpectedInitResponse(_)
        | ClientInitializeError::ExpectedInitResult(_)
        | ClientInitializeError::ConflictInitResponseId(..)
        | ClientInitializeError::UncorrelatedErrorResponse { .. }
        | ClientInitializeError::NoCompatibleProtocolVersion { .. }) => {
            McpError::Protocol { server, step, message: other.to_string() }
        }
        other => McpError::Transport { server, step, message: other.to_string() },
    }
}
