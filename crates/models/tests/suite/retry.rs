//! Retryable failures are retried with backoff, but only before anything was
//! yielded to the caller.

use super::{failure, fast_settings, openai};
use models::{ModelError, ModelEvent, ModelRequest, ModelResponse, OpenAiChat, Provider, ProviderConfig};
use test_support::model_server::{ModelServer, Step};

#[tokio::test]
async fn a_429_then_success_is_retried_transparently() {
    let server = ModelServer::with_script([Step::error(429, r#"{"error":{"message":"slow down"}}"#), Step::text("ok")])
        .await
        .unwrap();
    let answer = ModelResponse::collect(openai(&server).stream(&ModelRequest::new("m"))).await.unwrap();
    assert_eq!(answer.text, "ok");
    assert_eq!(server.request_count(), 2);
    assert_eq!(server.requests()[0].body, server.requests()[1].body, "the same request is sent again");
}

#[tokio::test]
async fn server_errors_502_503_500_are_retried_until_success() {
    let server = ModelServer::with_script([
        Step::error(503, "unavailable"),
        Step::error(502, "bad gateway"),
        Step::error(500, "oops"),
        Step::text("finally"),
    ])
    .await
    .unwrap();
    let answer = ModelResponse::collect(openai(&server).stream(&ModelRequest::new("m"))).await.unwrap();
    assert_eq!(answer.text, "finally");
    assert_eq!(server.request_count(), 4);
}

#[tokio::test]
async fn retries_are_bounded_and_the_error_counts_the_attempts() {
    let server = ModelServer::with_script((0..10).map(|_| Step::error(503, "still down"))).await.unwrap();
    let (_, error) = failure(openai(&server).stream(&ModelRequest::new("m"))).await;
    assert_eq!(
        error,
        ModelError::Status { provider: "openai".into(), status: 503, body: "still down".into(), attempts: 4 }
    );
    assert_eq!(error.to_string(), "model provider `openai` answered HTTP 503 (after 4 attempts): still down");
    assert_eq!(server.request_count(), 4, "one attempt and max_retries = 3 retries");
}

#[tokio::test]
async fn a_client_error_is_not_retried() {
    let server = ModelServer::with_script([Step::error(400, "bad request"), Step::text("never")]).await.unwrap();
    let (_, error) = failure(openai(&server).stream(&ModelRequest::new("m"))).await;
    assert!(matches!(error, ModelError::Status { status: 400, attempts: 1, .. }), "{error:?}");
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn nothing_is_retried_once_output_has_started() {
    let server =
        ModelServer::with_script([Step::text("abcd").chunks(2).abort_after(2), Step::text("second")]).await.unwrap();
    let (events, error) = failure(openai(&server).stream(&ModelRequest::new("m"))).await;
    assert_eq!(events, vec![ModelEvent::TextDelta("ab".into())]);
    assert!(matches!(error, ModelError::Transport { .. }), "{error:?}");
    assert_eq!(server.request_count(), 1, "a retry would duplicate the text already yielded");
}

#[tokio::test]
async fn an_unreachable_upstream_is_retried_then_named_in_a_connect_error() {
    // A port that was just free: connections are refused.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    let provider = OpenAiChat::new(ProviderConfig::new("local-vllm", url.clone()).settings(fast_settings())).unwrap();
    let (_, error) = failure(provider.stream(&ModelRequest::new("m"))).await;
    match &error {
        ModelError::Connect { provider, url: failed, attempts, .. } => {
            assert_eq!(
                (provider.as_str(), failed.as_str(), *attempts),
                ("local-vllm", &*format!("{url}/chat/completions"), 4)
            );
        }
        other => panic!("expected a connect error, got {other:?}"),
    }
    assert!(
        error.to_string().starts_with("model provider `local-vllm`: cannot connect to http://127.0.0.1:"),
        "{error}"
    );
}
