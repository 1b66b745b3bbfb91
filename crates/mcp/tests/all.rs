//! The mcp crate's integration tests: one binary, modules under `suite/`. They run against real
//! MCP servers: `@modelcontextprotocol/server-everything` from npm (stdio and Streamable HTTP) and
//! the small servers in `tests/servers/` (installed with `npm ci` on first use).

// Helpers outside #[test] functions unwrap too; clippy.toml's test allowance does not reach them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
