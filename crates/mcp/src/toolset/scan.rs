//! [`ServerScan`]: finds the `server` of a `call_tool` call while the model is still streaming
//! its arguments. It reads the JSON text fragment by fragment, once (no re-parsing of the
//! prefix), and reports the first complete string value of a top-level `"server"` key; keys and
//! values nested deeper (`"arguments": {"server": …}`) are skipped. A prefix that is not the
//! start of a JSON object ends the scan without an answer.

/// Longest top-level key or `server` value kept; a longer one ends the scan (labels are short).
const MAX_CAPTURE: usize = 256;

/// Where the scanner is in the top-level object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Expect {
    /// Before the opening `{`.
    #[default]
    Open,
    /// A key (or the closing `}`).
    Key,
    /// The `:` after a key.
    Colon,
    /// A value.
    Value,
    /// A `,` or `}` after a value.
    Next,
}

/// The incremental scan of one call's arguments.
#[derive(Debug, Default)]
pub struct ServerScan {
    expect: Expect,
    /// Nesting below the top-level object (inside a nested value).
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// Capturing the current top-level string (a key, or the value of `server`).
    capture: Option<Vec<u8>>,
    /// Whether the last top-level key was `server`.
    server_key: bool,
    /// Set once the scan ended (answer or not); later fragments are ignored.
    done: bool,
    found: Option<String>,
}

impl ServerScan {
    pub fn new() -> Self {
        Self::default()
    }

    /// The `server` label, once a complete top-level `"server": "…"` was read.
    pub fn server(&self) -> Option<&str> {
        self.found.as_deref()
    }

    /// Whether more text can still change the answer.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Reads the next fragment of the arguments; returns the label once found.
    pub fn feed(&mut self, fragment: &str) -> Option<&str> {
        for &byte in fragment.as_bytes() {
            if self.done {
                break;
            }
            self.byte(byte);
        }
        self.server()
    }

    fn stop(&mut self) {
        self.done = true;
        self.capture = None;
    }

    fn byte(&mut self, byte: u8) {
        if self.in_string {
            self.string_byte(byte);
            return;
        }
        if self.depth > 0 {
            match byte {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    self.depth -= 1;
                    if self.depth == 0 {
                        self.expect = Expect::Next;
                    }
                }
                _ => {}
            }
            return;
        }
        if byte.is_ascii_whitespace() {
            return;
        }
        match (self.expect, byte) {
            (Expect::Open, b'{') => self.expect = Expect::Key,
            (Expect::Key, b'"') => self.open_string(true),
            (Expect::Colon, b':') => self.expect = Expect::Value,
            (Expect::Value, b'"') => self.open_string(self.server_key),
            (Expect::Value, b'{' | b'[') => self.depth = 1,
            // A number, `true`, `false` or `null`: its characters are skipped until `,`.
            (Expect::Value, _) => self.expect = Expect::Next,
            (Expect::Next, b',') => self.expect = Expect::Key,
            (Expect::Next, _) if byte != b'}' => {}
            // The end of the object, or text that cannot start this object.
            _ => self.stop(),
        }
    }

    fn open_string(&mut self, capture: bool) {
        self.in_string = true;
        self.capture = capture.then(Vec::new);
    }

    fn string_byte(&mut self, byte: u8) {
        if self.escaped {
            self.escaped = false;
        } else if byte == b'\\' {
            self.escaped = true;
        } else if byte == b'"' {
            self.in_string = false;
            if self.depth == 0 {
                self.close_string();
            }
            return;
        }
        if let Some(capture) = &mut self.capture {
            capture.push(byte);
            if capture.len() > MAX_CAPTURE {
                self.stop();
            }
        }
    }

    /// A top-level string ended: a key (then expect `:`) or a value (then expect `,`).
    fn close_string(&mut self) {
        let text = self.capture.take().and_then(|raw| unescape(&raw));
        if self.expect == Expect::Key {
            self.server_key = text.as_deref() == Some("server");
            self.expect = Expect::Colon;
            return;
        }
        self.expect = Expect::Next;
        if self.server_key {
            self.found = text;
            self.stop();
        }
    }
}

/// The text of a JSON string's raw contents (between its quotes), escapes decoded.
fn unescape(raw: &[u8]) -> Option<String> {
    let mut quoted = Vec::with_capacity(raw.len() + 2);
    quoted.push(b'"');
    quoted.extend_from_slice(raw);
    quoted.push(b'"');
    serde_json::from_slice(&quoted).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `text` cut into fragments of `size` bytes (on char boundaries).
    fn scan(text: &str, size: usize) -> Option<String> {
        let mut scan = ServerScan::new();
        let mut rest = text;
        while !rest.is_empty() {
            let mut cut = size.min(rest.len());
            while !rest.is_char_boundary(cut) {
                cut += 1;
            }
            scan.feed(&rest[..cut]);
            rest = &rest[cut..];
        }
        scan.server().map(str::to_owned)
    }

    fn every_cut(text: &str) -> Vec<Option<String>> {
        (1..=text.len()).map(|size| scan(text, size)).collect()
    }

    #[test]
    fn the_server_is_found_however_the_text_is_cut() {
        let text = r#"{"server":"company","name":"get_inventory","arguments":{"sku":"SKU42"}}"#;
        assert!(every_cut(text).iter().all(|found| found.as_deref() == Some("company")));
        let later = r#" { "name" : "x", "arguments": {"server": "inner", "list": [1, {"server": "no"}]},
                         "n": 12.5, "b": true, "server" : "outer" }"#;
        assert!(every_cut(later).iter().all(|found| found.as_deref() == Some("outer")));
    }

    #[test]
    fn escapes_are_decoded_and_escaped_quotes_do_not_end_strings() {
        let text = r#"{"arguments":{"a":"say \"server\":\"x\""},"ser\u0076er":"caf\u00e9 \"q\""}"#;
        assert!(every_cut(text).iter().all(|found| found.as_deref() == Some("café \"q\"")));
    }

    #[test]
    fn a_prefix_without_a_complete_server_string_answers_nothing() {
        assert_eq!(scan(r#"{"server":"comp"#, 3), None);
        assert_eq!(scan(r#"{"name":"server","server""#, 3), None);
        assert_eq!(scan(r#"{"arguments":{"server":"inner"}"#, 2), None);
        assert_eq!(scan(r#"{"server":12,"name":"x"}"#, 4), None);
        assert_eq!(scan(r#"["server","x"]"#, 4), None);
        let mut scan = ServerScan::new();
        scan.feed(r#"{"name":"x"}"#);
        assert!(scan.is_done(), "the object ended");
        assert_eq!(scan.feed(r#","server":"late"}"#), None);
    }

    #[test]
    fn the_first_top_level_server_wins_and_overlong_labels_end_the_scan() {
        assert_eq!(scan(r#"{"server":"a","server":"b"}"#, 1).as_deref(), Some("a"));
        let long = format!(r#"{{"server":"{}"}}"#, "x".repeat(MAX_CAPTURE + 1));
        assert_eq!(scan(&long, 7), None);
    }
}
