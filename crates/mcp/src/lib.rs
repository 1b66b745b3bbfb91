//! MCP clients (stdio, Streamable HTTP), brokers, catalog cache, BM25 and regex tool search, argument validation.
