//! Checking `call_tool` arguments against the tool's current `inputSchema` with `jsonschema`
//! (built without remote `$ref` fetching: a schema can only refer to itself).

use crate::catalog::ToolInfo;
use crate::error::{McpError, Result};
use serde_json::{Map, Value};

/// Most violations listed in one error.
const MAX_REPORTED: usize = 10;

/// The arguments as an object, if they satisfy `tool.inputSchema`.
pub fn arguments(server: &str, tool: &ToolInfo, arguments: &Value) -> Result<Map<String, Value>> {
    let invalid =
        |errors: Vec<String>| McpError::InvalidArguments { server: server.to_owned(), tool: tool.name.clone(), errors };
    let object = match arguments {
        Value::Object(object) => object.clone(),
        Value::Null => Map::new(),
        other => return Err(invalid(vec![format!("arguments must be a JSON object, not {}", kind(other))])),
    };
    let schema = Value::Object(tool.input_schema.as_ref().clone());
    let validator = jsonschema::validator_for(&schema).map_err(|error| McpError::InvalidSchema {
        server: server.to_owned(),
        tool: tool.name.clone(),
        message: error.to_string(),
    })?;
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
