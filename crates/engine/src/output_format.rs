//! What a step asks of the model's output: the turn's own settings (a
//! Responses request's) win over its agent's, field by field.

use models::{ModelRequest, ReasoningEffort, TextFormat};
use protocol::agent::{AgentConfig, Effort, TextFormat as AgentFormat};
use protocol::turn_settings::{ResponseTextFormat, TurnSettings};
use serde_json::Value;

/// The name an agent's format (which has none) is sent under.
const AGENT_FORMAT_NAME: &str = "output";

/// Sets the request's structured output, output limit and reasoning effort.
pub fn apply(req: &mut ModelRequest, agent: &AgentConfig, turn: Option<&TurnSettings>) {
    let own = turn.and_then(|s| s.text.as_ref()).and_then(|t| t.format.as_ref());
    req.text_format = match own {
        Some(format) => response_format(format),
        None => agent_format(&agent.text.format),
    };
    req.max_output_tokens = turn.and_then(|s| s.max_output_tokens);
    let effort = turn.and_then(|s| s.reasoning.as_ref()).and_then(|r| r.effort).or(agent.reasoning.effort);
    req.reasoning_effort = effort.map(reasoning_effort);
}

fn agent_format(format: &AgentFormat) -> Option<TextFormat> {
    match format {
        AgentFormat::Text => None,
        // The client builds agents' schemas strict (`output_type=`).
        AgentFormat::JsonSchema { schema } => {
            Some(TextFormat { name: AGENT_FORMAT_NAME.into(), schema: Value::Object(schema.clone()), strict: true })
        }
    }
}

fn response_format(format: &ResponseTextFormat) -> Option<TextFormat> {
    match format {
        ResponseTextFormat::Text | ResponseTextFormat::JsonObject => None,
        ResponseTextFormat::JsonSchema { name, schema, strict, .. } => Some(TextFormat {
            name: name.clone(),
            schema: Value::Object(schema.clone()),
            strict: strict.unwrap_or(false),
        }),
    }
}

/// The model's effort for the agent's: `max` is the highest the providers know.
fn reasoning_effort(effort: Effort) -> ReasoningEffort {
    match effort {
        Effort::None => ReasoningEffort::None,
        Effort::Minimal => ReasoningEffort::Minimal,
        Effort::Low => ReasoningEffort::Low,
        Effort::Medium => ReasoningEffort::Medium,
        Effort::High => ReasoningEffort::High,
        Effort::Xhigh | Effort::Max => ReasoningEffort::XHigh,
    }
}
