//! The application layer: what rebyte does, whichever API asks. The HTTP
//! handlers parse a request, call one function here, and render its answer;
//! the validation, the orchestration across engine, environments and store,
//! the events a change publishes, and read-your-writes live here.
//!
//! # Layout
//! - [`App`]: the services, one per resource, each for one organization
//!   (`app.sessions(org).create(…)`): [`agents`], [`sessions`], [`turns`]
//!   (inputs, turns and items), [`responses`] (the Responses API's view of
//!   turns, and the wire items it and Conversations accept),
//!   [`environments`] (and their files),
//!   [`artifacts`], [`vaults`] (and their credentials), [`skills`] (and
//!   their versions), [`files`] (uploaded files), [`templates`]
//!   (environment templates, and resolving them), [`idempotency`] (the
//!   `Idempotency-Key` of creates).
//! - [`file_listing`]: one page of an environment's files, walking no more
//!   of the tree than the page needs.
//! - [`environment_contents`]: an environment's skills and uploaded files,
//!   resolved and copied when it is created.
//! - [`error`]: [`Error`], what an operation answers when it cannot be done.
//! - [`keys`]: organizations and `rbk_` keys (minting, hashing, lookup).
//! - [`limits`]: per-organization request rate and active turns.
//! - [`credentials`]: vault credentials at run time (MCP credential choice,
//!   OAuth refresh, environment credentials) and sealing what vaults store.
//! - [`rekey`]: rotating the master key (every sealed value, in one transaction).
//! - [`mcp_secrets`]: session-level MCP secrets sealed at rest, and the
//!   credentials the engine's MCP tools ask for at turn time.
//!
//! Data flows one way: app → engine → store. Nothing here knows HTTP.

pub mod agents;
pub mod artifacts;
pub mod credentials;
pub mod environment_contents;
pub mod environments;
pub mod error;
pub mod file_listing;
pub mod files;
pub mod idempotency;
pub mod keys;
pub mod limits;
pub mod mcp_secrets;
pub mod rekey;
pub mod responses;
pub mod sessions;
pub mod skills;
pub mod template_preparation;
pub mod templates;
pub mod turns;
pub mod vaults;

pub use error::{Error, Result};

use credentials::Credentials;
use engine::Engine;
use std::sync::Arc;
use store::Store;

/// The application: what every service shares. Cheap to clone (all `Arc`).
#[derive(Clone)]
pub struct App {
    pub store: Arc<dyn Store>,
    pub engine: Engine,
    pub envs: Arc<engine::environments::Environments>,
    /// Vault credentials: sealing, choice, OAuth refresh.
    pub credentials: Credentials,
    /// Every MCP connection: closed when sessions and environments are deleted.
    pub mcp: Arc<mcp::Hub>,
    /// What one organization may ask for at once.
    pub limits: limits::OrgLimits,
    /// This node's request buckets, one per organization.
    pub requests: Arc<limits::RequestRate>,
    /// Recent counts of each organization's active turns.
    pub active_turns: Arc<limits::ActiveTurns>,
}

impl App {
    pub fn agents<'a>(&'a self, org: &'a str) -> agents::Service<'a> {
        agents::Service { app: self, org }
    }

    pub fn sessions<'a>(&'a self, org: &'a str) -> sessions::Service<'a> {
        sessions::Service { app: self, org }
    }

    pub fn turns<'a>(&'a self, org: &'a str) -> turns::Service<'a> {
        turns::Service { app: self, org }
    }

    pub fn responses<'a>(&'a self, org: &'a str) -> responses::Service<'a> {
        responses::Service { app: self, org }
    }

    pub fn environments<'a>(&'a self, org: &'a str) -> environments::Service<'a> {
        environments::Service { app: self, org }
    }

    pub fn artifacts<'a>(&'a self, org: &'a str) -> artifacts::Service<'a> {
        artifacts::Service { app: self, org }
    }

    pub fn vaults<'a>(&'a self, org: &'a str) -> vaults::Service<'a> {
        vaults::Service { app: self, org }
    }

    pub fn skills<'a>(&'a self, org: &'a str) -> skills::Service<'a> {
        skills::Service { app: self, org }
    }

    pub fn files<'a>(&'a self, org: &'a str) -> files::Service<'a> {
        files::Service { app: self, org }
    }

    pub fn templates<'a>(&'a self, org: &'a str) -> templates::Service<'a> {
        templates::Service { app: self, org }
    }

    pub fn idempotency<'a>(&'a self, org: &'a str) -> idempotency::Service<'a> {
        idempotency::Service { app: self, org }
    }
}

/// Seconds since the Unix epoch.
pub fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}
