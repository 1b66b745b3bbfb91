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
//! - [`search`]: `search_tools` over one or more catalogs: BM25 for `query`, linear-time regex for
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
pub use hub::{Connected, Hub, Origin, ServerFailure, ServerSpec, StdioLauncher, StdioStreams};
pub use output::{CallOutput, McpCall, McpCallStatus};
pub use search::{CheckedSearch, SearchArgs, SearchHit, SearchLimits, search};
pub use secret::Secret;
pub use toolset::{
    CallToolArgs, HelperTool, ListResourcesArgs, ReadResourceArgs, SearchOutput, ServerBinding, Toolset,
    UnavailableServer, helper_tools,
};
