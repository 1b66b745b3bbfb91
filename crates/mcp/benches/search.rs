//! Placeholder until the MCP bench lands (keeps the workspace manifest valid).
fn main() {}
