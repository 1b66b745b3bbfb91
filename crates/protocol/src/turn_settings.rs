//! What one turn runs with beyond its session's agent: the settings a
//! Responses API request sends for that response alone (its text format,
//! sampling, output limit, reasoning and service tier). Sessions API turns
//! have none; their agent's configuration is all there is.

use crate::agent::{Reasoning, ServiceTier, Verbosity};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// The Responses API's `text.format`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResponseTextFormat {
    #[default]
    Text,
    /// The answer is JSON matching `schema`.
    JsonSchema {
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        schema: Map<String, Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        strict: Option<bool>,
    },
    /// The answer is one JSON object.
    JsonObject,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonSchemaFields {
    name: String,
    #[serde(default)]
    description: Option<String>,
    schema: Map<String, Value>,
    #[serde(default)]
    strict: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoFields {}

impl<'de> Deserialize<'de> for ResponseTextFormat {
    // By hand, so that errors inside a format name their field path.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (kind, rest) = crate::tagged::split::<D>(d, &["text", "json_schema", "json_object"])?;
        match kind.as_str() {
            "text" => crate::tagged::variant::<NoFields, D>(rest).map(|_| Self::Text),
            "json_object" => crate::tagged::variant::<NoFields, D>(rest).map(|_| Self::JsonObject),
            _ => crate::tagged::variant::<JsonSchemaFields, D>(rest).map(|f| Self::JsonSchema {
                name: f.name,
                description: f.description,
                schema: f.schema,
                strict: f.strict,
            }),
        }
    }
}

/// The Responses API's `text`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResponseText {
    #[serde(default)]
    pub format: Option<ResponseTextFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

/// One turn's own settings; each one set wins over the agent's.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TurnSettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<ResponseText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Reasoning>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_tier: Option<ServiceTier>,
}

impl TurnSettings {
    /// Whether nothing is set (the turn runs as its agent says).
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// How a new turn is asked for: in the background or not (Responses API
/// `background`), and with its own settings.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NewTurn {
    #[serde(default)]
    pub background: bool,
    #[serde(default)]
    pub settings: Option<TurnSettings>,
}

impl NewTurn {
    /// A turn that runs as its agent says and is waited for.
    pub fn plain() -> Self {
        Self::default()
    }
}
