//! The engine: runs turns.
//!
//! # Layout
//! - [`Engine`]: the submission side. HTTP handlers call `submit_input`,
//!   `submit_tool_result` and `cancel`; each returns as soon as the change is
//!   committed. One worker task per busy session owns its turns and runs them
//!   one at a time, in order (a queue pair: submissions in, events out).
//! - [`turn`]: the loop of one turn (model steps, tool calls, waiting);
//!   [`output_format`]: its structured output, output limit and effort.
//! - [`record`]: writes a turn's items and states, then publishes events.
//! - [`bus`]: persists events and fans them out to live subscribers.
//! - [`history`]: stored items → the model's messages.
//! - [`tools`]: client functions and the hosted-tools plug-in point.
//! - [`hosted`]: the server's hosted tools: [`sandbox_tools`] (shell and
//!   files in the environment) and the MCP helpers ([`mcp_tools`] over the
//!   servers [`mcp_connect`] connects; stdio ones run in the sandbox through
//!   [`mcp_launch`]), and [`workflow_tool`] (`dynamic_workflow`: programs over
//!   the MCP helpers, run by the `workflow` crate's interpreter).
//! - [`tool_search`]: `tool_search` over the deferred client functions, which
//!   [`tools::ToolSet`] offers the model once found.
//! - [`environments`]: one sandbox per environment, initialized once,
//!   paused after idling ([`environment_events`] tells the sessions on it);
//!   [`setup_progress`] keeps its setup's step and log while it runs;
//!   [`environment_contents`] places its skills (first) and uploaded
//!   files, and [`skill_catalog`] lists the skills (and those of its
//!   capability directories) in each turn's instructions.

pub mod bus;
pub mod clock;
mod cluster;
pub mod environment_contents;
pub mod environment_events;
pub mod environments;
pub mod error;
pub mod fence;
mod histories;
pub mod history;
pub mod hosted;
pub mod journal;
pub mod mcp_connect;
pub mod mcp_launch;
mod mcp_prefetch;
pub mod mcp_tools;
pub mod output_format;
mod reasoning_item;
pub mod record;
mod recovery;
mod runtime;
pub mod sandbox_tools;
pub mod setup_progress;
pub mod skill_catalog;
pub mod tool_search;
pub mod tools;
pub mod turn;
pub mod waiting;
pub mod workflow_tool;

pub use bus::Bus;
pub use error::{Error, Result};
pub use runtime::{Engine, MAX_QUEUED_TURNS};
pub use tools::{HostedOutput, HostedTools, HostedToolsFactory};
