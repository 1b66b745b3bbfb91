//! Request extraction with errors in our shape: JSON bodies whose failures name
//! the field (`agent.tools[0].type`), bodies over the limit answered 413, list
//! query strings, and ids parsed from paths.

use crate::error::{ApiError, ApiResult};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequest, Request};
use protocol::ids::{EnvironmentId, SessionId, TurnId};
use protocol::list::{MAX_LIMIT, Order, PageRequest};
use serde::de::DeserializeOwned;

/// A JSON body. An empty body reads as `{}`.
pub struct Json<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Json<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(req, state).await.map_err(|e| match e {
            BytesRejection::FailedToBufferBody(inner)
                if inner.to_string().contains("length limit") || format!("{inner:?}").contains("LengthLimit") =>
            {
                ApiError::too_large("The request body is larger than this server accepts.")
            }
            other => ApiError::invalid_with(None, "invalid_body", other.body_text()),
        })?;
        let body: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) { b"{}" } else { &bytes };
        // serde would read a JSON array into a struct by position; a request body is an object.
        if body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
            return Err(ApiError::invalid_with(None, "invalid_body", "The request body must be a JSON object."));
        }
        parse_json(body).map(Json)
    }
}

/// Parses JSON, naming the path of the first field that does not fit.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> ApiResult<T> {
    // A body that fits takes the direct way; tracking the path of every
    // field costs as much again, and only an error's message needs it.
    if let Ok(value) = serde_json::from_slice(bytes) {
        return Ok(value);
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let (path, detail) = nested_path(&path, &inner.to_string());
        let param = field_of(&path, &detail);
        if inner.is_syntax() || inner.is_eof() {
            ApiError::invalid_with(None, "invalid_json", format!("The body is not valid JSON: {inner}"))
        } else {
            let message = match &param {
                Some(p) => format!("Invalid value for '{p}': {detail}"),
                None => format!("Invalid request body: {detail}"),
            };
            ApiError::invalid_with(param, "invalid_value", message)
        }
    })?;
    de.end().map_err(|e| ApiError::invalid_with(None, "invalid_json", format!("The body is not valid JSON: {e}")))?;
    Ok(value)
}

/// Extends `path` with the "at `field`: " prefixes of tagged-enum errors;
/// returns the full path and the message without the prefixes.
fn nested_path(path: &str, message: &str) -> (String, String) {
    let mut path = if path == "." { String::new() } else { path.to_string() };
    let mut rest = message;
    while let Some(after) = rest.strip_prefix("at `") {
        let Some((field, tail)) = after.split_once("`: ") else { break };
        if !path.is_empty() && !field.starts_with('[') {
            path.push('.');
        }
        path.push_str(field);
        rest = tail;
    }
    let path = if path.is_empty() { ".".to_string() } else { path };
    (path, rest.to_string())
}

/// The request field an error is about: the path serde reached, extended by
/// the field a "missing field" or "unknown field" message names.
fn field_of(path: &str, message: &str) -> Option<String> {
    let named = ["missing field `", "unknown field `"]
        .iter()
        .find_map(|p| message.strip_prefix(p))
        .and_then(|rest| rest.split('`').next());
    match (path, named) {
        (".", None) => None,
        (".", Some(field)) => Some(field.to_string()),
        (path, None) => Some(path.to_string()),
        // serde_path_to_error already ends the path with an unknown field.
        (path, Some(field)) if path == field || path.ends_with(&format!(".{field}")) => Some(path.to_string()),
        (path, Some(field)) => Some(format!("{path}.{field}")),
    }
}

/// The parsed query string of a list request.
#[derive(Debug, Default)]
pub struct ListQuery {
    pub page: PageRequest,
    /// Other parameters, for the endpoint to read and check.
    pub rest: Vec<(String, String)>,
}

impl ListQuery {
    /// Parses `limit`, `after`, `before` and `order`, leaving the rest; any
    /// parameter not in `allowed` (besides those four) is rejected.
    pub fn parse(raw: Option<&str>, allowed: &[&str]) -> ApiResult<Self> {
        let mut out = ListQuery::default();
        for (key, value) in form_urlencoded::parse(raw.unwrap_or("").as_bytes()) {
            let (key, value) = (key.into_owned(), value.into_owned());
            match key.as_str() {
                "limit" => {
                    let n: u32 = value
                        .parse()
                        .map_err(|_| ApiError::invalid("limit", format!("limit must be an integer, got '{value}'")))?;
                    if !(1..=MAX_LIMIT).contains(&n) {
                        return Err(ApiError::invalid(
                            "limit",
                            format!("limit must be between 1 and {MAX_LIMIT}, got {n}"),
                        ));
                    }
                    out.page.limit = n;
                }
                "after" => out.page.after = Some(value),
                "before" => out.page.before = Some(value),
                "order" => {
                    out.page.order = match value.as_str() {
                        "asc" => Order::Asc,
                        "desc" => Order::Desc,
                        _ => {
                            return Err(ApiError::invalid(
                                "order",
                                format!("order must be 'asc' or 'desc', got '{value}'"),
                            ));
                        }
                    }
                }
                _ if allowed.iter().any(|a| key == *a || (a.ends_with('[') && key.starts_with(a))) => {
                    out.rest.push((key, value))
                }
                _ => {
                    return Err(ApiError::invalid(key.clone(), format!("unknown query parameter '{key}'")));
                }
            }
        }
        if out.page.after.is_some() && out.page.before.is_some() {
            return Err(ApiError::invalid("before", "after and before cannot be combined"));
        }
        Ok(out)
    }

    /// The values of a list parameter, sent as `name=…` or `name[]=…`.
    pub fn values(&self, name: &str) -> Vec<String> {
        let bracketed = format!("{name}[]");
        self.rest.iter().filter(|(k, _)| *k == name || *k == bracketed).map(|(_, v)| v.clone()).collect()
    }
}

/// Parses a Session id from a path segment.
pub fn session_id(raw: &str) -> ApiResult<SessionId> {
    SessionId::parse(raw)
        .ok_or_else(|| ApiError::invalid("session_id", format!("'{raw}' is not a session id: expected a UUID")))
}

/// Parses a Conversation id (`conv_<uuid>`) from a path segment.
pub fn conversation_id(raw: &str) -> ApiResult<SessionId> {
    SessionId::parse_conversation(raw).ok_or_else(|| {
        ApiError::invalid("conversation_id", format!("'{raw}' is not a conversation id: expected conv_<uuid>"))
    })
}

/// Parses an Environment id from a path segment; one that is not an
/// environment id names none (404).
pub fn environment_id(raw: &str) -> ApiResult<EnvironmentId> {
    Ok(app::environments::environment_id(raw)?)
}

/// Parses a Turn id from a path segment; one that is not a UUID names no turn (404).
pub fn turn_id(raw: &str) -> ApiResult<TurnId> {
    TurnId::parse(raw).ok_or_else(|| app::Error::not_found("turn", raw).into())
}
