//! Regex search: a case-insensitive pattern (the `regex` crate: linear time, no lookaround or
//! backreferences) matched against each tool's name, then its description and parameter
//! names. Name matches rank first, each group in catalog order. The scan checks its deadline as
//! it goes.

use super::Candidate;
use crate::catalog::Catalog;
use crate::error::{McpError, Result};
use regex::Regex;
use std::time::{Duration, Instant};

/// Bounds on the compiled program, so a short pattern cannot demand a huge automaton.
const REGEX_SIZE_LIMIT: usize = 1 << 20;
const REGEX_DFA_SIZE_LIMIT: usize = 2 << 20;
/// How many tools are scanned between two looks at the clock.
const DEADLINE_STRIDE: usize = 64;

pub(crate) fn compile(pattern: &str) -> Result<Regex> {
    regex::RegexBuilder::new(pattern)
        .case_insensitive(true)
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
        })
}

pub(crate) fn rank(
    catalogs: &[&Catalog],
    regex: &Regex,
    limit: usize,
    started: Instant,
    deadline: Duration,
) -> Result<Vec<Candidate>> {
    let mut by_name = Vec::new();
    let mut by_detail = Vec::new();
    let mut scanned = 0usize;
    'catalogs: for (catalog_at, catalog) in catalogs.iter().enumerate() {
        let index = &catalog.index;
        for tool in 0..index.len() {
            scanned += 1;
            if scanned.is_multiple_of(DEADLINE_STRIDE) && started.elapsed() > deadline {
                return Err(McpError::SearchDeadline(deadline));
            }
            let candidate = Candidate { catalog: catalog_at, tool };
            if regex.is_match(&index.names[tool]) {
                by_name.push(candidate);
                if by_name.len() == limit {
                    break 'catalogs;
                }
            } else if by_detail.len() < limit && regex.is_match(&index.details[tool]) {
                by_detail.push(candidate);
            }
        }
    }
    if started.elapsed() > deadline {
        return Err(McpError::SearchDeadline(deadline));
    }
    by_name.extend(by_detail);
    by_name.truncate(limit);
    Ok(by_name)
}
