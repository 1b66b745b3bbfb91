//! `ApiError`: the one error type handlers return. It becomes the JSON body
//! `{"error":{type,code,message,param}}` with the right status and never leaks
//! internals (a server error logs its cause and says only that it happened).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use protocol::admin::Scope;
use protocol::error::{ErrorBody, ErrorObject};
use protocol::validate::Invalid;

/// An error answered to the caller.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{message}")]
    Invalid { param: Option<String>, code: &'static str, message: String },
    #[error("{0}")]
    Unauthorized(String),
    #[error("this key lacks the '{0}' scope")]
    MissingScope(Scope),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    MethodNotAllowed(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    TooLarge(String),
    #[error("internal error: {0}")]
    Internal(String),
}

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    /// A 400 naming the field at fault.
    pub fn invalid(param: impl Into<String>, message: impl Into<String>) -> Self {
        ApiError::Invalid { param: Some(param.into()), code: "invalid_value", message: message.into() }
    }

    /// A 400 for a feature this server does not offer (yet).
    pub fn unsupported(param: impl Into<String>, message: impl Into<String>) -> Self {
        ApiError::Invalid { param: Some(param.into()), code: "unsupported", message: message.into() }
    }

    /// A 404 for a resource id that this organization cannot see.
    pub fn not_found(what: &str, id: &str) -> Self {
        ApiError::NotFound(format!("No {what} found with id '{id}'."))
    }

    fn parts(&self) -> (StatusCode, &'static str, Option<&'static str>, Option<String>) {
        match self {
            ApiError::Invalid { param, code, .. } => {
                (StatusCode::BAD_REQUEST, "invalid_request_error", Some(*code), param.clone())
            }
            ApiError::Unauthorized(_) => {
                (StatusCode::UNAUTHORIZED, "authentication_error", Some("invalid_api_key"), None)
            }
            ApiError::MissingScope(_) => (StatusCode::FORBIDDEN, "permission_error", Some("missing_scope"), None),
            ApiError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found_error", Some("not_found"), None),
            ApiError::MethodNotAllowed(_) => {
                (StatusCode::METHOD_NOT_ALLOWED, "invalid_request_error", Some("method_not_allowed"), None)
            }
            ApiError::Conflict(_) => (StatusCode::CONFLICT, "conflict_error", Some("conflict"), None),
            ApiError::TooLarge(_) => {
                (StatusCode::PAYLOAD_TOO_LARGE, "invalid_request_error", Some("request_too_large"), None)
            }
            ApiError::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "server_error", Some("internal_error"), None),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, kind, code, param) = self.parts();
        let message = match &self {
            ApiError::Internal(cause) => {
                tracing::error!(%cause, "internal error");
                "The server had an error while processing your request.".to_string()
            }
            other => other.to_string(),
        };
        let body = ErrorBody { error: ErrorObject { kind: kind.into(), code: code.map(Into::into), message, param } };
        let mut response = (status, axum::Json(body)).into_response();
        if status == StatusCode::CONFLICT {
            // The `openai` client retries 409s; these conflicts do not clear by themselves.
            response.headers_mut().insert("x-should-retry", axum::http::HeaderValue::from_static("false"));
        }
        response
    }
}

impl From<Invalid> for ApiError {
    fn from(e: Invalid) -> Self {
        ApiError::invalid(e.param, e.message)
    }
}

impl From<store::Error> for ApiError {
    fn from(e: store::Error) -> Self {
        match e {
            store::Error::UnknownCursor(id) => {
                ApiError::invalid("after", format!("the cursor '{id}' names no item of this list"))
            }
            store::Error::Conflict(message) => ApiError::Conflict(message),
            other => ApiError::Internal(other.to_string()),
        }
    }
}
