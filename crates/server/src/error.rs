//! `ApiError`: the one error type handlers return. It wraps the application
//! layer's [`app::Error`] and becomes the JSON body
//! `{"error":{type,code,message,param}}` with the right status (the one
//! table below); it never leaks internals (a server error logs its cause and
//! says only that it happened).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use protocol::error::{ErrorBody, ErrorObject};

/// An error answered to the caller.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct ApiError(#[from] pub app::Error);

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    /// A 400 naming the field at fault.
    pub fn invalid(param: impl Into<String>, message: impl Into<String>) -> Self {
        Self(app::Error::invalid(param, message))
    }

    /// A 400 with its own code; `param` names the field when there is one.
    pub fn invalid_with(param: Option<String>, code: &'static str, message: impl Into<String>) -> Self {
        Self(app::Error::Invalid { param, code, message: message.into() })
    }

    /// A 400 for a feature this server does not offer (yet).
    pub fn unsupported(param: impl Into<String>, message: impl Into<String>) -> Self {
        Self(app::Error::unsupported(param, message))
    }

    /// A 404 for a resource id that this organization cannot see.
    pub fn not_found(what: &str, id: &str) -> Self {
        Self(app::Error::not_found(what, id))
    }

    /// A 404 with its own message.
    pub fn no_such(message: impl Into<String>) -> Self {
        Self(app::Error::NotFound(message.into()))
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self(app::Error::Unauthorized(message.into()))
    }

    pub fn conflict(message: impl Into<String>) -> Self {
        Self(app::Error::Conflict(message.into()))
    }

    pub fn too_large(message: impl Into<String>) -> Self {
        Self(app::Error::TooLarge(message.into()))
    }

    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self(app::Error::MethodNotAllowed(message.into()))
    }

    /// A fault of the server: `cause` is logged, never shown.
    pub fn internal(cause: impl Into<String>) -> Self {
        Self(app::Error::Internal(cause.into()))
    }

    pub fn is_not_found(&self) -> bool {
        self.0.is_not_found()
    }

    fn parts(&self) -> (StatusCode, &'static str, Option<&'static str>, Option<String>) {
        use app::Error as E;
        match &self.0 {
            E::Invalid { param, code, .. } => {
                (StatusCode::BAD_REQUEST, "invalid_request_error", Some(*code), param.clone())
            }
            E::Unauthorized(_) => (StatusCode::UNAUTHORIZED, "authentication_error", Some("invalid_api_key"), None),
            E::MissingScope(_) => (StatusCode::FORBIDDEN, "permission_error", Some("missing_scope"), None),
            E::NotFound(_) => (StatusCode::NOT_FOUND, "not_found_error", Some("not_found"), None),
            E::MissingReference { param, .. } => {
                (StatusCode::NOT_FOUND, "not_found_error", Some("not_found"), Some(param.clone()))
            }
            E::MethodNotAllowed(_) => {
                (StatusCode::METHOD_NOT_ALLOWED, "invalid_request_error", Some("method_not_allowed"), None)
            }
            E::Conflict(_) => (StatusCode::CONFLICT, "conflict_error", Some("conflict"), None),
            E::TooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, "invalid_request_error", Some("request_too_large"), None),
            E::TooManyQueued(_) => {
                (StatusCode::TOO_MANY_REQUESTS, "rate_limit_error", Some("too_many_queued_turns"), None)
            }
            E::RateLimited { code, .. } => (StatusCode::TOO_MANY_REQUESTS, "rate_limit_error", Some(*code), None),
            E::Unavailable => (StatusCode::SERVICE_UNAVAILABLE, "server_error", Some("database_unavailable"), None),
            E::EnvironmentUnavailable(_) => {
                (StatusCode::SERVICE_UNAVAILABLE, "server_error", Some("environment_unavailable"), None)
            }
            // `app::Error` is non-exhaustive: anything new is a server error until it has a row.
            _ => (StatusCode::INTERNAL_SERVER_ERROR, "server_error", Some("internal_error"), None),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, kind, code, param) = self.parts();
        let message = if status == StatusCode::INTERNAL_SERVER_ERROR {
            tracing::error!(cause = %self.0, "internal error");
            "The server had an error while processing your request.".to_string()
        } else {
            self.0.to_string()
        };
        let body = ErrorBody { error: ErrorObject { kind: kind.into(), code: code.map(Into::into), message, param } };
        let mut response = (status, axum::Json(body)).into_response();
        if let app::Error::RateLimited { retry_after, .. } = &self.0 {
            // These clear by themselves: the client may retry after the wait (whole seconds, at least one).
            let secs = retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0);
            response.headers_mut().insert(axum::http::header::RETRY_AFTER, secs.max(1).into());
        } else if status == StatusCode::CONFLICT || status == StatusCode::TOO_MANY_REQUESTS {
            // The `openai` client retries 409s and 429s; these do not clear by themselves
            // (a full queue drains only as its turns end).
            response.headers_mut().insert("x-should-retry", axum::http::HeaderValue::from_static("false"));
        }
        response
    }
}

macro_rules! via_app_error {
    ($($source:ty),*) => {$(
        impl From<$source> for ApiError {
            fn from(e: $source) -> Self {
                Self(e.into())
            }
        }
    )*};
}

via_app_error!(store::Error, engine::Error, protocol::validate::Invalid, app::credentials::CredentialError);
