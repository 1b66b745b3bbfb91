//! The log subscriber: lines on stderr filtered by `REBYTE_LOG` (default
//! `info`), as text or as one JSON object a line, coloured only when stderr is
//! a terminal (and `NO_COLOR` is unset). Lines are batched off the request's
//! thread ([`crate::log_writer`]); [`flush`] writes what waits.

use crate::log_writer::Batched;
use std::io::{IsTerminal, Stderr};
use std::sync::OnceLock;
use tracing_subscriber::EnvFilter;

/// The process's writer, kept to be flushed at exit and on a panic.
static WRITER: OnceLock<Batched<Stderr>> = OnceLock::new();

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// `2026-12-01T10:00:00.123Z  INFO server::metrics: request method=GET …`
    #[default]
    Text,
    /// `{"timestamp":…,"level":"INFO","message":"request","method":"GET",…,"target":"server::metrics"}`
    Json,
}

/// Installs the process's subscriber (once; a second call changes nothing).
pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_env("REBYTE_LOG").unwrap_or_else(|_| "info".into());
    let writer = WRITER.get_or_init(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if let Some(writer) = WRITER.get() {
                writer.try_flush();
            }
            previous(info);
        }));
        Batched::new(std::io::stderr())
    });
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(writer.clone());
    let _ = match format {
        LogFormat::Text => {
            let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
            builder.with_ansi(colour).try_init()
        }
        // The event's fields sit beside `message` at the top level, as log tools expect.
        LogFormat::Json => builder.json().flatten_event(true).with_ansi(false).try_init(),
    };
}

/// Writes the log lines still waiting (before the process exits).
pub fn flush() {
    if let Some(writer) = WRITER.get() {
        writer.flush();
    }
}
