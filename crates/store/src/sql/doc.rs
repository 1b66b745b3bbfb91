//! [`Doc`]: a resource's JSON document as a column value (`TEXT` in both
//! backends: PostgreSQL's `jsonb` cannot hold U+0000, which the API accepts),
//! and the engine-owned fields of a session's document.

use crate::Result;
use protocol::session::SessionState;

/// A document's JSON text.
#[derive(Debug, Clone, sqlx::Type)]
#[sqlx(transparent)]
pub(crate) struct Doc(pub String);

impl Doc {
    /// Parses the document.
    pub(crate) fn parse<T: serde::de::DeserializeOwned>(&self) -> Result<T> {
        Ok(serde_json::from_str(&self.0)?)
    }
}

/// The fields of a session's document that the engine owns: a
/// configuration write keeps them as stored, a state write sets only them.
const ENGINE_OWNED: [&str; 5] = ["status", "error", "last_active_at", "usage", "required_actions"];

/// `doc` with its engine-owned fields taken from `stored`.
pub(crate) fn keep_state(doc: &str, stored: &str) -> Result<String> {
    let stored: serde_json::Map<String, serde_json::Value> = serde_json::from_str(stored)?;
    let mut doc: serde_json::Map<String, serde_json::Value> = serde_json::from_str(doc)?;
    for key in ENGINE_OWNED {
        let value = stored.get(key).cloned().unwrap_or(serde_json::Value::Null);
        let value = match (key, value) {
            ("required_actions", serde_json::Value::Null) => serde_json::Value::Array(Vec::new()),
            (_, value) => value,
        };
        doc.insert(key.to_string(), value);
    }
    Ok(serde_json::to_string(&doc)?)
}

/// `stored` with `state` written over its engine-owned fields.
pub(crate) fn set_state(stored: &str, state: &SessionState) -> Result<String> {
    let mut doc: serde_json::Map<String, serde_json::Value> = serde_json::from_str(stored)?;
    let serde_json::Value::Object(fields) = serde_json::to_value(state)? else { return Ok(stored.to_string()) };
    for (key, value) in fields {
        doc.insert(key, value);
    }
    Ok(serde_json::to_string(&doc)?)
}
