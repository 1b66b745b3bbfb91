//! The texts a pattern is matched against, for all tools of a catalog, joined into one string
//! with a newline after each: one regex scan over contiguous memory (where the `regex` crate's
//! literal prefilters shine) instead of one call per tool.
//!
//! The joined scan gives exactly the per-tool answers because the regex is compiled in
//! multi-line mode (`^` and `$` match next to the newline separators as at a text's ends) and
//! because a match that starts in one tool's text but runs past its end is re-checked on that
//! text alone, the scan then going on from the next tool's start. Patterns using `\A` or `\z`
//! (which only see the ends of the whole string) are matched tool by tool instead.

use regex::Regex;
use std::ops::ControlFlow;

#[derive(Debug, Default)]
pub(crate) struct Haystack {
    text: String,
    /// Where each tool's text starts in `text`.
    starts: Vec<usize>,
}

impl Haystack {
    pub(crate) fn push(&mut self, piece: &str) {
        self.starts.push(self.text.len());
        self.text.push_str(piece);
        self.text.push('\n');
    }

    /// The end of tool `at`'s text (its separator's position).
    fn end(&self, at: usize) -> usize {
        self.starts.get(at + 1).map_or(self.text.len(), |next| *next) - 1
    }

    pub(crate) fn get(&self, at: usize) -> &str {
        &self.text[self.starts[at]..self.end(at)]
    }

    fn tool_at(&self, offset: usize) -> usize {
        self.starts.partition_point(|start| *start <= offset).saturating_sub(1)
    }

    /// Calls `found` with every tool whose text matches `regex`, in order, until it breaks.
    /// `tick` is called between regex runs and may stop the scan with an error.
    pub(crate) fn scan<E>(
        &self,
        regex: &Regex,
        whole_text_anchors: bool,
        mut found: impl FnMut(usize) -> ControlFlow<()>,
        mut tick: impl FnMut(usize) -> Result<(), E>,
    ) -> Result<(), E> {
        if whole_text_anchors {
            for at in 0..self.starts.len() {
                tick(at)?;
                if regex.is_match(self.get(at)) && found(at).is_break() {
                    return Ok(());
                }
            }
            return Ok(());
        }
        let mut from = 0;
        while from < self.text.len() {
            tick(0)?;
            let Some(hit) = regex.find_at(&self.text, from) else { return Ok(()) };
            let at = self.tool_at(hit.start());
            let matches = hit.end() <= self.end(at) || regex.is_match(self.get(at));
            if matches && found(at).is_break() {
                return Ok(());
            }
            match self.starts.get(at + 1) {
                Some(next) => from = *next,
                None => return Ok(()),
            }
        }
        Ok(())
    }
}
