//! The Conversations view of a Session: the same row, `conv_<uuid>` ids.

use crate::Metadata;
use crate::session::SessionRecord;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `POST /v1/conversations`.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConversationCreate {
    #[serde(default)]
    pub items: Option<Vec<Value>>,
    #[serde(default)]
    pub metadata: Option<Metadata>,
}

/// `POST /v1/conversations/{conversation_id}`: metadata is required (null clears).
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConversationUpdate {
    #[serde(default)]
    pub metadata: crate::agent::Patch<Metadata>,
}

/// The Conversation resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Conversation {
    pub id: String,
    pub object: String,
    pub created_at: i64,
    pub metadata: Metadata,
}

/// `DELETE /v1/conversations/{conversation_id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ConversationDeleted {
    pub id: String,
    pub object: String,
    pub deleted: bool,
}

impl Conversation {
    pub fn of(session: &SessionRecord) -> Self {
        Self {
            id: session.id.conversation(),
            object: "conversation".into(),
            created_at: session.created_at,
            metadata: session.metadata.clone(),
        }
    }
}
