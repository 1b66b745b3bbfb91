//! The OpenAI Responses provider (`POST {base}/responses`, streamed): current
//! OpenAI models and the local servers that serve `/v1/responses`.
//!
//! Stateless on purpose: every request carries the whole history and is sent
//! with `store: false`, so `previous_response_id` is never relied on (the
//! upstream keeps nothing, and a retry or another node sends the same thing).
//! Reasoning comes back with its `encrypted_content` (asked for through
//! `include` whenever reasoning is configured) and goes back in the next
//! step's input; without it, a reasoning item could only be found on the
//! upstream's storage, so it is dropped.
//!
//! Sent: `reasoning.effort` and `reasoning.summary`, `text.format`
//! (`json_schema` with its `strict`, or `json_object`), `text.verbosity`,
//! `max_output_tokens`, `temperature`, `top_p`, `service_tier`.

mod request;
mod stream;

use crate::driver;
use crate::error::Result;
use crate::provider::{ModelStream, Provider};
use crate::settings::ProviderConfig;
use crate::transport::{self, Endpoint};
use crate::types::ModelRequest;
use reqwest::header::{AUTHORIZATION, HeaderMap};
use std::sync::Arc;

/// [`crate::types::Reasoning::origin`] of reasoning items from this wire format.
pub const REASONING_ORIGIN: &str = "openai_responses";

/// A Responses API endpoint.
#[derive(Debug, Clone)]
pub struct OpenAiResponses {
    endpoint: Arc<Endpoint>,
}

impl OpenAiResponses {
    pub fn new(config: ProviderConfig) -> Result<Self> {
        let mut headers = HeaderMap::new();
        if let Some(key) = &config.api_key {
            headers.insert(AUTHORIZATION, transport::secret_header(&format!("Bearer {}", key.expose()))?);
        }
        let url = format!("{}/responses", config.base_url.trim_end_matches('/'));
        Ok(Self { endpoint: Arc::new(Endpoint::new(config.name, url, headers, config.settings)?) })
    }
}

impl Provider for OpenAiResponses {
    fn name(&self) -> &str {
        &self.endpoint.provider
    }

    fn stream(&self, request: &ModelRequest) -> ModelStream {
        let body = request::body(request, &self.endpoint.provider);
        driver::drive(self.endpoint.clone(), body, stream::ResponsesDecoder::new(request.tool_call_deltas))
    }
}
