//! A stalled upstream can never hang a turn: every wait has a timeout.

use super::{failure, fast_settings, openai};
use models::{ModelError, ModelEvent, ModelRequest, ModelResponse, Provider, TimeoutPhase};
use std::time::{Duration, Instant};
use test_support::model_server::{ModelServer, Step};

#[tokio::test]
async fn an_upstream_that_never_answers_times_out_waiting_for_headers() {
    let server = ModelServer::with_script([Step::stall()]).await.unwrap();
    let started = Instant::now();
    let (_, error) = failure(openai(&server).stream(&ModelRequest::new("m"))).await;
    let elapsed = started.elapsed();
    let limit = fast_settings().timeouts.response;
    assert_eq!(
        error,
        ModelError::Timeout { provider: "openai".into(), phase: TimeoutPhase::ResponseHeaders, after: limit }
    );
    assert_eq!(error.to_string(), "model provider `openai`: timed out after 500 ms waiting for the response headers");
    assert!(elapsed >= limit && elapsed < limit + Duration::from_millis(1500), "took {elapsed:?}");
    assert_eq!(server.request_count(), 1, "a timeout is not retried");
}

#[tokio::test]
async fn a_stream_that_stalls_mid_way_times_out_between_chunks() {
    let server = ModelServer::with_script([Step::text("abcdef").chunks(3).stall_after(2)]).await.unwrap();
    let started = Instant::now();
    let (events, error) = failure(openai(&server).stream(&ModelRequest::new("m"))).await;
    let elapsed = started.elapsed();
    let idle = fast_settings().timeouts.idle;
    assert_eq!(events, vec![ModelEvent::TextDelta("ab".into())]);
    assert_eq!(error, ModelError::Timeout { provider: "openai".into(), phase: TimeoutPhase::Idle, after: idle });
    assert!(elapsed >= idle && elapsed < idle + Duration::from_millis(1500), "took {elapsed:?}");
}

#[tokio::test]
async fn slow_but_steady_streams_do_not_time_out() {
    // Each gap is below the idle timeout, the whole stream well above it.
    let server = ModelServer::with_script([Step::text("0123456789").chunks(5).chunk_delay(Duration::from_millis(100))])
        .await
        .unwrap();
    let answer = ModelResponse::collect(openai(&server).stream(&ModelRequest::new("m"))).await.unwrap();
    assert_eq!(answer.text, "0123456789");
}

#[tokio::test]
async fn latency_below_the_response_timeout_is_fine() {
    let server = ModelServer::with_script([Step::text("late").latency(Duration::from_millis(200))]).await.unwrap();
    let answer = ModelResponse::collect(openai(&server).stream(&ModelRequest::new("m"))).await.unwrap();
    assert_eq!(answer.text, "late");
}
