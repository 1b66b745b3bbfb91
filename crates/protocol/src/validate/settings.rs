//! Checks of output formats and of one response's own settings: a JSON
//! Schema must be one (checked against its draft's meta-schema; no remote
//! `$ref` is ever fetched), sampling values must be in the ranges providers
//! accept, and `include` values name what this server can add.

use super::{Result, invalid};
use crate::agent::TextFormat;
use crate::turn_settings::{ResponseTextFormat, TurnSettings};
use serde_json::{Map, Value};

/// Structured output schemas must fit in this many bytes of JSON.
pub const SCHEMA_MAX_BYTES: usize = 256 * 1024;
/// The longest name of a `json_schema` format (OpenAI's limit).
pub const FORMAT_NAME_MAX: usize = 64;

/// `schema` is a JSON Schema.
pub fn json_schema(param: &str, schema: &Map<String, Value>) -> Result {
    let size = serde_json::to_vec(schema).map(|v| v.len()).unwrap_or(usize::MAX);
    if size > SCHEMA_MAX_BYTES {
        return Err(invalid(param, format!("the schema must fit in {SCHEMA_MAX_BYTES} bytes of JSON, got {size}")));
    }
    let schema = Value::Object(schema.clone());
    let checked =
        jsonschema::meta::validator_for(&schema).and_then(|meta| meta.validate(&schema).map_err(|e| e.to_owned()));
    checked.map_err(|e| invalid(param, format!("not a valid JSON Schema: {e}")))
}

/// An agent's `text.format`.
pub fn agent_format(param: &str, format: &TextFormat) -> Result {
    match format {
        TextFormat::Text => Ok(()),
        TextFormat::JsonSchema { schema } => json_schema(&format!("{param}.schema"), schema),
    }
}

/// A response's `text.format`.
pub fn response_format(param: &str, format: &ResponseTextFormat) -> Result {
    match format {
        ResponseTextFormat::JsonSchema { name, schema, .. } => {
            let valid_name = !name.is_empty()
                && name.len() <= FORMAT_NAME_MAX
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if !valid_name {
                return Err(invalid(
                    format!("{param}.name"),
                    format!("the name must be 1 to {FORMAT_NAME_MAX} letters, digits, '_' or '-', got '{name}'"),
                ));
            }
            json_schema(&format!("{param}.schema"), schema)
        }
        ResponseTextFormat::Text | ResponseTextFormat::JsonObject => Ok(()),
    }
}

fn within(param: &str, value: Option<f64>, low: f64, high: f64) -> Result {
    match value {
        Some(v) if !(low..=high).contains(&v) => {
            Err(invalid(param, format!("{param} must be between {low} and {high}, got {v}")))
        }
        _ => Ok(()),
    }
}

/// One response's own settings.
pub fn turn_settings(s: &TurnSettings) -> Result {
    within("temperature", s.temperature, 0.0, 2.0)?;
    within("top_p", s.top_p, 0.0, 1.0)?;
    if s.max_output_tokens == Some(0) {
        return Err(invalid("max_output_tokens", "max_output_tokens must be at least 1"));
    }
    match s.text.as_ref().and_then(|t| t.format.as_ref()) {
        Some(format) => response_format("text.format", format),
        None => Ok(()),
    }
}

/// What each `include` value of the client would add, none of which this
/// server produces.
const INCLUDABLE: [(&str, &str); 8] = [
    ("file_search_call.results", "file search"),
    ("web_search_call.results", "web search"),
    ("web_search_call.action.sources", "web search"),
    ("message.input_image.image_url", "image input"),
    ("computer_call_output.output.image_url", "computer use"),
    ("code_interpreter_call.outputs", "the code interpreter"),
    ("reasoning.encrypted_content", "encrypted reasoning (reasoning summaries are always included)"),
    ("message.output_text.logprobs", "log probabilities"),
];

/// `include` values: each one the client knows is refused by name (this
/// server has none of those outputs), any other as unknown.
pub fn include(param: &str, values: &[String]) -> Result {
    let Some(value) = values.first() else { return Ok(()) };
    Err(match INCLUDABLE.iter().find(|(v, _)| v == value) {
        Some((_, feature)) => {
            invalid(param, format!("include '{value}' is not supported by this server: it offers no {feature}"))
        }
        None => invalid(param, format!("unknown include value '{value}'")),
    })
}
