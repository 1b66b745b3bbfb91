//! Shared helpers: providers pointed at a scripted server, with short
//! timeouts and fast retries so failure tests take milliseconds.

mod anthropic;
mod cancel;
mod errors;
mod openai_stream;
mod overhead;
mod reasoning;
mod registry;
mod retry;
mod timeouts;

use futures::StreamExt;
use models::{
    Anthropic, ApiKey, ModelError, ModelEvent, ModelStream, OpenAiChat, OpenAiResponses, ProviderConfig,
    ProviderSettings, RetryPolicy, Timeouts,
};
use std::time::Duration;
use test_support::model_server::ModelServer;

pub const KEY: &str = "sk-test-secret-key";

pub fn fast_settings() -> ProviderSettings {
    ProviderSettings {
        timeouts: Timeouts {
            connect: Duration::from_millis(500),
            response: Duration::from_millis(500),
            idle: Duration::from_millis(300),
        },
        retry: RetryPolicy {
            max_retries: 3,
            initial_backoff: Duration::from_millis(5),
            max_backoff: Duration::from_millis(20),
        },
    }
}

pub fn openai(server: &ModelServer) -> OpenAiChat {
    OpenAiChat::new(
        ProviderConfig::new("openai", server.base_url()).api_key(ApiKey::new(KEY)).settings(fast_settings()),
    )
    .unwrap()
}

pub fn responses(server: &ModelServer) -> OpenAiResponses {
    OpenAiResponses::new(
        ProviderConfig::new("responses", server.base_url()).api_key(ApiKey::new(KEY)).settings(fast_settings()),
    )
    .unwrap()
}

pub fn anthropic(server: &ModelServer) -> Anthropic {
    Anthropic::new(
        ProviderConfig::new("anthropic", server.anthropic_base_url())
            .api_key(ApiKey::new(KEY))
            .settings(fast_settings()),
    )
    .unwrap()
}

/// Every event up to the end or the first error.
pub async fn drain(mut stream: ModelStream) -> (Vec<ModelEvent>, Option<ModelError>) {
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => events.push(event),
            Err(error) => {
                assert!(stream.next().await.is_none(), "the stream ends after its first error");
                return (events, Some(error));
            }
        }
    }
    (events, None)
}

/// The error of a stream that must fail, and the events before it.
pub async fn failure(stream: ModelStream) -> (Vec<ModelEvent>, ModelError) {
    match drain(stream).await {
        (events, Some(error)) => (events, error),
        (events, None) => panic!("expected the stream to fail; it yielded {events:?}"),
    }
}
