//! A minimal Server-Sent Events decoder: bytes in, `(event, data)` pairs out,
//! with the partial line carried between chunks. Buffers are reused across
//! chunks, and a chunk made of whole lines is parsed without being copied.

/// Longest line accepted before the stream is called malformed.
const MAX_LINE: usize = 16 * 1024 * 1024;

/// Why an SSE stream (or the JSON inside it) could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StreamFault {
    Malformed(String),
    /// The upstream sent an error object instead of a chunk.
    Upstream(String),
}

/// The decoder's state between chunks.
#[derive(Debug, Default)]
pub(crate) struct SseDecoder {
    /// The tail of the last chunk that did not end with a newline.
    partial: Vec<u8>,
    event: String,
    data: String,
    has_data: bool,
}

impl SseDecoder {
    /// Feeds one chunk, calling `on_event(event, data)` for each complete
    /// event (`event` is `"message"` when the stream names none). Stops as
    /// soon as `on_event` returns `true` (the end marker) and returns `true`.
    pub(crate) fn feed<F>(&mut self, chunk: &[u8], on_event: &mut F) -> Result<bool, StreamFault>
    where
        F: FnMut(&str, &str) -> Result<bool, StreamFault>,
    {
        if self.partial.is_empty() {
            let consumed = self.lines(chunk, on_event)?;
            if let Some(consumed) = consumed {
                self.partial.extend_from_slice(&chunk[consumed..]);
                return self.check_partial().map(|()| false);
            }
            return Ok(true);
        }
        let mut buffer = std::mem::take(&mut self.partial);
        buffer.extend_from_slice(chunk);
        let result = self.lines(&buffer, on_event);
        if let Ok(Some(consumed)) = result {
            buffer.drain(..consumed);
            self.partial = buffer;
            self.check_partial()?;
        }
        result.map(|consumed| consumed.is_none())
    }

    /// At the end of the body: dispatches what is left (a last line or event
    /// without its terminating newline). Returns whether the end marker came.
    pub(crate) fn finish<F>(&mut self, on_event: &mut F) -> Result<bool, StreamFault>
    where
        F: FnMut(&str, &str) -> Result<bool, StreamFault>,
    {
        let rest = std::mem::take(&mut self.partial);
        if !rest.is_empty() && self.line(&rest, on_event)? {
            return Ok(true);
        }
        self.line(b"", on_event)
    }

    /// Handles the complete lines of `bytes`: `Some(consumed bytes)`, or
    /// `None` when the end marker was seen.
    fn lines<F>(&mut self, bytes: &[u8], on_event: &mut F) -> Result<Option<usize>, StreamFault>
    where
        F: FnMut(&str, &str) -> Result<bool, StreamFault>,
    {
        let mut start = 0;
        while let Some(offset) = bytes[start..].iter().position(|b| *b == b'\n') {
            let line = &bytes[start..start + offset];
            start += offset + 1;
            if self.line(line, on_event)? {
                return Ok(None);
            }
        }
        Ok(Some(start))
    }

    fn line<F>(&mut self, line: &[u8], on_event: &mut F) -> Result<bool, StreamFault>
    where
        F: FnMut(&str, &str) -> Result<bool, StreamFault>,
    {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            if !self.has_data {
                self.event.clear();
                return Ok(false);
            }
            let event = if self.event.is_empty() { "message" } else { self.event.as_str() };
            let ended = on_event(event, &self.data)?;
            self.event.clear();
            self.data.clear();
            self.has_data = false;
            return Ok(ended);
        }
        let line = std::str::from_utf8(line)
            .map_err(|_| StreamFault::Malformed("the event stream is not valid UTF-8".to_owned()))?;
        if line.starts_with(':') {
            return Ok(false);
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => {
                self.event.clear();
                self.event.push_str(value);
            }
            _ => {}
        }
        Ok(false)
    }

    fn check_partial(&self) -> Result<(), StreamFault> {
        if self.partial.len() > MAX_LINE {
            return Err(StreamFault::Malformed(format!("a line of the event stream exceeds {MAX_LINE} bytes")));
        }
        Ok(())
    }
}

/// A prefix of a payload, short enough for an error message.
pub(crate) fn clip(text: &str) -> &str {
    match text.char_indices().nth(300) {
        Some((cut, _)) => &text[..cut],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(chunks: &[&str]) -> Vec<(String, String)> {
        let mut decoder = SseDecoder::default();
        let mut events = Vec::new();
        let mut on_event = |event: &str, data: &str| {
            events.push((event.to_owned(), data.to_owned()));
            Ok(data == "[DONE]")
        };
        for chunk in chunks {
            if decoder.feed(chunk.as_bytes(), &mut on_event).unwrap() {
                return events;
            }
        }
        decoder.finish(&mut on_event).unwrap();
        events
    }

    #[test]
    fn events_split_across_chunks_are_reassembled() {
        let events = decode(&["data: {\"a\"", ":1}\n", "\ndata: x\r\n\r\nevent: ping\ndata: y\n\n"]);
        assert_eq!(
            events,
            vec![("message".into(), "{\"a\":1}".into()), ("message".into(), "x".into()), ("ping".into(), "y".into())]
        );
    }

    #[test]
    fn comments_are_skipped_and_multi_line_data_is_joined() {
        let events = decode(&[": keep-alive\n\ndata: a\ndata: b\n\n"]);
        assert_eq!(events, vec![("message".into(), "a\nb".into())]);
    }

    #[test]
    fn decoding_stops_at_the_end_marker() {
        let events = decode(&["data: [DONE]\n\ndata: after\n\n"]);
        assert_eq!(events, vec![("message".into(), "[DONE]".into())]);
    }

    #[test]
    fn a_last_event_without_its_blank_line_is_still_delivered() {
        let events = decode(&["data: x\n\ndata: [DONE]"]);
        assert_eq!(events, vec![("message".into(), "x".into()), ("message".into(), "[DONE]".into())]);
    }
}
