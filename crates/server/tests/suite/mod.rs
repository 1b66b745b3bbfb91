//! Behaviour suites, one module per resource.

mod agents;
mod auth;
mod bad_input;
mod cluster;
mod console;
mod conversations;
mod database_url;
mod environment_packages;
mod environment_restart;
mod environment_runtime;
mod environment_setup;
mod environments;
mod mcp;
mod observability;
mod openapi;
mod ops;
mod org_limits;
mod outage;
mod responses;
mod sessions;
mod skills;
mod tool_search;
mod turn_failures;
mod turns;
mod vaults;
