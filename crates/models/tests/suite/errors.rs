//! Upstream failures become errors that name the provider and what happened.

use super::{KEY, failure, openai};
use models::{ModelError, ModelEvent, ModelRequest, Provider};
use test_support::model_server::{ModelServer, Step};

#[tokio::test]
async fn a_non_2xx_answer_names_the_provider_the_status_and_the_body() {
    let body = r#"{"error":{"message":"The model `nope` does not exist","type":"invalid_request_error"}}"#;
    let server = ModelServer::with_script([Step::error(404, body)]).await.unwrap();
    let (events, error) = failure(openai(&server).stream(&ModelRequest::new("nope"))).await;
    assert!(events.is_empty());
    assert_eq!(error, ModelError::Status { provider: "openai".into(), status: 404, body: body.into(), attempts: 1 });
    assert_eq!(error.to_string(), format!("model provider `openai` answered HTTP 404: {body}"));
    assert_eq!(error.code(), "model_http_error");
    assert_eq!(server.request_count(), 1, "a 404 is not retried");
}

#[tokio::test]
async fn a_stream_that_ends_before_done_is_an_error() {
    let server = ModelServer::with_script([Step::text("half of it").chunks(4).cut_after(3)]).await.unwrap();
    let (events, error) = failure(openai(&server).stream(&ModelRequest::new("m"))).await;
    assert_eq!(events, vec![ModelEvent::TextDelta("ha".into()), ModelEvent::TextDelta("lf ".into())]);
    assert_eq!(error, ModelError::StreamEnded { provider: "openai".into(), expected: "`data: [DONE]`" });
    assert_eq!(error.to_string(), "model provider `openai`: stream ended before `data: [DONE]`");
}

#[tokio::test]
async fn a_connection_broken_mid_stream_is_an_error() {
    let server = ModelServer::with_script([Step::text("abcdef").chunks(3).abort_after(2)]).await.unwrap();
    let (events, error) = failure(openai(&server).stream(&ModelRequest::new("m"))).await;
    assert_eq!(events, vec![ModelEvent::TextDelta("ab".into())]);
    assert!(matches!(&error, ModelError::Transport { provider, .. } if provider == "openai"), "{error:?}");
    assert!(error.to_string().starts_with("model provider `openai`: connection failed mid-response"), "{error}");
}

#[tokio::test]
async fn an_exhausted_script_is_a_500_that_says_so() {
    let server = ModelServer::start().await.unwrap();
    let provider = models::OpenAiChat::new(models::ProviderConfig::new("openai", server.base_url()).settings(
        models::ProviderSettings {
            retry: models::RetryPolicy { max_retries: 0, ..Default::default() },
            ..super::fast_settings()
        },
    ))
    .unwrap();
    let (_, error) = failure(provider.stream(&ModelRequest::new("m"))).await;
    assert!(matches!(&error, ModelError::Status { status: 500, .. }), "{error:?}");
    assert!(error.to_string().contains("script exhausted"), "{error}");
}

#[tokio::test]
async fn errors_never_contain_the_api_key() {
    let server = ModelServer::with_script([Step::error(401, "")]).await.unwrap();
    let (_, error) = failure(openai(&server).stream(&ModelRequest::new("m"))).await;
    assert!(!format!("{error} {error:?}").contains(KEY));
    assert!(!format!("{:?}", openai(&server)).contains(KEY));
}
