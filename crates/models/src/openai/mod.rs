//! The OpenAI Chat Completions provider (`POST {base}/chat/completions`,
//! streamed): OpenAI itself and the many servers that speak its format
//! (vLLM, llama.cpp, Ollama, LM Studio, gateways).
//!
//! Sent: `reasoning_effort`, `response_format` (`json_schema` with its
//! `strict`, or `json_object`), `max_completion_tokens`, `temperature`,
//! `top_p`, `verbosity`, `service_tier`; a server that does not know one
//! answers as it does (most ignore unknown fields). Not sent:
//! `reasoning_summary` (no such field) and the history's reasoning.
//! Streamed reasoning arrives as `reasoning_content` (vLLM, llama.cpp,
//! DeepSeek) or `reasoning` (Ollama, OpenRouter) deltas.

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

/// [`crate::types::Reasoning::origin`] of the reasoning this wire format
/// streams (`reasoning_content` / `reasoning` deltas). Chat Completions takes
/// no reasoning back, so none is ever sent.
pub const REASONING_ORIGIN: &str = "openai_chat";

/// The default base URL (`OPENAI_BASE_URL` overrides it).
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// A Chat Completions endpoint.
#[derive(Debug, Clone)]
pub struct OpenAiChat {
    endpoint: Arc<Endpoint>,
}

impl OpenAiChat {
    pub fn new(config: ProviderConfig) -> Result<Self> {
        let mut headers = HeaderMap::new();
        if let Some(key) = &config.api_key {
            headers.insert(AUTHORIZATION, transport::secret_header(&format!("Bearer {}", key.expose()))?);
        }
        let url = format!("{}/chat/completions", config.base_url.trim_end_matches('/'));
        Ok(Self { endpoint: Arc::new(Endpoint::new(config.name, url, headers, config.settings)?) })
    }
}

/// The JSON body a Chat Completions call sends for `request` (what
/// [`Provider::stream`] posts), for benchmarks and diagnostics.
pub fn request_body(request: &ModelRequest) -> Result<bytes::Bytes> {
    request::body(request, "openai")
}

impl Provider for OpenAiChat {
    fn name(&self) -> &str {
        &self.endpoint.provider
    }

    fn stream(&self, request: &ModelRequest) -> ModelStream {
        let body = request::body(request, &self.endpoint.provider);
        driver::drive(self.endpoint.clone(), body, stream::ChatDecoder::new(request.tool_call_deltas))
    }
}
