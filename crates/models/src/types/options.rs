//! What a request asks of the model's output beyond its context: structured
//! output, how hard to reason and what to show of it, how long to answer.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Structured output: the final text must be JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TextFormat {
    /// A JSON value matching this JSON Schema.
    JsonSchema {
        /// The schema's name, as OpenAI asks for one (`[a-zA-Z0-9_-]`, 64 at most).
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        schema: Value,
        /// Whether the upstream must follow the schema exactly (OpenAI's
        /// strict mode, whose schemas have every property required and no
        /// additional ones) rather than take it as guidance.
        strict: bool,
    },
    /// Any one JSON object.
    JsonObject,
}

impl TextFormat {
    /// A strict schema format with no description.
    pub fn json_schema(name: impl Into<String>, schema: Value) -> Self {
        Self::JsonSchema { name: name.into(), description: None, schema, strict: true }
    }
}

/// How hard a reasoning model should think (OpenAI `reasoning_effort`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningEffort {
    None,
    Minimal,
    Low,
    Medium,
    High,
    #[serde(rename = "xhigh")]
    XHigh,
}

impl ReasoningEffort {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Minimal => "minimal",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::XHigh => "xhigh",
        }
    }
}

/// How much of its reasoning the model should summarize (OpenAI Responses
/// `reasoning.summary`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningSummary {
    /// The most detailed summary the model offers.
    Auto,
    Concise,
    Detailed,
}

impl ReasoningSummary {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Concise => "concise",
            Self::Detailed => "detailed",
        }
    }
}

/// How long and detailed the answer should be (OpenAI `verbosity`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verbosity {
    Low,
    Medium,
    High,
}

impl Verbosity {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_names_on_the_wire_are_the_serde_names() {
        for effort in [
            ReasoningEffort::None,
            ReasoningEffort::Minimal,
            ReasoningEffort::Low,
            ReasoningEffort::Medium,
            ReasoningEffort::High,
            ReasoningEffort::XHigh,
        ] {
            assert_eq!(json!(effort), json!(effort.as_str()));
        }
        for summary in [ReasoningSummary::Auto, ReasoningSummary::Concise, ReasoningSummary::Detailed] {
            assert_eq!(json!(summary), json!(summary.as_str()));
        }
        for verbosity in [Verbosity::Low, Verbosity::Medium, Verbosity::High] {
            assert_eq!(json!(verbosity), json!(verbosity.as_str()));
        }
    }

    #[test]
    fn text_formats_round_trip_tagged() {
        let format = TextFormat::json_schema("answer", json!({"type": "object"}));
        let value = json!(format);
        assert_eq!(
            value,
            json!({"type": "json_schema", "name": "answer", "schema": {"type": "object"}, "strict": true})
        );
        assert_eq!(serde_json::from_value::<TextFormat>(value).unwrap(), format);
        assert_eq!(json!(TextFormat::JsonObject), json!({"type": "json_object"}));
    }
}
