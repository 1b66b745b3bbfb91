//! Environments: one sandbox with files, processes and setup, shareable by
//! many sessions. Checking a configuration, creating standalone ones,
//! deleting them with everything they run, and their live files (a direct
//! file operation initializes the sandbox if nothing has yet). Skills and
//! uploaded files are resolved at creation (`crate::environment_contents`).

use crate::{App, Error, Result, now};
use base64::Engine as _;
use protocol::environment::{
    EnvironmentConfig, EnvironmentCreate, EnvironmentFile, EnvironmentFork, EnvironmentRecord, EnvironmentStatus,
    FileParam, HostedFile, NetworkAccess,
};
use protocol::ids::{EnvironmentId, SessionId};
use protocol::list::{Order, PageRequest};
use std::sync::Arc;
use store::Page;

/// Most entries in `allowed_domains` or `blocked_domains`.
const MAX_DOMAINS: usize = 256;
/// Largest inline file accepted, decoded.
pub const MAX_FILE_BYTES: usize = 32 << 20;
/// Longest name of one path component, in bytes (the kernel's `NAME_MAX`).
pub const MAX_NAME_BYTES: usize = 255;
/// Longest whole path, in bytes (the kernel's `PATH_MAX`, its NUL aside).
pub const MAX_PATH_BYTES: usize = 4095;
/// Most components a path may have, `/workspace` included.
pub const MAX_PATH_DEPTH: usize = 64;

/// Checks a path for the environment: under `/workspace`, no `..`, and
/// within the kernel's limits on names and paths and our limit on depth.
pub fn check_path(param: &str, path: &str) -> Result<String> {
    let full = if path.starts_with('/') { path.to_string() } else { format!("/workspace/{path}") };
    let inside = full == "/workspace" || full.starts_with("/workspace/");
    if !inside || full.split('/').any(|c| c == "..") || full.contains('\0') {
        return Err(Error::invalid(param, format!("'{path}' is not a path under /workspace")));
    }
    if full.len() > MAX_PATH_BYTES {
        return Err(Error::invalid(
            param,
            format!("the path is {} bytes long; paths are limited to {MAX_PATH_BYTES} bytes", full.len()),
        ));
    }
    let components: Vec<&str> = full.split('/').filter(|c| !c.is_empty() && *c != ".").collect();
    if let Some(long) = components.iter().find(|c| c.len() > MAX_NAME_BYTES) {
        let start: String = long.chars().take(32).collect();
        return Err(Error::invalid(
            param,
            format!(
                "the name '{start}…' is {} bytes long; each name in a path is limited to {MAX_NAME_BYTES} bytes",
                long.len()
            ),
        ));
    }
    if components.len() > MAX_PATH_DEPTH {
        return Err(Error::invalid(
            param,
            format!("the path is {} levels deep; paths are limited to {MAX_PATH_DEPTH} levels", components.len()),
        ));
    }
    Ok(full)
}

/// Checks a path a file is written to: [`check_path`], and not among the
/// skills (`/workspace/.agents/skills`, read-only in the sandbox).
pub fn check_file_path(param: &str, path: &str) -> Result<String> {
    let full = check_path(param, path)?;
    let skills = protocol::skill::SKILLS_DIR;
    if full == skills || full.starts_with(&format!("{skills}/")) {
        return Err(Error::invalid(param, format!("'{path}' is read-only: {skills} holds the environment's skills")));
    }
    Ok(full)
}

fn decode(param: &str, data: &str) -> Result<Vec<u8>> {
    if data.len() > MAX_FILE_BYTES / 3 * 4 + 4 {
        return Err(Error::TooLarge(format!("{param}: files are limited to {MAX_FILE_BYTES} bytes")));
    }
    base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|e| Error::invalid(param, format!("data must be base64: {e}")))
}

fn new_file(path: String, size_bytes: u64, file_id: Option<String>) -> HostedFile {
    let kind = if file_id.is_some() { "file_id" } else { "inline" };
    HostedFile { id: protocol::ids::Kind::EnvironmentFile.mint(), path, size_bytes, kind: kind.into(), file_id }
}

/// Checks an environment configuration; returns its registered files, one
/// per entry of `files` (a `file_id` one with size 0: resolving it is
/// [`Service::prepare`]'s). An `environment_template_id` was resolved before
/// (`crate::templates`).
pub fn check_config(prefix: &str, c: &EnvironmentConfig) -> Result<Vec<HostedFile>> {
    let p = |f: &str| format!("{prefix}.{f}");
    if c.environment_id.is_some() {
        return Err(Error::unsupported(
            p("environment_id"),
            "use {\"type\": \"reference\", \"environment_id\": …} to share an environment",
        ));
    }
    if let Some(size) = &c.container_size
        && engine::environments::size_limits(sandbox::Limits::default(), Some(size)).is_none()
    {
        return Err(Error::invalid(p("container_size"), "must be one of small, medium, large"));
    }
    if c.desktop.as_ref().is_some_and(|d| d.enabled) {
        return Err(Error::unsupported(p("desktop.enabled"), "desktops are not offered by this server"));
    }
    if c.plugins.as_ref().is_some_and(|v| !v.is_empty()) {
        return Err(Error::unsupported(p("plugins"), "plugins are not supported"));
    }
    if let Some(n) = &c.network {
        let (allowed, blocked) =
            (n.allowed_domains.as_deref().unwrap_or(&[]), n.blocked_domains.as_deref().unwrap_or(&[]));
        if n.access != NetworkAccess::Restricted && !(allowed.is_empty() && blocked.is_empty()) {
            return Err(Error::invalid(p("network"), "allowed_domains and blocked_domains need access: restricted"));
        }
        for (field, list) in [("allowed_domains", allowed), ("blocked_domains", blocked)] {
            if list.len() > MAX_DOMAINS {
                return Err(Error::invalid(p(&format!("network.{field}")), format!("at most {MAX_DOMAINS} domains")));
            }
            for (i, d) in list.iter().enumerate() {
                sandbox::egress::policy::parse_domain(d)
                    .map_err(|e| Error::invalid(p(&format!("network.{field}[{i}]")), e))?;
            }
        }
        if !allowed.is_empty() && !blocked.is_empty() {
            return Err(Error::invalid(p("network.blocked_domains"), "cannot be combined with allowed_domains"));
        }
    }
    for (k, _) in c.env.iter().flatten() {
        if k.is_empty() || k.contains('=') || k.contains('\0') {
            return Err(Error::invalid(p(&format!("env.{k}")), "not a valid variable name"));
        }
    }
    for (i, s) in c.setup_commands.iter().flatten().enumerate() {
        protocol::validate::text(&p(&format!("setup_commands[{i}].command")), &s.command, 1, 64 * 1024)?;
        if let Some(cwd) = &s.cwd {
            check_path(&p(&format!("setup_commands[{i}].cwd")), cwd)?;
        }
    }
    let mut files = Vec::new();
    let mut total = 0usize;
    for (i, f) in c.files.iter().flatten().enumerate() {
        match f {
            FileParam::FileId { path, file_id } => {
                let full = check_file_path(&p(&format!("files[{i}].path")), path)?;
                files.push(new_file(full, 0, Some(file_id.clone())));
            }
            FileParam::Inline { path, data } => {
                let full = check_file_path(&p(&format!("files[{i}].path")), path)?;
                let bytes = decode(&p(&format!("files[{i}].data")), data)?;
                total += bytes.len();
                if total > MAX_FILE_BYTES {
                    return Err(Error::TooLarge(format!(
                        "{prefix}.files: inline files are limited to {MAX_FILE_BYTES} bytes in all"
                    )));
                }
                files.push(new_file(full, bytes.len() as u64, None));
            }
        }
    }
    Ok(files)
}

/// The environment id a caller sent; one that is not an environment id names none (404).
pub fn environment_id(raw: &str) -> Result<EnvironmentId> {
    EnvironmentId::parse(raw).ok_or_else(|| Error::not_found("environment", raw))
}

/// A new pending environment record.
pub fn new_record(config: EnvironmentConfig, files: Vec<HostedFile>, owner: Option<SessionId>) -> EnvironmentRecord {
    EnvironmentRecord {
        id: EnvironmentId::new(),
        created_at: now(),
        status: EnvironmentStatus::Pending,
        error: None,
        owner_session: owner,
        shared: false,
        metadata: Default::default(),
        config,
        files,
        setup_log: None,
        setup: None,
        vault_ids: Vec::new(),
        skills: Vec::new(),
        node: None,
        template: None,
        forked_from: None,
        name: None,
    }
}

/// Maps a sandbox error to the caller's error.
pub fn sandbox_error(param: &str, e: sandbox::Error) -> Error {
    match e.http_status() {
        400 => Error::invalid(param, e.to_string()),
        404 => Error::NotFound(e.to_string()),
        413 => Error::TooLarge(e.to_string()),
        _ if name_too_long(&e) => Error::invalid(param, "a name in the path is longer than the filesystem allows"),
        _ => Error::Internal(e.to_string()),
    }
}

/// Whether the filesystem refused a path as too long (`ENAMETOOLONG`), here
/// or inside the sandbox (whose errors arrive as their message).
fn name_too_long(e: &sandbox::Error) -> bool {
    const ENAMETOOLONG: i32 = 36;
    let sandbox::Error::Io { source, .. } = e else { return false };
    source.raw_os_error() == Some(ENAMETOOLONG) || source.to_string().contains(&format!("(os error {ENAMETOOLONG})"))
}

/// A file to put into an environment (`POST …/files`).
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum FileCreate {
    Inline { path: String, data: String },
    FileId { path: String, file_id: String },
}

/// Which files of an environment to list.
#[derive(Debug, Clone)]
pub struct FileQuery {
    /// An absolute or `/workspace`-relative directory.
    pub path: String,
    pub limit: usize,
    pub order: Order,
    /// The last path of the previous page.
    pub page: Option<String>,
}

/// One page of files: `(path, size)` and the next page's token.
#[derive(Debug, Clone)]
pub struct FilePage {
    pub files: Vec<(String, u64)>,
    pub has_more: bool,
    pub next: Option<String>,
}

/// Where an environment's sandbox runs, as seen from this node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// Here (or there is one node).
    Here,
    /// On another running node of the cluster, reached at `advertise`.
    Elsewhere { node: String, advertise: String },
    /// On a node that is not running.
    Gone { node: String },
}

/// The environments of one organization.
pub struct Service<'a> {
    pub(crate) app: &'a App,
    pub(crate) org: &'a str,
}

impl Service<'_> {
    /// The environment, or 404.
    /// The environment an id a caller sent names, or 404 (one that is not an
    /// environment id names none).
    pub async fn named(&self, raw: &str) -> Result<EnvironmentRecord> {
        self.get(&environment_id(raw)?).await
    }

    /// Where the environment an id names runs (404 for none).
    pub async fn placement(&self, raw: &str) -> Result<Placement> {
        let record = self.named(raw).await?;
        let (Some(node), Some(me)) = (record.node, self.app.engine.node_id()) else { return Ok(Placement::Here) };
        if node == me {
            return Ok(Placement::Here);
        }
        Ok(match self.app.engine.node_view(&node).await? {
            Some(view) if view.alive => Placement::Elsewhere { node, advertise: view.advertise },
            _ => Placement::Gone { node },
        })
    }

    pub async fn get(&self, id: &EnvironmentId) -> Result<EnvironmentRecord> {
        self.app.store.get_environment(self.org, id).await?.ok_or_else(|| Error::not_found("environment", id.as_str()))
    }

    /// Checks that every `vault_credentials` binding names an environment
    /// credential of this organization (the values are not kept here).
    pub async fn check_bindings(&self, prefix: &str, c: &EnvironmentConfig) -> Result<()> {
        let Some(bindings) = c.vault_credentials.as_ref().filter(|b| !b.is_empty()) else { return Ok(()) };
        match self.app.credentials.resolve_environment_credentials(self.org, bindings).await {
            Ok(_) => Ok(()),
            Err(e) => Err(match Error::from(e) {
                Error::Invalid { param: Some(p), code, message } => {
                    Error::Invalid { param: Some(format!("{prefix}.{p}")), code, message }
                }
                other => other,
            }),
        }
    }

    /// A standalone environment, `pending` until first used.
    pub async fn create(&self, req: EnvironmentCreate) -> Result<EnvironmentRecord> {
        let mut config = req.environment.config;
        let template = self.app.templates(self.org).resolve("environment", &mut config).await?;
        let mut prepared = self.prepare("environment", &mut config).await?;
        let metadata = req.metadata.unwrap_or_default();
        protocol::validate::metadata("metadata", &metadata)?;
        let mut record = new_record(config, std::mem::take(&mut prepared.files), None);
        record.node = self.app.engine.node_id();
        record.skills = std::mem::take(&mut prepared.skills);
        record.metadata = metadata;
        record.vault_ids = req.vault_ids.unwrap_or_default();
        record.template = template;
        self.store_contents(&record.id, prepared).await?;
        if let Err(e) = self.app.store.put_environment(self.org, &record).await {
            self.discard(&record.id).await;
            return Err(e.into());
        }
        Ok(record)
    }

    pub async fn list(&self, page: &PageRequest) -> Result<Page<EnvironmentRecord>> {
        Ok(self.app.store.list_environments(self.org, page).await?)
    }

    /// Deletes an environment no session is attached to.
    pub async fn delete(&self, id: &EnvironmentId) -> Result<()> {
        self.get(id).await?;
        let attached = self.app.store.sessions_on_environment(self.org, id).await?;
        if attached > 0 {
            return Err(Error::Conflict(format!(
                "environment '{id}' still has {attached} attached session(s); delete them first"
            )));
        }
        self.remove(id).await
    }

    /// Stops every process in the environment's sandbox and starts it again
    /// over the same files, without repeating setup (a runaway environment's
    /// way back). Its stdio MCP servers die with the old sandbox and answer
    /// as dead from then on. A failed or initializing environment is a 409.
    pub async fn restart(&self, id: &EnvironmentId) -> Result<EnvironmentRecord> {
        let record = self.get(id).await?;
        if record.status == protocol::environment::EnvironmentStatus::Failed {
            return Err(Error::Conflict(format!(
                "environment '{id}' failed to initialize; there is nothing to restart (create a new one)"
            )));
        }
        self.app.envs.restart(self.org, id).await.map_err(|e| Error::Conflict(e.message))?;
        self.get(id).await
    }

    /// A new environment (same organization, same configuration, ready
    /// without setup) whose files are a copy-on-write copy of `id`'s now; `id`
    /// keeps running and its processes are not copied. Only a ready (or
    /// idle-paused) environment can be forked: others are a 409.
    pub async fn fork(&self, id: &EnvironmentId, req: EnvironmentFork) -> Result<EnvironmentRecord> {
        let source = self.get(id).await?;
        if !matches!(source.status, EnvironmentStatus::Ready | EnvironmentStatus::Suspended) {
            let status = serde_json::to_value(source.status).ok().and_then(|v| v.as_str().map(str::to_string));
            return Err(Error::Conflict(format!(
                "environment '{id}' is {}; only a ready environment can be forked",
                status.unwrap_or_else(|| "not ready".into())
            )));
        }
        let metadata = req.metadata.unwrap_or_default();
        protocol::validate::metadata("metadata", &metadata)?;
        if let Some(name) = &req.name
            && (name.is_empty() || name.chars().count() > 256)
        {
            return Err(Error::invalid("name", "name must be 1 to 256 characters"));
        }
        let mut record = new_record(source.config.clone(), source.files.clone(), None);
        record.status = EnvironmentStatus::Ready;
        record.node = self.app.engine.node_id();
        record.skills = source.skills.clone();
        record.metadata = metadata;
        record.vault_ids = source.vault_ids.clone();
        record.template = source.template.clone();
        record.forked_from = Some(id.clone());
        record.name = req.name;
        self.app.envs.fork(self.org, id, &record.id).await.map_err(|e| match e.code.as_str() {
            engine::environments::TOO_MANY_SANDBOXES => Error::RateLimited {
                code: "too_many_sandboxes",
                message: e.message,
                retry_after: std::time::Duration::from_secs(5),
            },
            engine::environments::FORK_BUSY => Error::Conflict(e.message),
            _ => Error::Internal(e.message),
        })?;
        if let Err(e) = self.app.store.put_environment(self.org, &record).await {
            self.app.envs.destroy(&record.id, true).await;
            return Err(e.into());
        }
        Ok(record)
    }

    /// Stops everything in an environment and deletes it with its files.
    pub(crate) async fn remove(&self, id: &EnvironmentId) -> Result<()> {
        // Its MCP brokers (stdio servers in the sandbox) end with it; the sandbox id is the environment's.
        self.app.mcp.remove_sandbox(id.as_str()).await;
        self.app.envs.destroy(id, true).await;
        self.app.store.delete_environment(self.org, id).await?;
        self.app.store.delete_environment_contents(self.org, id).await?;
        Ok(())
    }

    async fn sandbox(&self, id: &EnvironmentId) -> Result<Arc<dyn sandbox::Sandbox>> {
        self.get(id).await?;
        self.app.envs.sandbox(self.org, id).await.map_err(|e| match e.code.as_str() {
            engine::environments::TOO_MANY_SANDBOXES => Error::RateLimited {
                code: "too_many_sandboxes",
                message: e.message,
                retry_after: std::time::Duration::from_secs(5),
            },
            _ => Error::Conflict(e.message),
        })
    }

    /// Writes one file into the environment's sandbox.
    pub async fn write_file(&self, id: &EnvironmentId, req: FileCreate) -> Result<EnvironmentFile> {
        let (path, data, file_id) = match req {
            FileCreate::Inline { path, data } => (check_file_path("path", &path)?, decode("data", &data)?, None),
            FileCreate::FileId { path, file_id } => {
                let path = check_file_path("path", &path)?;
                let (_, data) = self.app.files(self.org).content(&file_id).await.map_err(|e| match e {
                    Error::NotFound(message) => Error::MissingReference { param: "file_id".into(), message },
                    other => other,
                })?;
                (path, data, Some(file_id))
            }
        };
        if data.len() > MAX_FILE_BYTES {
            return Err(Error::TooLarge(format!("files are limited to {MAX_FILE_BYTES} bytes")));
        }
        let sandbox = self.sandbox(id).await?;
        let size = data.len() as u64;
        sandbox.write_file(&path, data).await.map_err(|e| sandbox_error("path", e))?;
        let file = new_file(path.clone(), size, file_id);
        self.app
            .envs
            .update(self.org, id, |r| {
                r.files.retain(|f| f.path != file.path);
                r.files.push(file);
            })
            .await?;
        Ok(EnvironmentFile {
            environment_id: id.to_string(),
            object: "agent.environment.file".into(),
            path,
            size_bytes: size,
        })
    }

    /// One page of the files below a directory of the sandbox, in path order
    /// (see [`crate::file_listing`]: only as much of the tree as the page needs).
    pub async fn list_files(&self, id: &EnvironmentId, query: FileQuery) -> Result<FilePage> {
        let root = check_path("path", &query.path)?;
        let sandbox = self.sandbox(id).await?;
        let list = |dir: String| {
            let sandbox = Arc::clone(&sandbox);
            async move {
                let entries = sandbox.list_dir(&dir).await.map_err(|e| sandbox_error("path", e))?;
                Ok(entries
                    .into_iter()
                    .map(|e| crate::file_listing::Entry {
                        is_dir: e.kind == sandbox::FileKind::Dir,
                        name: e.name,
                        size: e.size,
                    })
                    .collect())
            }
        };
        let page = crate::file_listing::walk(&root, query.order, query.page.as_deref(), query.limit, list).await?;
        let next = if page.has_more { page.files.last().map(|(p, _)| p.clone()) } else { None };
        Ok(FilePage { files: page.files, has_more: page.has_more, next })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_past_the_kernels_limits_or_too_deep_are_invalid_naming_the_param() {
        let name = "n".repeat(MAX_NAME_BYTES);
        assert!(check_path("path", &name).is_ok());
        let deep = format!("{}f", "d/".repeat(MAX_PATH_DEPTH - 2));
        assert!(check_path("path", &deep).is_ok());
        for bad in [
            "n".repeat(MAX_NAME_BYTES + 1),
            format!("{}f", "d/".repeat(MAX_PATH_DEPTH - 1)),
            format!("{}f", format!("{}/", "d".repeat(200)).repeat(21)),
        ] {
            match check_path("path", &bad) {
                Err(Error::Invalid { param: Some(p), .. }) => assert_eq!(p, "path"),
                other => panic!("{} bytes: {other:?}", bad.len()),
            }
        }
    }

    #[test]
    fn a_name_too_long_for_the_filesystem_is_the_callers_error() {
        let inside = sandbox::Error::Io {
            context: "inside the sandbox".into(),
            source: std::io::Error::other("/workspace/x: File name too long (os error 36)"),
        };
        assert!(matches!(sandbox_error("path", inside), Error::Invalid { param: Some(p), .. } if p == "path"));
        let here = sandbox::Error::Io { context: "write".into(), source: std::io::Error::from_raw_os_error(36) };
        assert!(matches!(sandbox_error("path", here), Error::Invalid { .. }));
        let other = sandbox::Error::Io { context: "write".into(), source: std::io::Error::other("disk on fire") };
        assert!(matches!(sandbox_error("path", other), Error::Internal(_)));
    }
}
