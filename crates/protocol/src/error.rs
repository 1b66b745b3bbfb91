//! The error body every endpoint answers with: `{"error":{type,code,message,param}}`.

use serde::{Deserialize, Serialize};

/// The `error` object inside an error response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ErrorObject {
    /// Broad class: `invalid_request_error`, `authentication_error`,
    /// `permission_error`, `not_found_error`, `server_error` …
    #[serde(rename = "type")]
    pub kind: String,
    /// A stable machine-readable code, such as `missing_scope` or `invalid_value`.
    pub code: Option<String>,
    /// A sentence for humans saying what was wrong.
    pub message: String,
    /// The request field at fault, as a path like `agent.tools[0].type`.
    pub param: Option<String>,
}

/// The whole error response body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ErrorBody {
    pub error: ErrorObject,
}
