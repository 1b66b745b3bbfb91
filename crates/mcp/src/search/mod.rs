//! `search_tools`: the request ([`SearchArgs`]) and its checks, and the search itself over a set
//! of catalogs: BM25 for `query` (`bm25`), a case-insensitive regex for `pattern` (`pattern`).
//! Each catalog carries an index built by its first search, so later searches only read.

mod bm25;
mod haystack;
pub(crate) mod index;
mod pattern;
mod tokenize;

use crate::catalog::Catalog;
use crate::error::{McpError, Result};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Longest `query`, in characters.
pub const MAX_QUERY_CHARS: usize = 500;
/// Longest `pattern`, in characters.
pub const MAX_PATTERN_CHARS: usize = 200;
/// `limit` when the model gives none.
pub const DEFAULT_LIMIT: usize = 5;
/// Largest `limit`.
pub const MAX_LIMIT: usize = 20;

/// The arguments of `search_tools` as the model sends them.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    #[serde(default)]
    pub query: Option<String>,
    #[serde(default)]
    pub pattern: Option<String>,
    #[serde(default)]
    pub server: Option<String>,
    #[serde(default)]
    pub limit: Option<i64>,
}

/// Knobs of the search itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchLimits {
    /// How long a pattern search may run.
    pub pattern_deadline: Duration,
}

impl Default for SearchLimits {
    fn default() -> Self {
        SearchLimits { pattern_deadline: Duration::from_millis(500) }
    }
}

/// One found tool, as the model sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchHit {
    /// The server label to pass to `call_tool`.
    pub server: String,
    /// The tool's original name.
    pub name: String,
    pub description: String,
    #[serde(rename = "inputSchema")]
    pub input_schema: Arc<Map<String, Value>>,
}

/// A tool found by a ranker: catalog position and tool position in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Candidate {
    pub(crate) catalog: usize,
    pub(crate) tool: usize,
}

/// A checked search: what to look for and how many.
#[derive(Debug, Clone)]
pub(crate) enum Needle {
    Query(String),
    Pattern(pattern::Pattern),
}

/// [`SearchArgs`] after every check that needs no server.
#[derive(Debug, Clone)]
pub struct CheckedSearch {
    pub(crate) needle: Needle,
    pub(crate) server: Option<String>,
    pub(crate) limit: usize,
}

impl SearchArgs {
    /// A text search.
    pub fn query(query: impl Into<String>) -> Self {
        SearchArgs { query: Some(query.into()), ..SearchArgs::default() }
    }

    /// A pattern search.
    pub fn pattern(pattern: impl Into<String>) -> Self {
        SearchArgs { pattern: Some(pattern.into()), ..SearchArgs::default() }
    }

    pub fn with_limit(mut self, limit: i64) -> Self {
        self.limit = Some(limit);
        self
    }

    pub fn on_server(mut self, server: impl Into<String>) -> Self {
        self.server = Some(server.into());
        self
    }

    /// Checks the arguments: exactly one of `query` and `pattern`, their lengths, the pattern's
    /// syntax, and `limit` in 1..=20.
    pub fn check(&self) -> Result<CheckedSearch> {
        let bad = |message: String| Err(McpError::InvalidSearch(message));
        let needle = match (&self.query, &self.pattern) {
            (Some(_), Some(_)) => return bad("give exactly one of query and pattern, not both".into()),
            (None, None) => return bad("give exactly one of query and pattern".into()),
            (Some(query), None) => {
                let chars = query.chars().count();
                if chars > MAX_QUERY_CHARS {
                    return bad(format!("query is {chars} characters; the limit is {MAX_QUERY_CHARS}"));
                }
                if query.trim().is_empty() {
                    return bad("query is empty".into());
                }
                Needle::Query(query.clone())
            }
            (None, Some(pattern)) => {
                let chars = pattern.chars().count();
                if chars > MAX_PATTERN_CHARS {
                    return bad(format!("pattern is {chars} characters; the limit is {MAX_PATTERN_CHARS}"));
                }
                if pattern.is_empty() {
                    return bad("pattern is empty".into());
                }
                Needle::Pattern(pattern::compile(pattern)?)
            }
        };
        let limit = match self.limit {
            None => DEFAULT_LIMIT,
            Some(limit) if (1..=MAX_LIMIT as i64).contains(&limit) => limit as usize,
            Some(limit) => return bad(format!("limit is {limit}; it must be between 1 and {MAX_LIMIT}")),
        };
        Ok(CheckedSearch { needle, server: self.server.clone(), limit })
    }
}

impl CheckedSearch {
    /// The server the search is narrowed to, if any.
    pub fn server(&self) -> Option<&str> {
        self.server.as_deref()
    }
}

/// Runs a checked search over `catalogs` (in server order).
pub fn search(catalogs: &[&Catalog], search: &CheckedSearch, limits: SearchLimits) -> Result<Vec<SearchHit>> {
    let started = Instant::now();
    let candidates = match &search.needle {
        Needle::Query(query) => bm25::rank(catalogs, query, search.limit),
        Needle::Pattern(compiled) => pattern::rank(catalogs, compiled, search.limit, started, limits.pattern_deadline)?,
    };
    Ok(candidates
        .into_iter()
        .map(|Candidate { catalog, tool }| {
            let catalog = catalogs[catalog];
            let tool = &catalog.tools()[tool];
            SearchHit {
                server: catalog.server().to_owned(),
                name: tool.name.clone(),
                description: tool.description.clone(),
                input_schema: tool.input_schema.clone(),
            }
        })
        .collect())
}
