//! The Anthropic Messages provider (`POST {base}/v1/messages`, streamed).
//!
//! How the request's settings are sent:
//! - `reasoning_effort` turns on extended thinking with a budget (minimal and
//!   low 1024 tokens, medium 4096, high 16384, xhigh 32768) inside
//!   `max_tokens`; `none` leaves it off. Thinking blocks stream as reasoning
//!   and are sent back, signed, on the next step, as the API requires.
//! - `text_format`: a JSON Schema goes as `output_config.format`
//!   (structured outputs); `json_object`, which has no setting, becomes
//!   [`JSON_OBJECT_INSTRUCTION`] at the end of the system prompt.
//! - `temperature` and `top_p` are sent unless thinking is on (the API
//!   refuses them together).
//! - Not sent, the API having no such setting: `verbosity`, `service_tier`,
//!   `reasoning_summary`.

mod request;
mod stream;

use crate::driver;
use crate::error::Result;
use crate::provider::{ModelStream, Provider};
use crate::settings::ProviderConfig;
use crate::transport::{self, Endpoint};
use crate::types::ModelRequest;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use std::sync::Arc;

/// The default base URL (`ANTHROPIC_BASE_URL` overrides it).
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The `anthropic-version` header sent with every request.
pub const API_VERSION: &str = "2023-06-01";
/// `max_tokens` when the request sets no `max_output_tokens` (the API requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// The smallest thinking budget the API accepts.
pub const MIN_THINKING_BUDGET: u32 = 1024;
/// What `json_object` adds to the system prompt.
pub const JSON_OBJECT_INSTRUCTION: &str = "Answer with a single JSON object and nothing else.";
/// [`crate::types::Reasoning::origin`] of thinking blocks.
pub const REASONING_ORIGIN: &str = "anthropic";

/// A Messages API endpoint.
#[derive(Debug, Clone)]
pub struct Anthropic {
    endpoint: Arc<Endpoint>,
}

impl Anthropic {
    pub fn new(config: ProviderConfig) -> Result<Self> {
        let mut headers = HeaderMap::new();
        headers.insert(HeaderName::from_static("anthropic-version"), HeaderValue::from_static(API_VERSION));
        if let Some(key) = &config.api_key {
            headers.insert(HeaderName::from_static("x-api-key"), transport::secret_header(key.expose())?);
        }
        let url = format!("{}/v1/messages", config.base_url.trim_end_matches('/'));
        Ok(Self { endpoint: Arc::new(Endpoint::new(config.name, url, headers, config.settings)?) })
    }
}

impl Provider for Anthropic {
    fn name(&self) -> &str {
        &self.endpoint.provider
    }

    fn stream(&self, request: &ModelRequest) -> ModelStream {
        let body = request::body(request, &self.endpoint.provider);
        driver::drive(self.endpoint.clone(), body, stream::MessagesDecoder::new(request.tool_call_deltas))
    }
}
