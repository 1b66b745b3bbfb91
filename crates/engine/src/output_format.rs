//! What a step asks of the model's output: the turn's own settings (a
//! Responses request's) win over its agent's, field by field. An agent's
//! defaults (`medium` verbosity, the `auto` tier) are the upstreams' own, so
//! they are left unsent: models that know no such parameter still work.

use models::{ModelRequest, ReasoningEffort, ReasoningSummary, TextFormat, Verbosity};
use protocol::agent::{
    AgentConfig, Effort, ServiceTier, Summary, TextFormat as AgentFormat, Verbosity as AgentVerbosity,
};
use protocol::turn_settings::{ResponseTextFormat, TurnSettings};
use serde_json::Value;

/// The name an agent's format (which has none) is sent under.
const AGENT_FORMAT_NAME: &str = "output";

/// Sets the request's structured output, sampling, limits, reasoning and tier.
pub fn apply(req: &mut ModelRequest, agent: &AgentConfig, turn: Option<&TurnSettings>) {
    let own_text = turn.and_then(|s| s.text.as_ref());
    req.text_format = match own_text.and_then(|t| t.format.as_ref()) {
        Some(format) => response_format(format),
        None => agent_format(&agent.text.format),
    };
    let verbosity =
        own_text.and_then(|t| t.verbosity).or(Some(agent.text.verbosity).filter(|v| *v != AgentVerbosity::Medium));
    req.verbosity = verbosity.map(self::verbosity);
    req.max_output_tokens = turn.and_then(|s| s.max_output_tokens);
    req.temperature = turn.and_then(|s| s.temperature);
    req.top_p = turn.and_then(|s| s.top_p);
    let own_reasoning = turn.and_then(|s| s.reasoning.as_ref());
    let effort = own_reasoning.and_then(|r| r.effort).or(agent.reasoning.effort);
    req.reasoning_effort = effort.map(reasoning_effort);
    let summary = own_reasoning.and_then(|r| r.summary).or(agent.reasoning.summary);
    req.reasoning_summary = summary.map(reasoning_summary);
    let tier = turn.and_then(|s| s.service_tier).or(Some(agent.service_tier).filter(|t| *t != ServiceTier::Auto));
    req.service_tier = tier.map(service_tier);
}

fn agent_format(format: &AgentFormat) -> Option<TextFormat> {
    match format {
        AgentFormat::Text => None,
        // The client builds agents' schemas strict (`output_type=`).
        AgentFormat::JsonSchema { schema } => {
            Some(TextFormat::json_schema(AGENT_FORMAT_NAME, Value::Object(schema.clone())))
        }
    }
}

fn response_format(format: &ResponseTextFormat) -> Option<TextFormat> {
    match format {
        ResponseTextFormat::Text => None,
        ResponseTextFormat::JsonObject => Some(TextFormat::JsonObject),
        ResponseTextFormat::JsonSchema { name, description, schema, strict } => Some(TextFormat::JsonSchema {
            name: name.clone(),
            description: description.clone(),
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

fn reasoning_summary(summary: Summary) -> ReasoningSummary {
    match summary {
        Summary::Auto => ReasoningSummary::Auto,
        Summary::Concise => ReasoningSummary::Concise,
        Summary::Detailed => ReasoningSummary::Detailed,
    }
}

fn verbosity(v: AgentVerbosity) -> Verbosity {
    match v {
        AgentVerbosity::Low => Verbosity::Low,
        AgentVerbosity::Medium => Verbosity::Medium,
        AgentVerbosity::High => Verbosity::High,
    }
}

/// The tier's name as the client spells it, passed through.
fn service_tier(tier: ServiceTier) -> String {
    serde_json::to_value(tier).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::agent::Reasoning;
    use protocol::turn_settings::ResponseText;

    fn agent() -> AgentConfig {
        AgentConfig { model: "m".into(), ..AgentConfig::default() }
    }

    #[test]
    fn an_agents_defaults_are_left_unsent() {
        let mut req = ModelRequest::new("m");
        apply(&mut req, &agent(), None);
        assert_eq!((req.verbosity, req.service_tier, req.reasoning_summary, req.text_format), (None, None, None, None));
    }

    #[test]
    fn a_turns_settings_win_over_its_agents() {
        let mut a = agent();
        a.text.verbosity = AgentVerbosity::High;
        a.service_tier = ServiceTier::Flex;
        a.reasoning = Reasoning { effort: Some(Effort::Low), summary: Some(Summary::Concise) };
        let turn = TurnSettings {
            text: Some(ResponseText {
                format: Some(ResponseTextFormat::JsonObject),
                verbosity: Some(AgentVerbosity::Low),
            }),
            temperature: Some(0.5),
            top_p: Some(0.9),
            max_output_tokens: Some(100),
            reasoning: Some(Reasoning { effort: None, summary: Some(Summary::Detailed) }),
            service_tier: Some(ServiceTier::Priority),
        };
        let mut req = ModelRequest::new("m");
        apply(&mut req, &a, Some(&turn));
        assert_eq!(req.text_format, Some(TextFormat::JsonObject));
        assert_eq!(req.verbosity, Some(Verbosity::Low));
        assert_eq!((req.temperature, req.top_p, req.max_output_tokens), (Some(0.5), Some(0.9), Some(100)));
        assert_eq!(req.reasoning_effort, Some(ReasoningEffort::Low));
        assert_eq!(req.reasoning_summary, Some(ReasoningSummary::Detailed));
        assert_eq!(req.service_tier.as_deref(), Some("priority"));
        let mut req = ModelRequest::new("m");
        apply(&mut req, &a, None);
        assert_eq!((req.verbosity, req.service_tier.as_deref()), (Some(Verbosity::High), Some("flex")));
    }
}
