//! Wire types of the rebyte API, shaped exactly as the `openai==3.57.0` client
//! parses and sends them.
//!
//! # Layout
//! - [`ids`]: id formats and prefixes (`conv_`, `resp_`, `rbk_`, `agent_` …).
//! - [`error`]: the error body `{"error":{type,code,message,param}}`.
//! - [`list`]: cursor pagination parameters and the list envelope.
//! - [`agent`]: saved Agents (create/update requests and the resource).
//! - [`tool`]: tool definitions: client functions and MCP servers.
//! - [`session`]: Sessions, their agent snapshot and environment choice.
//! - [`conversation`]: the Conversations view of a Session.
//! - [`turn`], [`item`], [`event`]: turns, history items, and session events
//!   (the standing stream and the inputs posted to it); [`turn_settings`]:
//!   what one response's request sets for it alone (text format, sampling).
//! - [`admin`]: organizations and API keys.
//! - [`validate`]: pure input checks shared by every endpoint (metadata limits …).
//! - [`vault`]: vaults and credentials (secrets only ever in requests).
//! - [`environment`]: environments; [`environment_template`]: reusable
//!   environment configurations and what environments made from one keep.
//! - [`skill`]: skills and their versions, the skills of environments, and
//!   the `SKILL.md` front matter parser; [`file`]: uploaded files.
//!
//! Nothing here performs I/O: this crate is serde and plain data.

pub mod admin;
pub mod agent;
pub mod approval;
pub mod conversation;
pub mod environment;
pub mod environment_template;
pub mod error;
pub mod event;
pub mod file;
pub mod ids;
pub mod item;
pub mod list;
pub mod response;
pub mod session;
pub mod skill;
mod tagged;
pub mod tool;
pub mod turn;
pub mod turn_settings;
pub mod validate;
pub mod vault;

/// String key-value pairs attached to a resource (≤ 16 pairs, keys ≤ 64, values ≤ 512 chars).
pub type Metadata = std::collections::BTreeMap<String, String>;
