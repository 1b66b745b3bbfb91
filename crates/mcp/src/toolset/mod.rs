//! What the turn engine calls: a [`Toolset`] is a session's configured MCP servers (each a
//! [`ServerConfig`] bound to a [`Connection`]: its own for service-origin HTTP, a broker's for
//! environment-origin) over the shared [`CatalogCache`]. It runs `search_tools`, `call_tool`
//! and the resource helpers, and turns every failure into a message for the model.

mod args;
mod prefetch;
mod resources;
mod scan;

pub use args::{CallToolArgs, HelperTool, ListResourcesArgs, ReadResourceArgs, helper_tools};
pub use prefetch::Prefetch;
pub use scan::ServerScan;

use crate::catalog::{CacheKey, Catalog, CatalogCache, ToolInfo};
use crate::config::ServerConfig;
use crate::connection::{CallContext, Connection};
use crate::error::{McpError, Result};
use crate::output::McpCall;
use crate::search::{self, SearchArgs, SearchHit, SearchLimits};
use crate::validate;
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// A configured server and the connection that reaches it.
#[derive(Debug, Clone)]
pub struct ServerBinding {
    pub config: Arc<ServerConfig>,
    pub connection: Arc<Connection>,
}

/// A server left out of a search because its catalog could not be fetched.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UnavailableServer {
    pub server: String,
    pub error: String,
}

/// What `search_tools` answers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchOutput {
    pub results: Vec<SearchHit>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unavailable: Vec<UnavailableServer>,
}

/// A session's MCP servers, as one turn uses them.
#[derive(Debug, Clone)]
pub struct Toolset {
    organization: String,
    session: String,
    servers: Vec<ServerBinding>,
    cache: Arc<CatalogCache>,
    limits: SearchLimits,
}

impl Toolset {
    pub fn new(organization: impl Into<String>, session: impl Into<String>, cache: Arc<CatalogCache>) -> Self {
        Toolset {
            organization: organization.into(),
            session: session.into(),
            servers: Vec::new(),
            cache,
            limits: SearchLimits::default(),
        }
    }

    /// Adds a server (the label of `config` is what the model uses).
    pub fn with_server(mut self, config: impl Into<Arc<ServerConfig>>, connection: Arc<Connection>) -> Self {
        self.servers.push(ServerBinding { config: config.into(), connection });
        self
    }

    pub fn with_limits(mut self, limits: SearchLimits) -> Self {
        self.limits = limits;
        self
    }

    pub fn servers(&self) -> &[ServerBinding] {
        &self.servers
    }

    fn binding(&self, label: &str) -> Result<&ServerBinding> {
        self.servers.iter().find(|binding| binding.config.label == label).ok_or_else(|| McpError::UnknownServer {
            server: label.to_owned(),
            known: self.servers.iter().map(|binding| binding.config.label.clone()).collect(),
        })
    }

    fn context(binding: &ServerBinding, cancel: &CancellationToken) -> CallContext {
        CallContext::new(binding.config.request_metadata.clone(), cancel.clone())
            .with_call_timeout(binding.config.call_timeout)
    }

    /// The catalog cache key of a server in this session.
    pub fn cache_key(&self, config: &ServerConfig) -> CacheKey {
        CacheKey {
            organization: self.organization.clone(),
            session: self.session.clone(),
            config: config.config_hash(),
            credentials: config.credential_hash(),
        }
    }

    /// Fetches the full tool list now and refreshes the cache with the allowed part.
    async fn fetch(
        &self,
        binding: &ServerBinding,
        cancel: &CancellationToken,
    ) -> Result<(Arc<Catalog>, Arc<Vec<ToolInfo>>)> {
        let generation = binding.connection.tools_generation();
        let tools = binding.connection.list_tools_fresh(&Self::context(binding, cancel)).await?;
        let allowed: Vec<ToolInfo> = tools.iter().filter(|tool| binding.config.allows(&tool.name)).cloned().collect();
        let catalog = Arc::new(Catalog::new(binding.config.label.clone(), allowed));
        self.cache.put(self.cache_key(&binding.config), &binding.connection, generation, catalog.clone());
        Ok((catalog, tools))
    }

    /// The searchable catalog of a server: from the cache, or fetched.
    pub async fn catalog(&self, binding: &ServerBinding, cancel: &CancellationToken) -> Result<Arc<Catalog>> {
        match self.cache.get(&self.cache_key(&binding.config), &binding.connection) {
            Some(catalog) => Ok(catalog),
            None => Ok(self.fetch(binding, cancel).await?.0),
        }
    }

    /// Fetches every server's tool list (the engine's check that required servers answer).
    pub async fn refresh_all(&self, cancel: &CancellationToken) -> Vec<(String, Result<Arc<Catalog>>)> {
        let fetches = self.servers.iter().map(|binding| async move {
            (binding.config.label.clone(), self.fetch(binding, cancel).await.map(|(catalog, _)| catalog))
        });
        futures::future::join_all(fetches).await
    }

    /// `search_tools` from the model's JSON arguments.
    pub async fn search_tools_json(&self, arguments: &str, cancel: &CancellationToken) -> Result<SearchOutput> {
        let args: SearchArgs = parse(arguments)?;
        self.search_tools(&args, cancel).await
    }

    /// `search_tools`: checks the arguments, gets each searched server's catalog (cached up
    /// to 30 s) and ranks its allowed tools. A server whose catalog cannot be fetched is listed
    /// under `unavailable` unless it was named in `server`, which makes it an error.
    pub async fn search_tools(&self, args: &SearchArgs, cancel: &CancellationToken) -> Result<SearchOutput> {
        let checked = args.check()?;
        let bindings: Vec<&ServerBinding> = match checked.server() {
            Some(label) => vec![self.binding(label)?],
            None => self.servers.iter().collect(),
        };
        let fetched = futures::future::join_all(bindings.iter().map(|binding| self.catalog(binding, cancel))).await;
        let mut catalogs = Vec::with_capacity(fetched.len());
        let mut unavailable = Vec::new();
        for (binding, outcome) in bindings.iter().zip(fetched) {
            match outcome {
                Ok(catalog) => catalogs.push(catalog),
                Err(error) if checked.server().is_some() => return Err(error),
                Err(error) => unavailable
                    .push(UnavailableServer { server: binding.config.label.clone(), error: error.to_string() }),
            }
        }
        let catalogs: Vec<&Catalog> = catalogs.iter().map(Arc::as_ref).collect();
        let results = search::search(&catalogs, &checked, self.limits)?;
        Ok(SearchOutput { results, unavailable })
    }

    /// `call_tool` from the model's JSON arguments; unparsable arguments become a failed call.
    pub async fn call_tool_json(&self, arguments: &str, cancel: &CancellationToken) -> McpCall {
        self.call_tool_json_prefetched(arguments, None, cancel).await
    }

    /// [`Self::call_tool_json`] with the call's own [`Prefetch`], if one was started.
    pub async fn call_tool_json_prefetched(
        &self,
        arguments: &str,
        prefetch: Option<Prefetch>,
        cancel: &CancellationToken,
    ) -> McpCall {
        match parse::<CallToolArgs>(arguments) {
            Ok(args) => self.call_tool_prefetched(&args, prefetch, cancel).await,
            Err(error) => McpCall::new("", "", &Value::String(arguments.to_owned())).failed(error),
        }
    }

    /// `call_tool`: checks `allowed_tools`, fetches the server's catalog fresh (never from the
    /// cache, which it refreshes), checks that the tool is still offered, validates the
    /// arguments against its current inputSchema, and calls it. Always returns the record of
    /// an `mcp_call` item; a failure is in its `error` (and `failure`).
    pub async fn call_tool(&self, args: &CallToolArgs, cancel: &CancellationToken) -> McpCall {
        self.call_tool_prefetched(args, None, cancel).await
    }

    /// [`Self::call_tool`], whose fresh `tools/list` is `prefetch` when it was started for this
    /// call's server over the current connection and succeeded (see [`Prefetch`]); any other
    /// prefetch is dropped and the call fetches as usual.
    pub async fn call_tool_prefetched(
        &self,
        args: &CallToolArgs,
        prefetch: Option<Prefetch>,
        cancel: &CancellationToken,
    ) -> McpCall {
        let record = McpCall::new(&args.server, &args.name, &args.arguments);
        match self.checked_call(args, prefetch, cancel).await {
            Ok(output) => record.completed(output),
            Err(error) => record.failed(error),
        }
    }

    async fn checked_call(
        &self,
        args: &CallToolArgs,
        prefetch: Option<Prefetch>,
        cancel: &CancellationToken,
    ) -> Result<crate::CallOutput> {
        let binding = self.binding(&args.server)?;
        if !binding.config.allows(&args.name) {
            return Err(McpError::ToolNotAllowed { server: args.server.clone(), tool: args.name.clone() });
        }
        let tools = self.fresh_tools(binding, prefetch, cancel).await?;
        let Some(tool) = tools.iter().find(|tool| tool.name == args.name) else {
            return Err(McpError::UnknownTool { server: args.server.clone(), tool: args.name.clone() });
        };
        let arguments = match &args.arguments {
            Value::String(text) => serde_json::from_str(text).unwrap_or_else(|_| args.arguments.clone()),
            other => other.clone(),
        };
        let arguments = validate::arguments(&args.server, tool, &arguments)?;
        binding.connection.call_tool(&args.name, arguments, &Self::context(binding, cancel)).await
    }
}

/// Parses a helper's JSON arguments, with a message for the model when they do not fit.
pub(crate) fn parse<T: serde::de::DeserializeOwned>(arguments: &str) -> Result<T> {
    let text = if arguments.trim().is_empty() { "{}" } else { arguments };
    serde_json::from_str(text).map_err(|error| McpError::InvalidRequest(format!("arguments do not fit: {error}")))
}
