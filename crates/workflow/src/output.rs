//! How a run ends: [`Outcome`], and the text the model (and the `program_output` item) gets —
//! the return value as JSON, then the captured `console` output.

use std::time::Duration;

/// `completed`: the function returned a value that serialized; `incomplete`: anything else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Completed,
    Incomplete,
}

/// The end of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub status: Status,
    /// The return value as JSON (`null` for `undefined`) when completed.
    pub value: Option<String>,
    /// Why the run is incomplete, in words for the model.
    pub error: Option<String>,
    /// Captured `console` output (cut at the log limit, with a note).
    pub log: String,
    /// Nested calls the run made.
    pub nested_calls: usize,
    pub elapsed: Duration,
}

impl Outcome {
    pub(crate) fn completed(value: String, log: String) -> Self {
        Outcome {
            status: Status::Completed,
            value: Some(value),
            error: None,
            log,
            nested_calls: 0,
            elapsed: Duration::ZERO,
        }
    }

    pub(crate) fn incomplete(error: String, log: String) -> Self {
        Outcome {
            status: Status::Incomplete,
            value: None,
            error: Some(error),
            log,
            nested_calls: 0,
            elapsed: Duration::ZERO,
        }
    }

    /// What the model reads: the value (or `error: …`), then the log under `console output:`.
    pub fn text(&self) -> String {
        let mut text = match (&self.value, &self.error) {
            (_, Some(error)) => format!("error: {error}"),
            (Some(value), None) => value.clone(),
            (None, None) => "null".into(),
        };
        if !self.log.is_empty() {
            text.push_str("\n\nconsole output:\n");
            text.push_str(&self.log);
        }
        text
    }
}

/// Cuts `text` to at most `limit` bytes on a character boundary.
pub(crate) fn cut(text: &str, limit: usize) -> &str {
    if text.len() <= limit {
        return text;
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The captured console output, bounded.
#[derive(Debug, Default)]
pub(crate) struct Log {
    pub(crate) text: String,
    limit: usize,
    cut: bool,
}

impl Log {
    pub(crate) fn new(limit: usize) -> Self {
        Log { text: String::new(), limit, cut: false }
    }

    /// Adds one `console` line.
    pub(crate) fn line(&mut self, line: &str) {
        if self.cut {
            return;
        }
        let room = self.limit.saturating_sub(self.text.len());
        if line.len() + 1 > room {
            self.text.push_str(cut(line, room));
            self.text.push_str(&format!("\n[console output cut at the limit of {} bytes]", self.limit));
            self.cut = true;
            return;
        }
        self.text.push_str(line);
        self.text.push('\n');
    }

    pub(crate) fn take(&mut self) -> String {
        let mut text = std::mem::take(&mut self.text);
        if text.ends_with('\n') {
            text.pop();
        }
        text
    }
}
