//! The model's reasoning, provider-neutral: the text a person may read, and
//! what the provider needs back verbatim to continue from it. It is kept in
//! the history ([`crate::Message::Reasoning`]), so it serializes.

use serde::{Deserialize, Serialize};

/// One complete reasoning block of a model step.
///
/// Opaque data is only meaningful to the wire format that produced it: each
/// encoder sends a block back only when [`Self::origin`] is its own (one of
/// [`crate::openai::REASONING_ORIGIN`], [`crate::anthropic::REASONING_ORIGIN`],
/// [`crate::openai_responses::REASONING_ORIGIN`]) and drops it otherwise.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reasoning {
    /// The summary or thinking text; empty for a redacted block.
    pub text: String,
    /// Opaque data the provider needs back verbatim on the next step:
    /// Anthropic's `signature` (or a `redacted_thinking` block's `data`),
    /// the Responses API's `encrypted_content`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// The upstream withheld the text; [`Self::signature`] holds the data.
    #[serde(default)]
    pub redacted: bool,
    /// The upstream's id of the reasoning item (Responses API).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The wire format that produced the block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
}

impl Reasoning {
    /// Plain reasoning text of this origin, with nothing opaque.
    pub fn new(origin: &str, text: impl Into<String>) -> Self {
        Self { text: text.into(), origin: Some(origin.to_owned()), ..Self::default() }
    }

    /// Whether the wire format named `origin` produced this block.
    pub fn is_from(&self, origin: &str) -> bool {
        self.origin.as_deref() == Some(origin)
    }
}
