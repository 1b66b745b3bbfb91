//! Regex search: a case-insensitive pattern (the `regex` crate: linear time, no lookaround or
//! backreferences; multi-line, so `^` and `$` also match at line ends) matched against each
//! tool's name, then its description and parameter names. Name matches rank first, each group
//! in catalog order. The scan checks its deadline as it goes.

use super::Candidate;
use crate::catalog::Catalog;
use crate::error::{McpError, Result};
use regex::Regex;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

/// Bounds on the compiled program, so a short pattern cannot demand a huge automaton.
const REGEX_SIZE_LIMIT: usize = 1 << 20;
const REGEX_DFA_SIZE_LIMIT: usize = 2 << 20;
/// How many tools are scanned one by one between two looks at the clock.
const DEADLINE_STRIDE: usize = 64;

/// A compiled pattern and whether it needs tool-by-tool matching.
#[derive(Debug, Clone)]
pub(crate) struct Pattern {
    regex: Regex,
    /// `\A` or `\z` only see the ends of the string they run on.
    whole_text_anchors: bool,
}

pub(crate) fn compile(pattern: &str) -> Result<Pattern> {
    let regex = regex::RegexBuilder::new(pattern)
        .case_insensitive(true)
        .multi_line(true)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_DFA_SIZE_LIMIT)
        .nest_limit(64)
        .build()
        .map_err(|error| {
            let why = match error {
                regex::Error::Syntax(text) => text,
                regex::Error::CompiledTooBig(limit) => format!("the pattern compiles to more than {limit} bytes"),
                other => other.to_string(),
            };
            McpError::InvalidSearch(format!("invalid pattern (lookaround and backreferences are not supported): {why}"))
        })?;
    let whole_text_anchors = pattern.contains("\\A") || pattern.contains("\\z");
    Ok(Pattern { regex, whole_text_anchors })
}

pub(crate) fn rank(
    catalogs: &[&Catalog],
    pattern: &Pattern,
    limit: usize,
    started: Instant,
    deadline: Duration,
) -> Result<Vec<Candidate>> {
    let tick = |at: usize| {
        if at.is_multiple_of(DEADLINE_STRIDE) && started.elapsed() > deadline {
            Err(McpError::SearchDeadline(deadline))
        } else {
            Ok(())
        }
    };
    let mut by_name: Vec<Candidate> = Vec::new();
    for (catalog_at, catalog) in catalogs.iter().enumerate() {
        catalog.index().names.scan(
            &pattern.regex,
            pattern.whole_text_anchors,
            |tool| {
                by_name.push(Candidate { catalog: catalog_at, tool });
                if by_name.len() == limit { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
            },
            tick,
        )?;
        if by_name.len() == limit {
            return Ok(by_name);
        }
    }
    let mut by_detail: Vec<Candidate> = Vec::new();
    let wanted = limit - by_name.len();
    for (catalog_at, catalog) in catalogs.iter().enumerate() {
        catalog.index().details.scan(
            &pattern.regex,
            pattern.whole_text_anchors,
            |tool| {
                let candidate = Candidate { catalog: catalog_at, tool };
                if !by_name.contains(&candidate) {
                    by_detail.push(candidate);
                }
                if by_detail.len() == wanted { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
            },
            tick,
        )?;
        if by_detail.len() == wanted {
            break;
        }
    }
    if started.elapsed() > deadline {
        return Err(McpError::SearchDeadline(deadline));
    }
    by_name.extend(by_detail);
    Ok(by_name)
}
