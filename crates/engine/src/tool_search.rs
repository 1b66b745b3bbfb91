//! `tool_search`: the hosted tool a `{"type":"tool_search"}` tool gives the model, searching the
//! session's deferred client functions (`defer_loading: true`, never sent to the model
//! otherwise) with the MCP search's BM25 and regex engine — names, descriptions and parameter
//! names. It answers each found function's name, description and parameters, and loads it: the
//! turn's [`crate::tools::ToolSet`] offers it to the model from the next step on, for the rest
//! of the turn, and calling it works as any client function.

use crate::record::Recorder;
use crate::tools::{HostedOutput, HostedTools};
use mcp::{Catalog, SearchArgs, SearchLimits, ToolInfo};
use models::ToolSpec;
use protocol::tool::FunctionTool;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// The tool's name.
pub const NAME: &str = "tool_search";

/// The deferred functions found so far in a turn.
pub type Loaded = Arc<Mutex<HashSet<String>>>;

/// The arguments: those of `search_tools` less `server`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    #[serde(default)]
    query: Option<String>,
    #[serde(default)]
    pattern: Option<String>,
    #[serde(default)]
    limit: Option<i64>,
}

/// `tool_search` for one turn.
pub struct ToolSearch {
    catalog: Catalog,
    loaded: Loaded,
}

impl ToolSearch {
    /// The search over `deferred`; what it finds goes into `loaded`.
    pub fn new<'a>(deferred: impl IntoIterator<Item = &'a FunctionTool>, loaded: Loaded) -> Self {
        let tools = deferred
            .into_iter()
            .map(|f| ToolInfo::new(f.name.clone(), f.description.clone(), f.parameters.clone()))
            .collect();
        ToolSearch { catalog: Catalog::new("functions", tools), loaded }
    }

    fn search(&self, arguments: &Value) -> Result<Value, String> {
        let args: Args = serde_json::from_value(arguments.clone()).map_err(|e| format!("arguments do not fit: {e}"))?;
        let search = SearchArgs { query: args.query, pattern: args.pattern, server: None, limit: args.limit };
        let checked = search.check().map_err(|e| e.to_string())?;
        let hits = mcp::search(&[&self.catalog], &checked, SearchLimits::default()).map_err(|e| e.to_string())?;
        let mut loaded = self.loaded.lock().map_err(|_| "the search is unavailable".to_string())?;
        let results: Vec<Value> = hits
            .into_iter()
            .map(|hit| {
                loaded.insert(hit.name.clone());
                json!({"name": hit.name, "description": hit.description, "parameters": hit.input_schema})
            })
            .collect();
        Ok(json!({"results": results}))
    }
}

#[async_trait::async_trait]
impl HostedTools for ToolSearch {
    fn specs(&self) -> Vec<ToolSpec> {
        let description = "Search the functions that are not loaded yet. Give exactly one of `query` (words, BM25 \
                           over function names, descriptions and parameter names) or `pattern` (a case-insensitive \
                           regular expression). Each result has the function's name, description and parameters; \
                           the functions found can be called from the next step on.";
        let parameters = json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "maxLength": mcp::search::MAX_QUERY_CHARS},
                "pattern": {"type": "string", "maxLength": mcp::search::MAX_PATTERN_CHARS},
                "limit": {"type": "integer", "minimum": 1, "maximum": mcp::search::MAX_LIMIT,
                          "default": mcp::search::DEFAULT_LIMIT}
            },
            "additionalProperties": false
        });
        vec![ToolSpec::new(NAME, description, parameters)]
    }

    fn handles(&self, name: &str) -> bool {
        name == NAME
    }

    async fn call(&self, _: &str, _: &str, arguments: Value, _: &mut Recorder, _: &CancellationToken) -> HostedOutput {
        match self.search(&arguments) {
            Ok(found) => HostedOutput::text(found.to_string()),
            Err(e) => HostedOutput::text(format!("error: {e}")),
        }
    }
}
