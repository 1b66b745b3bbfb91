//! The mcp crate's integration tests: one binary, modules under `suite/`. They run against real
//! MCP servers: `@modelcontextprotocol/server-everything` from npm (stdio and Streamable HTTP) and
//! the small servers in `tests/servers/` (installed with `npm ci` on first use).

mod suite;
