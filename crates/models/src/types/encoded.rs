//! The encoded history a turn keeps between its steps: each step sends the
//! whole history again, and re-escaping hundreds of kilobytes of JSON on
//! every step was the largest cost left on a long turn's path. A provider
//! encodes each wire message once; a later step of the same turn reuses an
//! encoding whose wire message covers the same span of the history (the
//! history only grows within a turn, so the same span is the same content).
//! A history that shrank, or another wire format, starts over.

use super::Message;
use serde::Serialize;
use std::ops::Range;
use std::sync::{Arc, Mutex};

/// Room kept past the history for the rest of a body (model, tools,
/// settings), so that the body is allocated once.
const REST: usize = 4096;

struct Entry {
    /// The span of [`super::ModelRequest::messages`] this wire message came from.
    span: Range<usize>,
    /// Where its JSON ends in [`Cache::joined`].
    end: usize,
}

#[derive(Default)]
struct Cache {
    format: &'static str,
    /// The history's length when last encoded.
    seen: usize,
    entries: Vec<Entry>,
    /// The wire messages' JSON, comma-separated, as last written.
    joined: Vec<u8>,
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

/// Where a wire format puts a history message: in a wire message of `role`,
/// joined to the wire message before it when `joins` and that one has the
/// same role.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Place {
    pub role: &'static str,
    pub joins: bool,
}

/// One wire message: its role and the span of the history it is made of
/// (messages inside it that the format leaves out included).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Span {
    pub role: &'static str,
    pub range: Range<usize>,
}

/// The wire messages a format makes of `messages`: `place` says where each
/// message goes, `None` leaving it out. Allocates one list, builds no wire
/// message (those an earlier step encoded are not built again).
pub(crate) fn spans(messages: &[Message], place: impl Fn(&Message) -> Option<Place>) -> Vec<Span> {
    let mut spans: Vec<Span> = Vec::with_capacity(messages.len());
    for (i, message) in messages.iter().enumerate() {
        let Some(Place { role, joins }) = place(message) else { continue };
        match spans.last_mut() {
            Some(last) if joins && last.role == role => last.range.end = i + 1,
            _ => spans.push(Span { role, range: i..i + 1 }),
        }
    }
    spans
}

impl EncodedHistory {
    /// Appends the JSON of the wire messages `spans` describe to `out`,
    /// comma-separated, for a history of `len` messages in wire format
    /// `format`. A wire message an earlier step of this turn encoded for the
    /// same span is copied, not built again: `wire` builds only the others.
    pub(crate) fn write<W: Serialize>(
        &self,
        format: &'static str,
        len: usize,
        spans: &[Span],
        wire: impl Fn(&Span) -> W,
        out: &mut Vec<u8>,
    ) -> serde_json::Result<()> {
        let mut cache = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if cache.format != format || len < cache.seen {
            *cache = Cache { format, ..Cache::default() };
        }
        cache.seen = len;
        let reused = cache.entries.iter().zip(spans).take_while(|(entry, span)| entry.span == span.range).count();
        cache.entries.truncate(reused);
        let kept = cache.entries.last().map_or(0, |entry| entry.end);
        cache.joined.truncate(kept);
        for span in spans.get(reused..).unwrap_or_default() {
            if !cache.joined.is_empty() {
                cache.joined.push(b',');
            }
            if let Err(e) = serde_json::to_writer(&mut cache.joined, &wire(span)) {
                // Half written: nothing of it is kept.
                *cache = Cache::default();
                return Err(e);
            }
            let end = cache.joined.len();
            cache.entries.push(Entry { span: span.range.clone(), end });
        }
        out.reserve(cache.joined.len() + REST);
        out.extend_from_slice(&cache.joined);
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

    /// Writes wire messages given as (start, end, text); counts the ones built.
    fn write(
        cache: &EncodedHistory,
        format: &'static str,
        len: usize,
        items: &[(usize, usize, &str)],
    ) -> (String, usize) {
        let spans: Vec<Span> = items.iter().map(|&(start, end, _)| Span { role: "m", range: start..end }).collect();
        let built = std::cell::Cell::new(0);
        let wire = |span: &Span| {
            built.set(built.get() + 1);
            let (_, _, text) = items.iter().find(|(start, _, _)| *start == span.range.start).unwrap();
            M { text }
        };
        let mut out = Vec::new();
        cache.write(format, len, &spans, wire, &mut out).unwrap();
        (String::from_utf8(out).unwrap(), built.get())
    }

    #[test]
    fn a_span_seen_before_is_reused_and_a_changed_one_encoded_again() {
        let cache = EncodedHistory::default();
        assert_eq!(write(&cache, "chat", 2, &[(0, 1, "a"), (1, 2, "b")]), (r#"{"text":"a"},{"text":"b"}"#.into(), 2));
        // The same spans: their first encodings, whatever the values now (the history only grows).
        assert_eq!(
            write(&cache, "chat", 3, &[(0, 1, "x"), (1, 2, "y"), (2, 3, "c")]),
            (r#"{"text":"a"},{"text":"b"},{"text":"c"}"#.into(), 1)
        );
        // The last wire message grew (a tool call joined it): encoded again.
        assert_eq!(
            write(&cache, "chat", 4, &[(0, 1, "x"), (1, 2, "y"), (2, 4, "cd")]),
            (r#"{"text":"a"},{"text":"b"},{"text":"cd"}"#.into(), 1)
        );
        // A shorter history, or another format: everything encoded again.
        assert_eq!(write(&cache, "chat", 1, &[(0, 1, "z")]), (r#"{"text":"z"}"#.into(), 1));
        assert_eq!(write(&cache, "anthropic", 1, &[(0, 1, "w")]), (r#"{"text":"w"}"#.into(), 1));
        assert_eq!(write(&cache, "anthropic", 1, &[]), (String::new(), 0));
        // A first span changed: the ones after it are built again too.
        write(&cache, "chat", 2, &[(0, 1, "a"), (1, 2, "b")]);
        assert_eq!(write(&cache, "chat", 2, &[(0, 2, "ab")]), (r#"{"text":"ab"}"#.into(), 1));
    }

    #[test]
    fn spans_join_only_what_the_format_joins() {
        let messages = vec![
            Message::user("hi"),
            Message::assistant("a"),
            Message::ToolCall(super::super::ToolCall::new("c1", "ls", "{}")),
            Message::user("left out"),
            Message::ToolCall(super::super::ToolCall::new("c2", "ls", "{}")),
            Message::tool_result("c1", "x"),
        ];
        let place = |m: &Message| match m {
            Message::User { text } if text == "left out" => None,
            Message::User { .. } => Some(Place { role: "user", joins: false }),
            Message::ToolResult { .. } => Some(Place { role: "user", joins: false }),
            Message::ToolCall(_) => Some(Place { role: "assistant", joins: true }),
            _ => Some(Place { role: "assistant", joins: false }),
        };
        let ranges: Vec<_> = spans(&messages, place).into_iter().map(|s| (s.role, s.range)).collect();
        assert_eq!(ranges, vec![("user", 0..1), ("assistant", 1..5), ("user", 5..6)]);
    }
}
