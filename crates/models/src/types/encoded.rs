//! The encoded history a turn keeps between its steps: each step sends the
//! whole history again, and re-escaping hundreds of kilobytes of JSON on
//! every step was the largest cost left on a long turn's path. A provider
//! encodes each wire message once; a later step of the same turn reuses an
//! encoding whose wire message covers the same span of the history (the
//! history only grows within a turn, so the same span is the same content).
//! A history that shrank, or another wire format, starts over.

use serde::Serialize;
use std::sync::{Arc, Mutex};

struct Entry {
    /// The span of [`super::ModelRequest::messages`] this wire message came from.
    start: usize,
    end: usize,
    json: Vec<u8>,
}

#[derive(Default)]
struct Cache {
    format: &'static str,
    /// The history's length when last encoded.
    seen: usize,
    entries: Vec<Entry>,
}

/// Shared by the requests of one turn's steps (clones share it). Not sent,
/// not compared: two requests with different caches are equal.
#[derive(Clone, Default)]
pub struct EncodedHistory(Arc<Mutex<Cache>>);

impl std::fmt::Debug for EncodedHistory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let cache = self.0.lock().unwrap_or_else(|e| e.into_inner());
        f.debug_struct("EncodedHistory").field("format", &cache.format).field("messages", &cache.entries.len()).finish()
    }
}

impl PartialEq for EncodedHistory {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// A wire message and the span of the history it came from.
pub(crate) struct Spanned<W> {
    pub start: usize,
    pub end: usize,
    pub message: W,
}

impl EncodedHistory {
    /// Appends the JSON of `messages` to `out`, comma-separated, reusing
    /// what an earlier step of this turn encoded for the same spans of a
    /// history of `len` messages, in wire format `format`.
    pub(crate) fn write<W: Serialize>(
        &self,
        format: &'static str,
        len: usize,
        messages: &[Spanned<W>],
        out: &mut Vec<u8>,
    ) -> serde_json::Result<()> {
        let mut cache = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if cache.format != format || len < cache.seen {
            *cache = Cache { format, seen: 0, entries: Vec::new() };
        }
        cache.seen = len;
        for (i, wire) in messages.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            let reusable = cache.entries.get(i).is_some_and(|e| e.start == wire.start && e.end == wire.end);
            if !reusable {
                let json = serde_json::to_vec(&wire.message)?;
                cache.entries.truncate(i);
                cache.entries.push(Entry { start: wire.start, end: wire.end, json });
            }
            out.extend_from_slice(&cache.entries[i].json);
        }
        cache.entries.truncate(messages.len());
        Ok(())
    }
}

/// Checks a wire format's bodies: built at each step of a growing history
/// (every kind of message, tool calls that join the message before them)
/// with the turn's cache, they are byte for byte those built without it.
#[cfg(test)]
pub(crate) fn assert_reuse_changes_nothing(body: impl Fn(&super::ModelRequest) -> bytes::Bytes) {
    use super::{Message, ModelRequest, ToolCall};
    let kept = EncodedHistory::default();
    let mut request = ModelRequest::new("m");
    request.instructions = Some("be \"brief\"".into());
    let steps: Vec<Message> = vec![
        Message::user("hi \u{1F600} \\ \n"),
        Message::assistant("let me look"),
        Message::ToolCall(ToolCall::new("c1", "ls", "{}")),
        Message::ToolCall(ToolCall::new("c2", "cat", "{\"p\":1}")),
        Message::tool_result("c1", "a b"),
        Message::tool_result("c2", "text"),
        Message::ToolCall(ToolCall::new("c3", "ls", "{}")),
        Message::tool_result("c3", "more"),
        Message::assistant(""),
        Message::assistant("done"),
        Message::user("again"),
    ];
    for message in steps {
        request.messages.push(message);
        request.encoded = kept.clone();
        let reused = body(&request);
        request.encoded = EncodedHistory::default();
        assert_eq!(reused, body(&request), "after {} messages", request.messages.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct M<'a> {
        text: &'a str,
    }

    fn spans<'a>(items: &[(usize, usize, &'a str)]) -> Vec<Spanned<M<'a>>> {
        items.iter().map(|&(start, end, text)| Spanned { start, end, message: M { text } }).collect()
    }

    fn write(cache: &EncodedHistory, format: &'static str, len: usize, items: &[(usize, usize, &str)]) -> String {
        let mut out = Vec::new();
        cache.write(format, len, &spans(items), &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_span_seen_before_is_reused_and_a_changed_one_encoded_again() {
        let cache = EncodedHistory::default();
        assert_eq!(write(&cache, "chat", 2, &[(0, 1, "a"), (1, 2, "b")]), r#"{"text":"a"},{"text":"b"}"#);
        // The same spans: their first encodings, whatever the values now (the history only grows).
        assert_eq!(
            write(&cache, "chat", 3, &[(0, 1, "x"), (1, 2, "y"), (2, 3, "c")]),
            r#"{"text":"a"},{"text":"b"},{"text":"c"}"#
        );
        // The last wire message grew (a tool call joined it): encoded again.
        assert_eq!(
            write(&cache, "chat", 4, &[(0, 1, "x"), (1, 2, "y"), (2, 4, "cd")]),
            r#"{"text":"a"},{"text":"b"},{"text":"cd"}"#
        );
        // A shorter history, or another format: everything encoded again.
        assert_eq!(write(&cache, "chat", 1, &[(0, 1, "z")]), r#"{"text":"z"}"#);
        assert_eq!(write(&cache, "anthropic", 1, &[(0, 1, "w")]), r#"{"text":"w"}"#);
        assert_eq!(write(&cache, "anthropic", 1, &[]), "");
    }
}
