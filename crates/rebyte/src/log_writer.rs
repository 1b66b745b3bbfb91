//! The log's writer. A request's thread appends its formatted line to a shared
//! buffer and goes on; a thread of its own writes what gathered to stderr in
//! one `write(2)` a few milliseconds after the first line, so a busy server
//! pays one system call per batch, not one per request (the access log writes a
//! line for every request). Warnings and errors are written at once, after
//! whatever was waiting, so lines keep their order; a buffer grown past
//! [`HIGH_WATER`] is written by the thread that grew it; [`Batched::flush`]
//! empties the buffer at exit and when the process panics.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tracing::{Level, Metadata};
use tracing_subscriber::fmt::MakeWriter;

/// How long the writing thread lets lines gather after the first one.
const WINDOW: Duration = Duration::from_millis(5);
/// A buffer this large is written at once by the thread that appended to it.
const HIGH_WATER: usize = 256 * 1024;

/// A [`MakeWriter`] batching lines into `W` (stderr in the server).
pub struct Batched<W> {
    shared: Arc<Shared<W>>,
}

impl<W> Clone for Batched<W> {
    fn clone(&self) -> Self {
        Self { shared: self.shared.clone() }
    }
}

struct Shared<W> {
    /// Lines not yet written.
    pending: Mutex<Vec<u8>>,
    /// Signalled when `pending` stops being empty.
    ready: Condvar,
    /// Held while writing, and taken before `pending`: whoever holds it writes
    /// everything appended before it took `pending`, so lines stay in order.
    sink: Mutex<Sink<W>>,
    /// Whether the writing thread runs (without it, every line is written at once).
    batching: AtomicBool,
}

/// The writer and the buffer `pending` is swapped with (both keep their
/// capacity, so a busy log allocates nothing).
struct Sink<W> {
    out: W,
    spare: Vec<u8>,
}

impl<W: Write> Sink<W> {
    /// Writes everything in `pending`, then `line`.
    fn write(&mut self, pending: &Mutex<Vec<u8>>, line: &[u8]) {
        std::mem::swap(&mut *lock(pending), &mut self.spare);
        // A log that cannot be written has nowhere to report it.
        let _ = self.out.write_all(&self.spare);
        let _ = self.out.write_all(line);
        let _ = self.out.flush();
        self.spare.clear();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<W: Write + Send + 'static> Batched<W> {
    /// A writer into `sink`, with its writing thread started.
    pub fn new(sink: W) -> Self {
        let shared = Arc::new(Shared {
            pending: Mutex::new(Vec::new()),
            ready: Condvar::new(),
            sink: Mutex::new(Sink { out: sink, spare: Vec::new() }),
            batching: AtomicBool::new(false),
        });
        let background = shared.clone();
        let started = std::thread::Builder::new().name("rebyte-log".into()).spawn(move || background.run()).is_ok();
        shared.batching.store(started, Ordering::Release);
        Self { shared }
    }

    /// Writes whatever is waiting, now.
    pub fn flush(&self) {
        self.shared.write_out(&[]);
    }

    /// Like [`Batched::flush`], but gives up rather than wait for the sink (a
    /// panic hook must not wait on a lock its own thread may hold).
    pub fn try_flush(&self) {
        if let Ok(mut sink) = self.shared.sink.try_lock() {
            sink.write(&self.shared.pending, &[]);
        }
    }
}

impl<W: Write> Shared<W> {
    /// The writing thread: waits for a first line, lets others gather, writes them.
    fn run(&self) {
        loop {
            {
                let mut pending = lock(&self.pending);
                while pending.is_empty() {
                    pending = self.ready.wait(pending).unwrap_or_else(PoisonError::into_inner);
                }
            }
            std::thread::sleep(WINDOW);
            self.write_out(&[]);
        }
    }

    /// Writes what is waiting, then `line`.
    fn write_out(&self, line: &[u8]) {
        lock(&self.sink).write(&self.pending, line);
    }

    /// Appends `line`, or writes it at once when it is urgent, the buffer is
    /// full or nothing would write it later.
    fn append(&self, line: &[u8], urgent: bool) {
        if urgent || !self.batching.load(Ordering::Acquire) {
            return self.write_out(line);
        }
        let mut pending = lock(&self.pending);
        let was_empty = pending.is_empty();
        pending.extend_from_slice(line);
        if pending.len() >= HIGH_WATER {
            drop(pending);
            return self.write_out(&[]);
        }
        drop(pending);
        if was_empty {
            self.ready.notify_one();
        }
    }
}

/// One event's writer: what tracing writes through it goes to the buffer.
pub struct Line<'a, W> {
    shared: &'a Shared<W>,
    urgent: bool,
}

impl<W: Write> Write for Line<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.shared.append(buf, self.urgent);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a, W: Write + Send + 'static> MakeWriter<'a> for Batched<W> {
    type Writer = Line<'a, W>;

    /// A writer for a line of unknown level: written at once.
    fn make_writer(&'a self) -> Self::Writer {
        Line { shared: &self.shared, urgent: true }
    }

    fn make_writer_for(&'a self, meta: &Metadata<'_>) -> Self::Writer {
        Line { shared: &self.shared, urgent: *meta.level() <= Level::WARN }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// A sink the test can read, counting its writes.
    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<(Vec<u8>, usize)>>);

    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let mut inner = lock(&self.0);
            inner.0.extend_from_slice(buf);
            inner.1 += usize::from(!buf.is_empty());
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Sink {
        fn text(&self) -> String {
            String::from_utf8_lossy(&lock(&self.0).0).into_owned()
        }
        fn writes(&self) -> usize {
            lock(&self.0).1
        }
    }

    fn logged(sink: &Sink, f: impl FnOnce()) -> Batched<Sink> {
        let writer = Batched::new(sink.clone());
        let subscriber = tracing_subscriber::fmt().with_writer(writer.clone()).with_ansi(false).finish();
        tracing::subscriber::with_default(subscriber, f);
        writer
    }

    fn wait_for(sink: &Sink, needle: &str) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !sink.text().contains(needle) {
            assert!(Instant::now() < deadline, "{needle:?} was never written: {:?}", sink.text());
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn info_lines_are_written_later_together_and_in_order() {
        let sink = Sink::default();
        logged(&sink, || {
            for i in 0..100 {
                tracing::info!(i, "request");
            }
        });
        wait_for(&sink, "i=99");
        let text = sink.text();
        let positions: Vec<usize> = (0..100).map(|i| text.find(&format!("i={i}\n")).expect("every line")).collect();
        assert!(positions.windows(2).all(|w| w[0] < w[1]), "out of order: {text}");
        // A hundred lines in well under the window: far fewer writes than lines.
        assert!(sink.writes() < 10, "{} writes for 100 lines", sink.writes());
    }

    #[test]
    fn a_warning_is_written_at_once_after_the_lines_before_it() {
        let sink = Sink::default();
        logged(&sink, || {
            tracing::info!("first");
            tracing::warn!("second");
            // No waiting: the warning and what came before it are already there.
            let text = sink.text();
            let (first, second) = (text.find("first").expect("first"), text.find("second").expect("second"));
            assert!(first < second, "{text}");
        });
    }

    #[test]
    fn flush_writes_what_is_waiting() {
        let sink = Sink::default();
        let writer = logged(&sink, || tracing::info!("waiting"));
        writer.flush();
        assert!(sink.text().contains("waiting"), "{:?}", sink.text());
        writer.try_flush();
    }

    #[test]
    fn a_full_buffer_is_written_by_the_thread_that_filled_it() {
        let sink = Sink::default();
        let big = "x".repeat(HIGH_WATER);
        logged(&sink, || {
            tracing::info!("{big}");
            assert!(sink.text().contains(&big[..1000]), "not written at once");
        });
    }
}
