//! MCP clients (stdio, Streamable HTTP), brokers, catalog cache, BM25 and regex tool search, argument validation.
//!
//! # Layout
//!
//! - [`connection`]: one initialized MCP client over stdio (any byte-stream pair, or a host process)
//!   or Streamable HTTP, built on `rmcp`. Every request has a timeout, honours a cancellation token
//!   (sending `notifications/cancelled`), and carries the caller's `_meta`.
//! - [`broker`]: environment-origin connections shared by every session of a sandbox, keyed by
//!   `(sandbox id, server_label)`; the first launch wins and a dead broker stays dead.
//! - [`catalog`]: a server's `tools/list` (all pages) as a searchable [`Catalog`], and the
//!   [`CatalogCache`] (30 s, keyed by organization, session, configuration and credentials).
//! - [`mod@search`]: `search_tools` over one or more catalogs: BM25 for `query`, linear-time regex for
//!   `pattern`.
//! - [`hub`]: what the engine holds for the whole server: it connects a session's servers for a
//!   turn (service-origin HTTP per session, environment-origin through brokers) and closes them
//!   when sessions or sandboxes go.
//! - [`toolset`]: what the turn engine calls: `search_tools`, `call_tool` and the resource helpers
//!   over a session's configured servers.
//! - [`validate`]: arguments against a tool's `inputSchema`.
//! - [`output`]: MCP results turned into the text recorded in `mcp_call` items.
//! - [`config`], [`secret`], [`clock`], [`error`]: the small types the rest is built from.
//!
//! Data flows one way: the engine calls in; nothing here calls back up.
//!
//! # How the engine uses it
//!
//! ```no_run
//! use mcp::{Hub, Origin, ServerConfig, ServerSpec, SystemClock, TransportConfig, HttpConfig, Secret};
//! use std::sync::Arc;
//! use tokio_util::sync::CancellationToken;
//!
//! # async fn turn(hub: &Hub, launcher: &dyn mcp::StdioLauncher) -> Result<(), mcp::McpError> {
//! // Once per turn: the session's `type: "mcp"` tools as specs (stdio is environment-origin).
//! let mut http = HttpConfig::new("https://mcp.example.com/mcp");
//! http.authorization = Some(Secret::new("Bearer …"));
//! let specs = [ServerSpec {
//!     config: ServerConfig::new("company", TransportConfig::Http(http)),
//!     origin: Origin::Service,
//!     required: true,
//! }];
//! let connected = hub.connect("org_1", "session_1", &specs, Some(launcher)).await;
//! if let Some(failure) = connected.required_failure() {
//!     return Err(failure.error.clone()); // fail the turn before the first model call
//! }
//! let tools = connected.toolset;
//! let cancel = CancellationToken::new(); // the turn's cancellation
//! // The model's tool calls, with their JSON arguments:
//! let found = tools.search_tools_json(r#"{"query":"warehouse stock"}"#, &cancel).await?;
//! let record = tools.call_tool_json(r#"{"server":"company","name":"get_inventory","arguments":{"sku":"SKU42"}}"#, &cancel).await;
//! // `record` is the `mcp_call` item (arguments, output, error, status); `record.model_text()`
//! // is the tool result the model sees.
//! # let _ = (found, record, Arc::new(SystemClock));
//! # Ok(())
//! # }
//! ```
//!
//! The hub itself is built once: `Hub::new(Arc::new(SystemClock))`. On session deletion call
//! [`Hub::close_session`] (HTTP `DELETE` upstream); on environment deletion
//! [`Hub::remove_sandbox`].

pub mod broker;
pub mod catalog;
pub mod clock;
pub mod config;
pub mod connection;
pub mod error;
pub mod hub;
pub mod output;
pub mod search;
pub mod secret;
pub mod toolset;
pub mod validate;

pub use broker::{Broker, BrokerKey, BrokerRegistry};
pub use catalog::{CATALOG_TTL, CacheKey, CacheStats, Catalog, CatalogCache, ToolInfo};
pub use clock::{Clock, ManualClock, SystemClock};
pub use config::{ConfigHash, CredentialHash, HttpConfig, ServerConfig, StdioConfig, TransportConfig};
pub use connection::{CallContext, Connection, Termination, Timeouts};
pub use error::{McpError, Result, Step};
pub use hub::{Connected, HttpProxy, Hub, Origin, ServerFailure, ServerSpec, StdioLauncher, StdioStreams};
pub use output::{CallOutput, McpCall, McpCallStatus};
pub use search::{CheckedSearch, SearchArgs, SearchHit, SearchLimits, search};
pub use secret::Secret;
pub use toolset::{
    CallToolArgs, HelperTool, ListResourcesArgs, Prefetch, ReadResourceArgs, SearchOutput, ServerBinding, ServerScan,
    Toolset, UnavailableServer, helper_tools,
};
