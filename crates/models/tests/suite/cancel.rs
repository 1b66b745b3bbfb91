//! Cancellation is dropping the stream, and it reaches the upstream.

use super::openai;
use futures::StreamExt;
use models::{ModelEvent, ModelRequest, Provider};
use std::time::{Duration, Instant};
use test_support::model_server::{ModelServer, Step};

#[tokio::test]
async fn dropping_the_stream_aborts_the_upstream_request() {
    let server =
        ModelServer::with_script([Step::text("a long answer").chunks(10).chunk_delay(Duration::from_millis(50))])
            .await
            .unwrap();
    let mut stream = openai(&server).stream(&ModelRequest::new("m"));
    assert!(matches!(stream.next().await, Some(Ok(ModelEvent::TextDelta(_)))));
    drop(stream);
    let deadline = Instant::now() + Duration::from_secs(2);
    while server.aborted_count() == 0 {
        assert!(Instant::now() < deadline, "the server never saw the request go away");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(server.aborted_count(), 1);
}

#[tokio::test]
async fn nothing_is_sent_until_the_stream_is_polled() {
    let server = ModelServer::with_script([Step::text("unused")]).await.unwrap();
    let stream = openai(&server).stream(&ModelRequest::new("m"));
    tokio::time::sleep(Duration::from_millis(50)).await;
    drop(stream);
    assert_eq!(server.request_count(), 0);
}

#[tokio::test]
async fn dropping_the_stream_while_the_upstream_stalls_aborts_the_request() {
    let server = ModelServer::with_script([Step::stall()]).await.unwrap();
    let provider = openai(&server);
    let mut stream = provider.stream(&ModelRequest::new("m"));
    let waiting = tokio::time::timeout(Duration::from_millis(100), stream.next()).await;
    assert!(waiting.is_err(), "the upstream has not answered yet");
    assert_eq!(server.request_count(), 1);
    drop(stream);
    let deadline = Instant::now() + Duration::from_secs(2);
    while server.aborted_count() == 0 {
        assert!(Instant::now() < deadline, "the server never saw the request go away");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
