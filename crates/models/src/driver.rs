//! Runs one model call as a stream: send (with retries) → read the body
//! chunk by chunk under the idle timeout → SSE events → the provider's wire
//! decoder → [`ModelEvent`]s, yielded as soon as each chunk is parsed.

use crate::error::{ModelError, Result, TimeoutPhase};
use crate::provider::ModelStream;
use crate::sse::{SseDecoder, StreamFault};
use crate::transport::Endpoint;
use crate::types::ModelEvent;
use bytes::Bytes;
use futures::FutureExt;
use std::collections::VecDeque;
use std::sync::Arc;

/// Turns the SSE events of one wire format into model events.
pub(crate) trait WireDecoder: Send + 'static {
    /// What a complete stream ends with, for the error when it does not.
    const END_MARKER: &'static str;

    /// Handles one SSE event, pushing what it completes onto `out`. Returns
    /// `true` once the end marker was seen (the last events are then in `out`).
    fn event(&mut self, event: &str, data: &str, out: &mut VecDeque<ModelEvent>) -> Result<bool, StreamFault>;
}

/// Starts the stream of one call; `body` is the serialized request, or the
/// error serializing it.
pub(crate) fn drive<D: WireDecoder>(endpoint: Arc<Endpoint>, body: Result<Bytes>, decoder: D) -> ModelStream {
    let call = Call { endpoint, state: State::Start(body), decoder, sse: SseDecoder::default(), out: VecDeque::new() };
    Box::pin(futures::stream::unfold(call, |mut call| async move {
        let item = call.next().await?;
        Some((item, call))
    }))
}

struct Call<D> {
    endpoint: Arc<Endpoint>,
    state: State,
    decoder: D,
    sse: SseDecoder,
    /// Events parsed from the last chunk and not yet yielded.
    out: VecDeque<ModelEvent>,
}

enum State {
    Start(Result<Bytes>),
    /// The body is being read; dropping the response closes the connection.
    Reading(reqwest::Response),
    /// Yielded once the events parsed before the failure are out.
    Failed(ModelError),
    Done,
}

impl<D: WireDecoder> Call<D> {
    async fn next(&mut self) -> Option<Result<ModelEvent>> {
        loop {
            if let Some(event) = self.out.pop_front() {
                return Some(Ok(event));
            }
            match std::mem::replace(&mut self.state, State::Done) {
                State::Done => return None,
                State::Failed(error) => return Some(Err(error)),
                State::Start(body) => {
                    let sent = match body {
                        Ok(body) => self.endpoint.send(body).await,
                        Err(error) => Err(error),
                    };
                    match sent {
                        Ok(response) => self.state = State::Reading(response),
                        Err(error) => return Some(Err(error)),
                    }
                }
                State::Reading(mut response) => {
                    let idle = self.endpoint.settings.timeouts.idle;
                    let chunk = match tokio::time::timeout(idle, response.chunk()).await {
                        Err(_) => return Some(Err(self.endpoint.timeout(TimeoutPhase::Idle))),
                        Ok(Err(error)) => return Some(Err(self.endpoint.body_error(&error))),
                        Ok(Ok(chunk)) => chunk,
                    };
                    let Self { sse, decoder, out, .. } = self;
                    let mut on_event = |event: &str, data: &str| decoder.event(event, data, out);
                    let ended = match &chunk {
                        Some(bytes) => sse.feed(bytes, &mut on_event),
                        None => sse.finish(&mut on_event),
                    };
                    match ended {
                        Err(fault) => self.state = State::Failed(self.fault(fault)),
                        Ok(true) => {
                            // Reading the body's end lets the connection go
                            // back to the pool; never wait for it, though.
                            if chunk.is_some() {
                                let _ = response.chunk().now_or_never();
                            }
                        }
                        Ok(false) if chunk.is_none() => {
                            self.state = State::Failed(ModelError::StreamEnded {
                                provider: self.endpoint.provider.clone(),
                                expected: D::END_MARKER,
                            });
                        }
                        Ok(false) => self.state = State::Reading(response),
                    }
                }
            }
        }
    }

    fn fault(&self, fault: StreamFault) -> ModelError {
        let provider = self.endpoint.provider.clone();
        match fault {
            StreamFault::Malformed(message) => ModelError::MalformedStream { provider, message },
            StreamFault::Upstream(message) => ModelError::Upstream { provider, message },
        }
    }
}
