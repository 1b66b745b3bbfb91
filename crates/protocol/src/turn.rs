//! Turns (= Responses = Messages): one agent run of model steps and tool calls.

use crate::ids::{SessionId, TurnId};
use crate::session::{PromptCacheOptions, TokenUsage};
use serde::{Deserialize, Serialize};

/// Where a turn is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TurnStatus {
    Queued,
    InProgress,
    Waiting,
    Completed,
    Failed,
    Cancelled,
}

impl TurnStatus {
    /// Whether the turn has ended.
    pub fn is_terminal(self) -> bool {
        matches!(self, TurnStatus::Completed | TurnStatus::Failed | TurnStatus::Cancelled)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TurnStatus::Queued => "queued",
            TurnStatus::InProgress => "in_progress",
            TurnStatus::Waiting => "waiting",
            TurnStatus::Completed => "completed",
            TurnStatus::Failed => "failed",
            TurnStatus::Cancelled => "cancelled",
        }
    }
}

/// Why a turn failed: a stable code and a sentence naming what failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TurnError {
    pub code: String,
    pub message: String,
}

/// The codes the `openai` client's `SessionTurnError` knows.
pub const CLIENT_CODES: [&str; 23] = [
    "context_length_exceeded",
    "max_output_tokens",
    "usage_limit_exceeded",
    "project_spend_limit_exceeded",
    "organization_spend_limit_exceeded",
    "organization_usage_limit_exceeded",
    "billing_not_active",
    "credit_balance_exhausted",
    "rate_limit_exceeded",
    "flex_unavailable",
    "server_overloaded",
    "cyber_policy",
    "misalignment_policy_violation",
    "connection_failed",
    "server_error",
    "authentication_error",
    "invalid_request",
    "resource_not_found",
    "sandbox_error",
    "executor_version_incompatible",
    "active_turn_not_steerable",
    "request_timeout",
    "internal_error",
];

/// The client's category of this server's own reasons.
const CATEGORIES: [(&str, &str); 4] = [
    ("max_steps_exceeded", "invalid_request"),
    ("server_restarted", "internal_error"),
    ("node_lost", "internal_error"),
    ("setup_failed", "sandbox_error"),
];

impl TurnError {
    /// An error of `code`. A reason the client's codes lack
    /// (`max_steps_exceeded`, `server_restarted`, …) becomes the client's
    /// category of it, the reason kept at the start of the message.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        let (code, message) = (code.into(), message.into());
        if CLIENT_CODES.contains(&code.as_str()) {
            return Self { code, message };
        }
        let category = CATEGORIES.iter().find(|(reason, _)| *reason == code).map_or("internal_error", |(_, c)| *c);
        Self { code: category.into(), message: format!("{code}: {message}") }
    }
}

/// The Turn resource (`agent.session.turn`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Turn {
    pub id: TurnId,
    pub object: String,
    pub agent_id: String,
    pub session_id: SessionId,
    pub status: TurnStatus,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub completed_at: Option<i64>,
    pub error: Option<TurnError>,
    pub subagent_id: Option<String>,
    pub usage: Option<TokenUsage>,
    pub prompt_cache_options: Option<PromptCacheOptions>,
    /// Rebyte extension: submitted as a background response.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub background: bool,
    /// The settings its request sent for it alone (Responses API).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<crate::turn_settings::TurnSettings>,
}

impl Turn {
    /// A new queued turn.
    pub fn queued(id: TurnId, session_id: SessionId, agent_id: &str, at: i64) -> Self {
        Self {
            id,
            object: "agent.session.turn".into(),
            agent_id: agent_id.into(),
            session_id,
            status: TurnStatus::Queued,
            created_at: at,
            started_at: None,
            completed_at: None,
            error: None,
            subagent_id: None,
            usage: None,
            prompt_cache_options: None,
            background: false,
            settings: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::TurnError;

    #[test]
    fn a_reason_outside_the_clients_codes_becomes_its_category_and_leads_the_message() {
        let kept = TurnError::new("rate_limit_exceeded", "slow down");
        assert_eq!((kept.code.as_str(), kept.message.as_str()), ("rate_limit_exceeded", "slow down"));
        let steps = TurnError::new("max_steps_exceeded", "the limit is 2");
        assert_eq!(
            (steps.code.as_str(), steps.message.as_str()),
            ("invalid_request", "max_steps_exceeded: the limit is 2")
        );
        assert_eq!(TurnError::new("setup_failed", "exit 3").code, "sandbox_error");
        assert_eq!(TurnError::new("something_new", "x").code, "internal_error");
    }
}
