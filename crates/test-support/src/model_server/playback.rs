//! Plays one reply as an HTTP response body: the rendered stream events with
//! their delays, then the end marker, or a clean cut, a stall, or a broken
//! connection where the script says so. Notices when the client goes away.

use bytes::Bytes;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::watch;

/// A rendered streaming answer.
pub(crate) struct Frames {
    /// The SSE events that carry the answer, each a complete `…\n\n` event.
    pub(crate) content: Vec<String>,
    /// The end marker events (`[DONE]`, `message_stop`).
    pub(crate) end: Vec<String>,
}

/// How the body ends once its frames are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Then {
    End,
    Stall,
    Abort,
}

/// Counts a response the client dropped before it ended (on `Drop`, unless
/// the body was played to its scripted end).
pub(crate) struct AbortGuard {
    aborted: Arc<AtomicUsize>,
    completed: bool,
}

impl AbortGuard {
    pub(crate) fn new(aborted: Arc<AtomicUsize>) -> Self {
        Self { aborted, completed: false }
    }

    pub(crate) fn complete(&mut self) {
        self.completed = true;
    }
}

impl Drop for AbortGuard {
    fn drop(&mut self) {
        if !self.completed {
            self.aborted.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// What the script says about delivery.
pub(crate) struct Delivery {
    /// Where the time each frame is handed over is noted.
    pub(crate) sent_at: super::FrameTimes,
    pub(crate) chunk_delay: Duration,
    pub(crate) cut_after: Option<usize>,
    pub(crate) stall_after: Option<usize>,
    pub(crate) abort_after: Option<usize>,
}

struct Playing {
    sent_at: super::FrameTimes,
    frames: std::vec::IntoIter<String>,
    sent: usize,
    delay: Duration,
    then: Then,
    guard: AbortGuard,
    shutdown: watch::Receiver<bool>,
}

/// The body stream for `frames`, delivered as `delivery` says.
pub(crate) fn body(
    frames: Frames,
    delivery: &Delivery,
    guard: AbortGuard,
    shutdown: watch::Receiver<bool>,
) -> axum::body::Body {
    let Frames { mut content, end } = frames;
    let (limit, then) = match (delivery.cut_after, delivery.stall_after, delivery.abort_after) {
        (Some(n), _, _) => (Some(n), Then::End),
        (None, Some(n), _) => (Some(n), Then::Stall),
        (None, None, Some(n)) => (Some(n), Then::Abort),
        (None, None, None) => (None, Then::End),
    };
    match limit {
        Some(n) => content.truncate(n),
        None => content.extend(end),
    }
    let playing = Playing {
        sent_at: Arc::clone(&delivery.sent_at),
        frames: content.into_iter(),
        sent: 0,
        delay: delivery.chunk_delay,
        then,
        guard,
        shutdown,
    };
    let stream = futures::stream::unfold(playing, |mut p| async move {
        if let Some(frame) = p.frames.next() {
            if p.sent > 0 && !p.delay.is_zero() {
                tokio::time::sleep(p.delay).await;
            }
            p.sent += 1;
            p.sent_at.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(std::time::Instant::now());
            return Some((Ok(Bytes::from(frame)), p));
        }
        match p.then {
            Then::End => {
                p.guard.complete();
                None
            }
            Then::Stall => {
                let _ = p.shutdown.wait_for(|down| *down).await;
                p.guard.complete();
                None
            }
            Then::Abort => {
                // Let the server flush the frames already sent: the client
                // must receive them before the connection breaks.
                tokio::time::sleep(Duration::from_millis(20)).await;
                p.guard.complete();
                p.then = Then::End;
                Some((Err(std::io::Error::other("scripted model: connection aborted by the script")), p))
            }
        }
    });
    axum::body::Body::from_stream(stream)
}
