//! Checking `call_tool` arguments against the tool's current `inputSchema` with `jsonschema`
//! (built without remote `$ref` fetching: a schema can only refer to itself).
//!
//! Every call validates against the schema it has just fetched, which is nearly always equal to
//! the one of the call before: compiled validators are kept by tool name and reused only for a
//! schema equal to the one they were compiled from (a changed schema compiles anew).

use crate::catalog::ToolInfo;
use crate::error::{McpError, Result};
use jsonschema::Validator;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// Most violations listed in one error.
const MAX_REPORTED: usize = 10;
/// Most validators kept for one tool name (servers may share names with other schemas).
const PER_NAME: usize = 8;
/// Most tool names kept; beyond, the cache starts over.
const MAX_NAMES: usize = 4096;

type Schema = Arc<Map<String, Value>>;
/// Compiled validators by tool name, each with the schema it was compiled from.
type Validators = Mutex<HashMap<String, Vec<(Schema, Arc<Validator>)>>>;

fn validators() -> &'static Validators {
    static VALIDATORS: OnceLock<Validators> = OnceLock::new();
    VALIDATORS.get_or_init(Mutex::default)
}

/// The validator of `tool`'s current schema: a cached one compiled from an equal schema, or a
/// new one (then cached).
fn validator(server: &str, tool: &ToolInfo) -> Result<Arc<Validator>> {
    let cache = validators();
    {
        let cached = cache.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let same = |schema: &Schema| Arc::ptr_eq(schema, &tool.input_schema) || **schema == *tool.input_schema;
        if let Some((_, validator)) = cached.get(&tool.name).and_then(|list| list.iter().find(|(s, _)| same(s))) {
            return Ok(validator.clone());
        }
    }
    // Compiled outside the lock: another caller may compile the same schema meanwhile (harmless).
    let schema = Value::Object(tool.input_schema.as_ref().clone());
    let validator = Arc::new(jsonschema::validator_for(&schema).map_err(|error| McpError::InvalidSchema {
        server: server.to_owned(),
        tool: tool.name.clone(),
        message: error.to_string(),
    })?);
    let mut cached = cache.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if cached.len() >= MAX_NAMES && !cached.contains_key(&tool.name) {
        cached.clear();
    }
    let list = cached.entry(tool.name.clone()).or_default();
    if list.len() >= PER_NAME {
        list.remove(0);
    }
    list.push((tool.input_schema.clone(), validator.clone()));
    Ok(validator)
}

/// The arguments as an object, if they satisfy `tool.inputSchema`.
pub fn arguments(server: &str, tool: &ToolInfo, arguments: &Value) -> Result<Map<String, Value>> {
    let invalid =
        |errors: Vec<String>| McpError::InvalidArguments { server: server.to_owned(), tool: tool.name.clone(), errors };
    let object = match arguments {
        Value::Object(object) => object.clone(),
        Value::Null => Map::new(),
        other => return Err(invalid(vec![format!("arguments must be a JSON object, not {}", kind(other))])),
    };
    let validator = validator(server, tool)?;
    let instance = Value::Object(object);
    let errors: Vec<String> = validator
        .iter_errors(&instance)
        .take(MAX_REPORTED)
        .map(|error| {
            let path = error.instance_path().to_string();
            if path.is_empty() { error.to_string() } else { format!("at {path}: {error}") }
        })
        .collect();
    if !errors.is_empty() {
        return Err(invalid(errors));
    }
    match instance {
        Value::Object(object) => Ok(object),
        _ => Ok(Map::new()),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(schema: Value) -> ToolInfo {
        let Value::Object(schema) = schema else { panic!("a schema object") };
        ToolInfo::new("validate_cache_probe", "", schema)
    }

    #[test]
    fn a_changed_schema_under_the_same_name_is_compiled_anew() {
        let strings = tool(json!({"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}));
        let numbers = tool(json!({"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}));
        for _ in 0..2 {
            assert!(arguments("s", &strings, &json!({"x": "a"})).is_ok());
            assert!(arguments("s", &strings, &json!({"x": 1})).is_err());
            assert!(arguments("s", &numbers, &json!({"x": 1})).is_ok());
            assert!(arguments("s", &numbers, &json!({"x": "a"})).is_err());
            // An equal schema in a new allocation (a new fetch) reuses the compiled validator.
            let again = tool(Value::Object(strings.input_schema.as_ref().clone()));
            assert!(arguments("s", &again, &json!({"x": 1})).is_err());
        }
    }
}
