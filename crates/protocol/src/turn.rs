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

impl TurnError {
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self { code: code.into(), message: message.into() }
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
