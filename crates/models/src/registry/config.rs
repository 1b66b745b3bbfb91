//! The model part of `rebyte.toml`: `[providers.<name>]` and
//! `[models."<name>"]` tables. Other top-level tables belong to other parts of
//! the server and are ignored here; unknown keys inside these two tables are
//! errors, so a typo does not silently route a model elsewhere.

use crate::error::{ModelError, Result};
use crate::settings::ProviderSettings;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::time::Duration;

#[derive(Debug, Default, Deserialize)]
pub(crate) struct FileConfig {
    #[serde(default)]
    pub(crate) providers: BTreeMap<String, ProviderEntry>,
    #[serde(default)]
    pub(crate) models: BTreeMap<String, ModelEntry>,
}

/// The wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// OpenAI Chat Completions.
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
    /// OpenAI Responses (`kind = "openai_responses"`).
    #[serde(rename = "openai_responses")]
    OpenAiResponses,
}

impl ProviderKind {
    pub(crate) fn default_base_url(self) -> &'static str {
        match self {
            Self::OpenAi | Self::OpenAiResponses => crate::openai::DEFAULT_BASE_URL,
            Self::Anthropic => crate::anthropic::DEFAULT_BASE_URL,
        }
    }
}

/// `[providers.<name>]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProviderEntry {
    /// Required, except for the built-in names `openai` and `anthropic`.
    pub(crate) kind: Option<ProviderKind>,
    pub(crate) base_url: Option<String>,
    /// The environment variable holding the key; when named here it must be set.
    pub(crate) api_key_env: Option<String>,
    pub(crate) connect_timeout_ms: Option<u64>,
    pub(crate) response_timeout_ms: Option<u64>,
    pub(crate) idle_timeout_ms: Option<u64>,
    pub(crate) max_retries: Option<u32>,
}

impl ProviderEntry {
    pub(crate) fn apply(&self, mut settings: ProviderSettings) -> ProviderSettings {
        let ms = Duration::from_millis;
        if let Some(v) = self.connect_timeout_ms {
            settings.timeouts.connect = ms(v);
        }
        if let Some(v) = self.response_timeout_ms {
            settings.timeouts.response = ms(v);
        }
        if let Some(v) = self.idle_timeout_ms {
            settings.timeouts.idle = ms(v);
        }
        if let Some(v) = self.max_retries {
            settings.retry.max_retries = v;
        }
        settings
    }
}

/// `[models."<name>"]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ModelEntry {
    /// A `[providers.<name>]` key, or the built-in `openai` / `anthropic`.
    pub(crate) provider: String,
    /// Overrides the provider's base URL for this model only.
    pub(crate) base_url: Option<String>,
    /// Overrides the provider's key variable for this model only.
    pub(crate) api_key_env: Option<String>,
    /// The name sent upstream; defaults to the model name itself.
    pub(crate) upstream: Option<String>,
}

pub(crate) fn parse(text: &str, origin: &str) -> Result<FileConfig> {
    toml::from_str(text).map_err(|error| ModelError::Config { message: format!("{origin}: {error}") })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typo_inside_a_model_table_is_an_error_naming_it() {
        let error = parse("[models.m]\nprovider = \"openai\"\nupstraem = \"x\"\n", "rebyte.toml").unwrap_err();
        assert!(error.to_string().contains("upstraem"), "{error}");
    }

    #[test]
    fn other_sections_of_the_file_are_ignored() {
        let config = parse("[server]\nlisten = \"x\"\n[models.m]\nprovider = \"openai\"\n", "rebyte.toml").unwrap();
        assert_eq!(config.models.len(), 1);
    }
}
