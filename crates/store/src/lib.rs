//! Persistence for rebyte.
//!
//! # Layout
//! - [`Store`]: the one trait every backend implements; the server holds an
//!   `Arc<dyn Store>` and never sees SQL.
//! - `sql`: [`SqlStore`], the implementation both backends share: one set of
//!   statements, with the few that differ (JSON functions) per backend.
//! - [`sqlite`]: the default backend, one WAL-mode file under the data directory,
//!   with its migrations in `migrations/sqlite`.
//! - [`postgres`]: PostgreSQL (`postgres://…`), with its migrations in
//!   `migrations/postgres`; [`open`] picks the backend a URL names.
//! - [`cluster`]: the nodes sharing a PostgreSQL database.
//! - [`Page`] and [`SessionFilter`]: what list queries take and give.
//!
//! Every method takes the organization id: a row of another organization is
//! simply not found.

pub mod cluster;
mod error;
mod migrate;
pub mod postgres;
mod postgres_batch;
mod postgres_docs;
mod postgres_rows;
mod read_cache;
mod session_cache;
mod sql;
pub mod sqlite;
mod sqlite_batch;
mod sqlite_checkpoint;

pub use cluster::{Cluster, NodeSpec, NodeView};
pub use error::{Error, Result};
pub use postgres::PgStore;
pub use sql::SqlStore;
pub use sqlite::SqliteStore;

use async_trait::async_trait;
use protocol::admin::{Organization, Scope};
use protocol::agent::AgentRecord;
use protocol::environment_template::EnvironmentTemplateRecord;
use protocol::event::Event;
use protocol::ids::{EnvironmentId, EnvironmentTemplateId, SessionId, TurnId};
use protocol::item::Item;
use protocol::list::PageRequest;
use protocol::session::{SessionRecord, SessionState};
use protocol::turn::Turn;

/// One page of a list, in the requested order.
#[derive(Debug, Clone)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub has_more: bool,
}

/// An API key as stored: its hash, never its secret.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiKeyRecord {
    pub id: String,
    pub org_id: String,
    /// Hex SHA-256 of the secret.
    pub hash: String,
    pub prefix: String,
    pub name: Option<String>,
    pub scopes: Vec<Scope>,
    pub created_at: i64,
    pub revoked_at: Option<i64>,
}

/// Commits the engine journal's batches through a connection of its own
/// (blocking calls; one caller at a time).
pub trait BatchWriter: Send {
    /// Applies writes in order, in one transaction, and returns once they are
    /// committed. Without `wait`, fails at once instead of waiting for a lock
    /// another connection holds (the caller is an async task). The writes of
    /// each session in `fences` commit only while this node still holds the
    /// session's lease; the sessions whose writes were left out come back
    /// (another node took them over).
    fn write_batch(&mut self, writes: &[Write], fences: &[Fence], wait: bool) -> Result<Vec<SessionId>>;
    /// Housekeeping between batches (SQLite: asks for a checkpoint of the
    /// write-ahead log, made on a thread of its own).
    fn checkpoint(&mut self) -> Result<()>;
    /// Whether a commit may run on the caller's thread (an async task's):
    /// SQLite's takes tens of microseconds; PostgreSQL's writer commits on
    /// the journal's thread only, so a network round trip never holds a worker.
    fn commits_inline(&self) -> bool {
        true
    }
    /// Whether [`Self::write_batch_async`] commits on the caller's async
    /// runtime (PostgreSQL's writer: a connection of that runtime, so a
    /// streamed event goes to the database and on to its subscribers with no
    /// hop through the journal's thread).
    fn commits_in_task(&self) -> bool {
        false
    }
    /// [`Self::write_batch`] as a future of the caller's runtime, which never
    /// waits for a lock and never retries: an error leaves the batch to the
    /// caller (the journal gives it to its thread). Dropped before it ends,
    /// the batch may or may not be committed; the writer stays usable.
    fn write_batch_async<'a>(&'a mut self, writes: &'a [Write], fences: &'a [Fence]) -> BatchFuture<'a> {
        let _ = (writes, fences);
        Box::pin(std::future::ready(Err(Error::Writer("this writer commits on the journal's thread only".into()))))
    }
}

/// What [`BatchWriter::write_batch_async`] gives: the sessions whose writes were left out.
pub type BatchFuture<'a> = std::pin::Pin<Box<dyn std::future::Future<Output = Result<Vec<SessionId>>> + Send + 'a>>;

/// A session whose writes in a batch were made under this node's lease of
/// it, taken as `epoch`: in a cluster they commit only while the lease row
/// still names this node with that epoch or a later one (epochs only grow;
/// one process alone has no other node to fence out).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fence {
    pub session_id: SessionId,
    pub epoch: i64,
}

/// One write of the engine's journal; a batch of them commits in one
/// transaction, in order.
#[derive(Debug, Clone)]
pub enum Write {
    /// Inserts or replaces a turn.
    Turn { org_id: String, turn: Turn },
    /// Inserts or replaces an item.
    Item { org_id: String, session_id: SessionId, item: Item },
    /// Writes a session's engine-owned state.
    SessionState { org_id: String, session_id: SessionId, state: SessionState },
    /// Appends events whose ids were already assigned (`evt_<sequence>`).
    Event { session_id: SessionId, event: std::sync::Arc<Event> },
}

impl Write {
    /// The session the write belongs to.
    pub fn session_id(&self) -> SessionId {
        match self {
            Write::Turn { turn, .. } => turn.session_id,
            Write::Item { session_id, .. }
            | Write::SessionState { session_id, .. }
            | Write::Event { session_id, .. } => *session_id,
        }
    }
}

/// A file a session published from its output directory.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Artifact {
    pub id: String,
    pub object: String,
    pub created_at: i64,
    pub environment_id: EnvironmentId,
    pub session_id: SessionId,
    pub turn_id: TurnId,
    /// Relative to the session's output directory.
    pub path: String,
    pub size_bytes: u64,
    /// Hex SHA-256 of the content (not shown by the API).
    #[serde(skip_serializing)]
    #[serde(default)]
    pub sha256: String,
}

/// How long an idempotency key of a create is kept.
pub const REQUEST_KEY_TTL_SECS: i64 = 24 * 60 * 60;

/// What claiming an idempotency key of a create found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestKey {
    /// The key is new (or its earlier claim was abandoned): run the request.
    Claimed,
    /// A request with the key is running now, with this fingerprint.
    Running { fingerprint: String },
    /// A request with the key succeeded: its fingerprint and answer.
    Done { fingerprint: String, status: u16, body: String },
}

/// Filters of the session list.
#[derive(Debug, Clone, Default)]
pub struct SessionFilter {
    pub agent_id: Option<String>,
    /// Exact matches that must all hold.
    pub metadata: Vec<(String, String)>,
}

/// What a sealed value belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SealedKind {
    /// A vault credential's secrets; `key` is `[vault_id, id]`.
    Credential,
    /// A session's inline MCP secrets; `key` is `[id]`.
    Session,
    /// A saved agent's inline MCP secrets; `key` is `[id]`.
    Agent,
    /// One stored version of a saved agent; `key` is `[agent id, version]`.
    AgentVersion,
}

/// One value sealed with the master key: raw ciphertext for credentials, the
/// base64 text of a document's `sealed_mcp_secrets` for the others.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sealed {
    pub kind: SealedKind,
    pub org_id: String,
    pub key: Vec<String>,
    pub value: Vec<u8>,
}

/// The persistence boundary.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Whether the store answers (for `/readyz`).
    async fn ping(&self) -> Result<()>;
    /// Registers this process as a node of the cluster sharing the database
    /// (PostgreSQL); `None` for a database only one process uses (SQLite).
    async fn join_cluster(&self, node: &NodeSpec) -> Result<Option<std::sync::Arc<Cluster>>>;

    async fn create_organization(&self, org: &Organization) -> Result<()>;
    async fn get_organization(&self, id: &str) -> Result<Option<Organization>>;
    async fn find_organization(&self, name: &str) -> Result<Option<Organization>>;
    async fn count_organizations(&self) -> Result<i64>;

    async fn create_api_key(&self, key: &ApiKeyRecord) -> Result<()>;
    async fn find_api_key(&self, hash: &str) -> Result<Option<ApiKeyRecord>>;
    /// Keys of one organization, or of all when `org_id` is `None`.
    async fn list_api_keys(&self, org_id: Option<&str>) -> Result<Vec<ApiKeyRecord>>;
    /// Marks a key revoked; false when no such (unrevoked or revoked) key exists.
    async fn revoke_api_key(&self, org_id: Option<&str>, id: &str, at: i64) -> Result<bool>;

    async fn create_agent(&self, org_id: &str, agent: &AgentRecord) -> Result<()>;
    async fn get_agent(&self, org_id: &str, id: &str) -> Result<Option<AgentRecord>>;
    /// Stores `agent` as the next version if the current one is still
    /// `agent.version - 1`; false when another update won the race or the agent is gone.
    async fn update_agent(&self, org_id: &str, agent: &AgentRecord) -> Result<bool>;
    async fn list_agents(&self, org_id: &str, page: &PageRequest) -> Result<Page<AgentRecord>>;
    async fn delete_agent(&self, org_id: &str, id: &str) -> Result<bool>;

    async fn create_session(&self, org_id: &str, session: &SessionRecord) -> Result<()>;
    async fn get_session(&self, org_id: &str, id: SessionId) -> Result<Option<SessionRecord>>;
    /// Replaces a session's configuration (metadata, agent, review …) keeping
    /// the engine-owned state as stored; false when it no longer exists.
    async fn put_session(&self, org_id: &str, session: &SessionRecord) -> Result<bool>;
    async fn list_sessions(
        &self,
        org_id: &str,
        filter: &SessionFilter,
        page: &PageRequest,
    ) -> Result<Page<SessionRecord>>;
    /// Deletes a session with its turns, items and events.
    async fn delete_session(&self, org_id: &str, id: SessionId) -> Result<bool>;

    async fn get_turn(&self, org_id: &str, id: TurnId) -> Result<Option<Turn>>;
    async fn list_turns(&self, org_id: &str, session_id: SessionId, page: &PageRequest) -> Result<Page<Turn>>;
    /// How many of the organization's turns are queued or running (not
    /// waiting for a client, not ended), on every node.
    async fn count_active_turns(&self, org_id: &str) -> Result<i64>;
    /// Turns of every organization that never reached a terminal status:
    /// (organization id, turn).
    async fn open_turns(&self) -> Result<Vec<(String, Turn)>>;

    /// A session's items in order, optionally of one turn only.
    async fn list_items(
        &self,
        org_id: &str,
        session_id: SessionId,
        turn_id: Option<TurnId>,
        page: &PageRequest,
    ) -> Result<Page<Item>>;
    /// Every item of one turn, oldest first.
    async fn turn_items(&self, org_id: &str, session_id: SessionId, turn_id: TurnId) -> Result<Vec<Item>>;
    /// One item of a session.
    async fn get_item(&self, org_id: &str, session_id: SessionId, id: &str) -> Result<Option<Item>>;
    /// Deletes one item of a session; false when there was none.
    async fn delete_item(&self, org_id: &str, session_id: SessionId, id: &str) -> Result<bool>;
    /// Deletes a turn and its items; false when there was none.
    async fn delete_turn(&self, org_id: &str, id: TurnId) -> Result<bool>;
    /// The items of a session's finished turns, turn by turn, oldest first:
    /// the history a new turn starts from (input queued for later turns is
    /// left out, as they are not finished).
    async fn history(&self, org_id: &str, session_id: SessionId) -> Result<Vec<Item>>;

    /// Inserts or replaces an environment of `org_id`.
    async fn put_environment(&self, org_id: &str, env: &protocol::environment::EnvironmentRecord) -> Result<()>;
    async fn get_environment(
        &self,
        org_id: &str,
        id: &EnvironmentId,
    ) -> Result<Option<protocol::environment::EnvironmentRecord>>;
    async fn list_environments(
        &self,
        org_id: &str,
        page: &PageRequest,
    ) -> Result<Page<protocol::environment::EnvironmentRecord>>;
    async fn delete_environment(&self, org_id: &str, id: &EnvironmentId) -> Result<bool>;
    /// How many sessions are attached to an environment.
    async fn sessions_on_environment(&self, org_id: &str, env_id: &EnvironmentId) -> Result<i64>;
    /// The sessions attached to an environment, oldest first.
    async fn environment_sessions(&self, org_id: &str, env_id: &EnvironmentId) -> Result<Vec<SessionId>>;

    // ---- Environment templates (sql/templates.rs). An update names the
    // version it read (`template.version - 1`) and is refused otherwise.
    async fn create_environment_template(&self, org_id: &str, template: &EnvironmentTemplateRecord) -> Result<()>;
    async fn get_environment_template(
        &self,
        org_id: &str,
        id: &EnvironmentTemplateId,
    ) -> Result<Option<EnvironmentTemplateRecord>>;
    /// Replaces a template's document if it is still at `template.version - 1`.
    async fn update_environment_template(&self, org_id: &str, template: &EnvironmentTemplateRecord) -> Result<bool>;
    /// Replaces a template's document if it is still at `template.version`
    /// (its preparation's status and log, which do not make a new version).
    async fn set_environment_template_status(&self, org_id: &str, template: &EnvironmentTemplateRecord)
    -> Result<bool>;
    async fn list_environment_templates(
        &self,
        org_id: &str,
        page: &PageRequest,
    ) -> Result<Page<EnvironmentTemplateRecord>>;
    async fn delete_environment_template(&self, org_id: &str, id: &EnvironmentTemplateId) -> Result<bool>;
    /// How many environments (of `org_id`) were created from a template.
    async fn environments_from_template(&self, org_id: &str, id: &EnvironmentTemplateId) -> Result<i64>;

    /// Inserts an artifact (immutable: a changed file is a new artifact); a
    /// second one for the same path in the same turn is ignored.
    async fn put_artifact(&self, org_id: &str, artifact: &Artifact, content: &[u8]) -> Result<()>;
    /// (path, sha256) of a session's artifacts, oldest first.
    async fn artifact_hashes(&self, org_id: &str, session_id: SessionId) -> Result<Vec<(String, String)>>;
    async fn list_artifacts(&self, org_id: &str, session_id: SessionId, page: &PageRequest) -> Result<Page<Artifact>>;
    async fn get_artifact(&self, org_id: &str, session_id: SessionId, id: &str) -> Result<Option<(Artifact, Vec<u8>)>>;
    async fn delete_artifact(&self, org_id: &str, session_id: SessionId, id: &str) -> Result<bool>;

    /// A writer of the journal's batches, with a connection of its own, for
    /// one blocking thread to own.
    fn batch_writer(&self) -> Result<Box<dyn BatchWriter>>;
    /// The largest event sequence number stored (0 when none).
    async fn max_event_seq(&self) -> Result<i64>;

    /// The highest sequence number of a session's stored events (0: none).
    async fn last_event_seq(&self, session_id: SessionId) -> Result<i64>;

    /// A session's events after the given sequence number, oldest first.
    async fn events_after(&self, session_id: SessionId, after: i64, limit: u32) -> Result<Vec<Event>>;

    /// Claims an idempotency key of `operation` for a request whose body has
    /// `fingerprint` (forgetting keys older than [`REQUEST_KEY_TTL_SECS`]).
    async fn claim_request_key(
        &self,
        org_id: &str,
        operation: &str,
        key: &str,
        fingerprint: &str,
        at: i64,
    ) -> Result<RequestKey>;
    /// Records the answer of the request that claimed the key.
    async fn finish_request_key(&self, org_id: &str, operation: &str, key: &str, status: u16, body: &str)
    -> Result<()>;
    /// Frees a claimed key whose request failed (a finished one stays).
    async fn release_request_key(&self, org_id: &str, operation: &str, key: &str) -> Result<()>;
    /// Records an idempotency key; false when it was already recorded.
    async fn claim_idempotency_key(&self, org_id: &str, session_id: SessionId, key: &str, at: i64) -> Result<bool>;
    /// Forgets a claimed key (its submission failed, so it never happened).
    async fn release_idempotency_key(&self, org_id: &str, session_id: SessionId, key: &str) -> Result<()>;

    // ---- Vaults and credentials (sql/vaults.rs). Credentials hold
    // only sealed (encrypted) secrets; `metadata` lists are exact matches. ----

    async fn create_vault(&self, org_id: &str, vault: &protocol::vault::Vault) -> Result<()>;
    async fn get_vault(&self, org_id: &str, id: &str) -> Result<Option<protocol::vault::Vault>>;
    /// Replaces a vault's document; false when it no longer exists.
    async fn put_vault(&self, org_id: &str, vault: &protocol::vault::Vault) -> Result<bool>;
    async fn list_vaults(
        &self,
        org_id: &str,
        metadata: &[(String, String)],
        page: &PageRequest,
    ) -> Result<Page<protocol::vault::Vault>>;
    /// Deletes a vault with its credentials.
    async fn delete_vault(&self, org_id: &str, id: &str) -> Result<bool>;
    /// Which of `ids` are vaults of this organization.
    async fn existing_vaults(&self, org_id: &str, ids: &[String]) -> Result<Vec<String>>;
    /// Which of `ids` are credentials (in any vault) of this organization.
    async fn existing_credentials(&self, org_id: &str, ids: &[String]) -> Result<Vec<String>>;
    async fn create_credential(&self, org_id: &str, record: &protocol::vault::CredentialRecord) -> Result<()>;
    async fn get_credential(
        &self,
        org_id: &str,
        vault_id: &str,
        id: &str,
    ) -> Result<Option<protocol::vault::CredentialRecord>>;
    /// Stores `record` if the stored version is still `record.version - 1`;
    /// false when another writer won the race or the credential is gone.
    async fn update_credential(&self, org_id: &str, record: &protocol::vault::CredentialRecord) -> Result<bool>;
    async fn list_credentials(
        &self,
        org_id: &str,
        vault_id: &str,
        metadata: &[(String, String)],
        page: &PageRequest,
    ) -> Result<Page<protocol::vault::Credential>>;
    async fn delete_credential(&self, org_id: &str, vault_id: &str, id: &str) -> Result<bool>;
    /// Every credential of the given vaults of this organization, oldest first.
    async fn vault_credentials(
        &self,
        org_id: &str,
        vault_ids: &[String],
    ) -> Result<Vec<protocol::vault::CredentialRecord>>;
    /// The stored master key check value, if any.
    async fn master_key_check(&self) -> Result<Option<Vec<u8>>>;
    /// Every value sealed with the master key, of every organization.
    async fn sealed_values(&self) -> Result<Vec<Sealed>>;
    /// Replaces the key check value with `new_check` and each of `values`
    /// (re-sealed versions of [`Store::sealed_values`]), in one transaction,
    /// if the stored check is still `old_check`; false (nothing written) otherwise.
    async fn replace_sealed(&self, old_check: &[u8], new_check: &[u8], values: &[Sealed]) -> Result<bool>;
    /// Stores `sealed` as the key check value unless one exists; returns the one kept.
    async fn init_master_key_check(&self, sealed: &[u8]) -> Result<Vec<u8>>;

    // ---- Skills (sql/skills.rs): each version's zip is stored with it. A
    // skill write names the `rev` it read (`skill.rev - 1`) and is refused
    // (false) when another write came first. ----

    /// Inserts a skill with its first version, in one transaction.
    async fn create_skill(
        &self,
        org_id: &str,
        skill: &protocol::skill::SkillRecord,
        version: &protocol::skill::SkillVersionRecord,
        content: &[u8],
    ) -> Result<()>;
    async fn get_skill(&self, org_id: &str, id: &str) -> Result<Option<protocol::skill::SkillRecord>>;
    /// Replaces a skill's document if it is still at `skill.rev - 1`.
    async fn update_skill(&self, org_id: &str, skill: &protocol::skill::SkillRecord) -> Result<bool>;
    async fn list_skills(&self, org_id: &str, page: &PageRequest) -> Result<Page<protocol::skill::SkillRecord>>;
    /// Deletes a skill with every version.
    async fn delete_skill(&self, org_id: &str, id: &str) -> Result<bool>;
    /// Writes `skill` (at `skill.rev - 1` still) and inserts `version`, in one transaction.
    async fn add_skill_version(
        &self,
        org_id: &str,
        skill: &protocol::skill::SkillRecord,
        version: &protocol::skill::SkillVersionRecord,
        content: &[u8],
    ) -> Result<bool>;
    async fn get_skill_version(
        &self,
        org_id: &str,
        skill_id: &str,
        version: i64,
    ) -> Result<Option<protocol::skill::SkillVersionRecord>>;
    /// A version's zip.
    async fn skill_version_content(&self, org_id: &str, skill_id: &str, version: i64) -> Result<Option<Vec<u8>>>;
    async fn list_skill_versions(
        &self,
        org_id: &str,
        skill_id: &str,
        page: &PageRequest,
    ) -> Result<Page<protocol::skill::SkillVersionRecord>>;
    /// Writes `skill` (at `skill.rev - 1` still) and deletes its `version`, in one transaction.
    async fn delete_skill_version(
        &self,
        org_id: &str,
        skill: &protocol::skill::SkillRecord,
        version: i64,
    ) -> Result<bool>;

    // ---- Uploaded files, and environments' copies of what they were
    // created with (sql/files.rs). ----

    async fn create_file(&self, org_id: &str, file: &protocol::file::FileObject, content: &[u8]) -> Result<()>;
    async fn get_file(&self, org_id: &str, id: &str) -> Result<Option<protocol::file::FileObject>>;
    async fn file_content(&self, org_id: &str, id: &str) -> Result<Option<Vec<u8>>>;
    async fn list_files(
        &self,
        org_id: &str,
        purpose: Option<&str>,
        page: &PageRequest,
    ) -> Result<Page<protocol::file::FileObject>>;
    async fn delete_file(&self, org_id: &str, id: &str) -> Result<bool>;
    /// Stores bytes an environment was created with under `key`.
    async fn put_environment_content(
        &self,
        org_id: &str,
        env_id: &EnvironmentId,
        key: &str,
        content: &[u8],
    ) -> Result<()>;
    /// Copies a skill version's zip into the environment's contents; false when there is no such version.
    async fn copy_skill_version_to_environment(
        &self,
        org_id: &str,
        env_id: &EnvironmentId,
        key: &str,
        skill_id: &str,
        version: i64,
    ) -> Result<bool>;
    /// Copies a file's bytes into the environment's contents; false when there is no such file.
    async fn copy_file_to_environment(
        &self,
        org_id: &str,
        env_id: &EnvironmentId,
        key: &str,
        file_id: &str,
    ) -> Result<bool>;
    async fn environment_content(&self, org_id: &str, env_id: &EnvironmentId, key: &str) -> Result<Option<Vec<u8>>>;
    async fn delete_environment_contents(&self, org_id: &str, env_id: &EnvironmentId) -> Result<()>;
}

/// Opens the store a database URL names: `sqlite://PATH` or
/// `postgres://…` (`postgresql://…`). Anything else is refused by name.
pub async fn open(url: &str) -> Result<std::sync::Arc<dyn Store>> {
    let scheme = url.split_once(':').map(|(scheme, _)| scheme).unwrap_or_default();
    Ok(match scheme {
        "sqlite" => std::sync::Arc::new(SqliteStore::open_url(url).await?),
        "postgres" | "postgresql" => std::sync::Arc::new(PgStore::open_url(url).await?),
        "" => return Err(Error::Config(format!("'{url}' is not a database URL: use sqlite://PATH or postgres://…"))),
        other => {
            return Err(Error::Config(format!(
                "database URL scheme '{other}' is not supported: use sqlite://PATH or postgres://…"
            )));
        }
    })
}
