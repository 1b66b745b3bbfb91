//! The Anthropic Messages provider (`POST {base}/v1/messages`, streamed).
//!
//! Not translated (yet): `reasoning_effort` (extended thinking would need its
//! signed thinking blocks kept in the history) and `text_format`; both are
//! ignored for this provider.

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
