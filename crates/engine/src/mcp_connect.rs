//! Connecting a session's MCP servers for a turn: each `type: "mcp"` tool becomes an
//! [`mcp::ServerSpec`] with its credentials — the session's sealed inline `authorization` and
//! `headers`, or a vault bearer (by `credential_id` or unique URL match), or for stdio the
//! `env` and `env_vars` of the environment — then the hub connects them. A vault-credentialed
//! server that answers 401 gets one forced refresh and one more attempt. A required server that
//! still cannot initialize, or then cannot list its tools, fails the turn, naming the server and
//! the step; an optional one is left out.
//!
//! The server supplies the credentials through [`McpCredentials`]: the engine never sees the
//! vaults or the master key.

use crate::environments::Environments;
use crate::mcp_launch::{EnvSources, SandboxLauncher, process_env};
use mcp::TransportConfig;
use mcp::{Connected, HttpConfig, Hub, McpError, Origin, Secret, ServerConfig, ServerSpec, StdioConfig};
use protocol::environment::VaultCredentialBinding;
use protocol::ids::EnvironmentId;
use protocol::session::SessionRecord;
use protocol::tool::{ConnectionOrigin, McpToolParam, McpTransportParam, ToolParam};
use protocol::turn::TurnError;
use std::collections::BTreeMap;
use std::sync::Arc;
use store::Store;
use tokio_util::sync::CancellationToken;

/// Why a credential could not be had; the message names the credential, never a secret.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct CredentialFailure(pub String);

/// A session's inline secrets for one server label: HTTP `authorization` and
/// `headers`, a stdio transport's `env`.
#[derive(Debug, Clone, Default)]
pub struct InlineSecrets {
    pub authorization: Option<Secret>,
    pub headers: BTreeMap<String, Secret>,
    pub env: BTreeMap<String, Secret>,
}

/// A bearer token from a vault credential, and what a forced refresh needs to know.
#[derive(Debug, Clone)]
pub struct VaultToken {
    pub vault_id: String,
    pub credential_id: String,
    /// Without the `Bearer ` prefix.
    pub token: Secret,
    /// The stored version the token was read at.
    pub version: i64,
}

/// What the MCP tools need from the server's vaults and sealed secrets.
#[async_trait::async_trait]
pub trait McpCredentials: Send + Sync {
    /// The session's inline HTTP secrets by server label, opened.
    fn session_secrets(
        &self,
        org_id: &str,
        session: &SessionRecord,
    ) -> Result<BTreeMap<String, InlineSecrets>, CredentialFailure>;

    /// The bearer for the HTTP server at `server_url` from the session's vaults: the attached
    /// credential `credential_id`, or the one attached credential for this URL; `None` when no
    /// credential applies. Refreshed first when it expires soon.
    async fn vault_token(
        &self,
        org_id: &str,
        vault_ids: &[String],
        server_url: &str,
        credential_id: Option<&str>,
    ) -> Result<Option<VaultToken>, CredentialFailure>;

    /// A fresh token after the server answered 401 to `rejected`.
    async fn refresh(&self, org_id: &str, rejected: &VaultToken) -> Result<VaultToken, CredentialFailure>;

    /// The environment credentials bound to an environment.
    async fn environment_credentials(
        &self,
        org_id: &str,
        bindings: &[VaultCredentialBinding],
    ) -> Result<Vec<EnvCredential>, CredentialFailure>;
}

/// An environment credential as a stdio server may select it.
#[derive(Debug, Clone)]
pub struct EnvCredential {
    /// Its `secret_name`.
    pub name: String,
    pub value: Secret,
    /// `networking: limited`: the only hosts it may be sent to. The sandbox
    /// then holds a placeholder, swapped for the value by its egress proxy.
    pub allowed_hosts: Option<Vec<String>>,
}

/// The shared parts the server hands the engine for MCP.
#[derive(Clone)]
pub struct McpSetup {
    pub hub: Arc<Hub>,
    pub credentials: Arc<dyn McpCredentials>,
}

/// One server as planned for this turn.
#[derive(Debug, Clone)]
pub struct Planned {
    pub spec: ServerSpec,
    /// Set when its `Authorization` came from a vault (a 401 then forces one refresh).
    pub vault: Option<VaultToken>,
}

/// A server that cannot join the turn.
#[derive(Debug, Clone)]
pub struct Problem {
    pub label: String,
    pub required: bool,
    pub step: String,
    pub code: &'static str,
    pub message: String,
}

impl Problem {
    fn new(param: &McpToolParam, step: &str, code: &'static str, message: impl Into<String>) -> Self {
        let label = param.server_label.clone();
        Problem { label, required: param.required, step: step.into(), code, message: message.into() }
    }

    fn from_mcp(label: &str, required: bool, error: &McpError) -> Self {
        let step = error.step().map_or_else(|| "connect".to_string(), |s| s.to_string());
        let code = if matches!(error, McpError::Timeout { .. }) { "request_timeout" } else { "connection_failed" };
        Problem { label: label.into(), required, step, code, message: error.to_string() }
    }

    /// The turn's error when this server is required.
    pub fn turn_error(&self) -> TurnError {
        let what = if self.step == "tools/list" { "could not list its tools" } else { "could not initialize" };
        TurnError::new(
            self.code,
            format!("required MCP server '{}' {what} (step: {}): {}", self.label, self.step, self.message),
        )
    }
}

/// Whether an MCP error is the server refusing the credentials (HTTP 401).
pub fn unauthorized(error: &McpError) -> bool {
    match error {
        McpError::Transport { message, .. } | McpError::Protocol { message, .. } => {
            let lower = message.to_ascii_lowercase();
            lower.contains("401") || lower.contains("auth required") || lower.contains("unauthorized")
        }
        _ => false,
    }
}

/// Everything needed to (re)connect one session's servers during a turn.
pub struct Connector {
    pub setup: McpSetup,
    pub envs: Arc<Environments>,
    pub store: Arc<dyn Store>,
    pub org_id: String,
    pub session: SessionRecord,
    pub launcher: SandboxLauncher,
}

/// Whether the session's agent names no MCP server.
pub(crate) fn no_mcp_servers(session: &SessionRecord) -> bool {
    mcp_params(session).next().is_none()
}

/// The MCP tools of a session.
fn mcp_params(session: &SessionRecord) -> impl Iterator<Item = &McpToolParam> {
    session.agent.config.tools.iter().filter_map(|t| if let ToolParam::Mcp(m) = t { Some(m) } else { None })
}

impl Connector {
    /// The connector of a session's MCP servers; `None` when it configures none.
    pub fn new(
        setup: McpSetup,
        envs: Arc<Environments>,
        store: Arc<dyn Store>,
        org_id: &str,
        session: &SessionRecord,
    ) -> Option<Self> {
        mcp_params(session).next()?;
        let launcher = SandboxLauncher::new(Arc::clone(&envs), org_id);
        Some(Connector { setup, envs, store, org_id: org_id.to_string(), session: session.clone(), launcher })
    }

    /// The session's MCP tools.
    pub fn params(&self) -> Vec<&McpToolParam> {
        mcp_params(&self.session).collect()
    }

    fn env_id(&self) -> Option<&EnvironmentId> {
        self.session.environment.id()
    }

    /// Whether connecting waits for the session's environment (a stdio or
    /// environment-origin server).
    pub fn uses_environment(&self) -> bool {
        self.env_id().is_some() && self.params().iter().any(|p| p.effective_origin() == ConnectionOrigin::Environment)
    }

    /// Specs for every server that can be described, and the problems of the others.
    pub async fn plan(&self) -> (Vec<Planned>, Vec<Problem>) {
        let params = self.params();
        let mut planned = Vec::new();
        let mut problems = Vec::new();
        let inline = self.setup.credentials.session_secrets(&self.org_id, &self.session);
        let mut sources: Option<Result<EnvSources, String>> = None;
        for param in params {
            let outcome = match &param.transport {
                McpTransportParam::Http { server_url, .. } => self.plan_http(param, server_url, &inline).await,
                McpTransportParam::Stdio { command, cwd, args, env, env_vars } => {
                    let Some(env_id) = self.env_id() else {
                        problems.push(Problem::new(
                            param,
                            "launch",
                            "sandbox_error",
                            "a stdio MCP server runs in the session's environment, and this session has none",
                        ));
                        continue;
                    };
                    let env_vars = env_vars.clone().unwrap_or_default();
                    if !env_vars.is_empty() && sources.is_none() {
                        sources = Some(self.env_sources(env_id).await);
                    }
                    // Sealed at rest; a record written before sealing may still carry it in the open.
                    let mut inline_env: BTreeMap<String, Secret> =
                        env.iter().flatten().map(|(k, v)| (k.clone(), Secret::new(v.clone()))).collect();
                    match &inline {
                        Ok(all) => {
                            inline_env.extend(all.get(&param.server_label).map(|s| s.env.clone()).unwrap_or_default())
                        }
                        Err(e) => {
                            problems.push(Problem::new(param, "credentials", "authentication_error", e.to_string()));
                            continue;
                        }
                    }
                    let empty = EnvSources::default();
                    let resolved = match &sources {
                        Some(Err(message)) => Err(message.clone()),
                        Some(Ok(found)) => process_env(inline_env, &env_vars, found, env_id),
                        None => process_env(inline_env, &env_vars, &empty, env_id),
                    };
                    resolved
                        .map(|env| {
                            let stdio = StdioConfig {
                                command: command.clone(),
                                args: args.clone().unwrap_or_default(),
                                cwd: Some(cwd.into()),
                                env,
                            };
                            let origin = Origin::Environment { sandbox: env_id.to_string() };
                            (config(param, TransportConfig::Stdio(stdio)), origin, None)
                        })
                        .map_err(|message| Problem::new(param, "environment variables", "invalid_request", message))
                }
            };
            match outcome {
                Ok((config, origin, vault)) => {
                    planned.push(Planned { spec: ServerSpec { config, origin, required: param.required }, vault })
                }
                Err(problem) => problems.push(problem),
            }
        }
        (planned, problems)
    }

    async fn plan_http(
        &self,
        param: &McpToolParam,
        server_url: &str,
        inline: &Result<BTreeMap<String, InlineSecrets>, CredentialFailure>,
    ) -> Result<(ServerConfig, Origin, Option<VaultToken>), Problem> {
        let origin = match param.effective_origin() {
            ConnectionOrigin::Service => Origin::Service,
            ConnectionOrigin::Environment => match self.env_id() {
                Some(env_id) => Origin::Environment { sandbox: env_id.to_string() },
                None => {
                    return Err(Problem::new(
                        param,
                        "connect",
                        "invalid_request",
                        "connection_origin 'environment' needs the session's environment, and this session has none",
                    ));
                }
            },
        };
        let secrets = match inline {
            Ok(all) => all.get(&param.server_label).cloned().unwrap_or_default(),
            Err(e) => return Err(Problem::new(param, "credentials", "authentication_error", e.to_string())),
        };
        let mut http = HttpConfig::new(server_url);
        http.headers = secrets.headers;
        let mut vault = None;
        // An explicit credential_id wins; otherwise inline authorization, then a vault match.
        if param.credential_id.is_some() || secrets.authorization.is_none() {
            let found = self
                .setup
                .credentials
                .vault_token(&self.org_id, &self.session.vault_ids, server_url, param.credential_id.as_deref())
                .await
                .map_err(|e| Problem::new(param, "credentials", "authentication_error", e.to_string()))?;
            if let Some(token) = found {
                http.authorization = Some(bearer(&token));
                vault = Some(token);
            }
        }
        if vault.is_none() {
            http.authorization = secrets.authorization;
        }
        Ok((config(param, TransportConfig::Http(http)), origin, vault))
    }

    async fn env_sources(&self, env_id: &EnvironmentId) -> Result<EnvSources, String> {
        let record = self
            .store
            .get_environment(&self.org_id, env_id)
            .await
            .map_err(|e| format!("reading environment {env_id} failed: {e}"))?
            .ok_or_else(|| format!("environment {env_id} no longer exists"))?;
        let vars = record.config.env.clone().unwrap_or_default();
        let bindings = record.config.vault_credentials.clone().unwrap_or_default();
        let found = if bindings.is_empty() {
            Vec::new()
        } else {
            self.setup
                .credentials
                .environment_credentials(&self.org_id, &bindings)
                .await
                .map_err(|e| format!("environment credentials of {env_id}: {e}"))?
        };
        let mut sources = EnvSources { vars, ..EnvSources::default() };
        for credential in found {
            let Some(hosts) = credential.allowed_hosts else {
                sources.credentials.push((credential.name, credential.value));
                continue;
            };
            // The sandbox sees a placeholder only; its egress proxy swaps the value in.
            let sandbox = self.envs.sandbox(&self.org_id, env_id).await.map_err(|e| e.message)?;
            let bound = sandbox
                .bind_limited_secret(&credential.name, credential.value.expose(), &hosts)
                .await
                .map_err(|e| format!("environment credential '{}' (networking limited): {e}", credential.name))?;
            sources.limited.push(credential.name.clone());
            sources.limited_env = bound.env;
            sources.credentials.push((credential.name, Secret::new(bound.placeholder)));
        }
        Ok(sources)
    }

    /// Resumes (or initializes) the environment's sandbox when environment-origin servers use it.
    pub async fn touch(&self, planned: &[Planned]) -> Result<(), String> {
        let uses_env = planned.iter().any(|p| matches!(p.spec.origin, Origin::Environment { .. }));
        match self.env_id() {
            Some(env_id) if uses_env => {
                self.envs.sandbox(&self.org_id, env_id).await.map(|_| ()).map_err(|e| e.message)
            }
            _ => Ok(()),
        }
    }

    /// Connects `planned`; each vault-credentialed server refused with a 401 gets its
    /// credential force-refreshed and one more attempt. Returns the connected toolset, the
    /// servers it holds (with their refreshed tokens), and the problems of the others.
    pub async fn connect(&self, mut planned: Vec<Planned>) -> (Connected, Vec<Planned>, Vec<Problem>) {
        let first = self.attempt(&planned).await;
        let rejected: Vec<usize> = planned
            .iter()
            .enumerate()
            .filter(|(_, p)| p.vault.is_some() && failure_of(&first, &p.spec.config.label).is_some_and(unauthorized))
            .map(|(i, _)| i)
            .collect();
        if rejected.is_empty() {
            let (kept, problems) = self.settle(&first, planned).await;
            return (first, kept, problems);
        }
        let mut problems = Vec::new();
        let mut retry = Vec::new();
        for (i, p) in planned.drain(..).enumerate() {
            if rejected.contains(&i) {
                match self.refreshed(p).await {
                    Ok(p) => retry.push(p),
                    Err(problem) => problems.push(problem),
                }
            } else if failure_of(&first, &p.spec.config.label).is_none() {
                retry.push(p);
            } else {
                let (_, mut other) = self.settle(&first, vec![p]).await;
                problems.append(&mut other);
            }
        }
        let second = self.attempt(&retry).await;
        let (kept, mut more) = self.settle(&second, retry).await;
        problems.append(&mut more);
        (second, kept, problems)
    }

    /// Whether each required server of `connected` answers `tools/list` (its catalog from the
    /// cache when it answered within the cache's lifetime); the problems of those that do not,
    /// which fail the turn as a server that cannot initialize does.
    pub async fn check_required(
        &self,
        connected: &Connected,
        kept: &[Planned],
        cancel: &CancellationToken,
    ) -> Vec<Problem> {
        let toolset = &connected.toolset;
        let required = |label: &str| kept.iter().any(|p| p.spec.required && p.spec.config.label == label);
        let checks = toolset
            .servers()
            .iter()
            .filter(|b| required(&b.config.label))
            .map(|binding| async move { (binding.config.label.as_str(), toolset.catalog(binding, cancel).await) });
        let outcomes = futures::future::join_all(checks).await;
        outcomes
            .into_iter()
            .filter_map(|(label, outcome)| outcome.err().map(|error| Problem::from_mcp(label, true, &error)))
            .collect()
    }

    /// One forced refresh of a server's vault credential after a 401.
    pub async fn refreshed(&self, mut p: Planned) -> Result<Planned, Problem> {
        let Some(rejected) = p.vault.take() else { return Ok(p) };
        let label = p.spec.config.label.clone();
        let fresh = self.setup.credentials.refresh(&self.org_id, &rejected).await.map_err(|e| Problem {
            label: label.clone(),
            required: p.spec.required,
            step: "credentials".into(),
            code: "authentication_error",
            message: format!(
                "the server answered 401 and refreshing credential '{}' failed: {e}",
                rejected.credential_id
            ),
        })?;
        if let TransportConfig::Http(http) = &mut p.spec.config.transport {
            http.authorization = Some(bearer(&fresh));
        }
        p.vault = Some(fresh);
        Ok(p)
    }

    async fn attempt(&self, planned: &[Planned]) -> Connected {
        let specs: Vec<ServerSpec> = planned.iter().map(|p| p.spec.clone()).collect();
        let session = self.session.id.to_string();
        self.setup.hub.connect(&self.org_id, &session, &specs, Some(&self.launcher)).await
    }

    /// Splits `planned` into the servers `connected` holds and the problems of the others
    /// (a stdio server's are told with the end of its stderr).
    async fn settle(&self, connected: &Connected, planned: Vec<Planned>) -> (Vec<Planned>, Vec<Problem>) {
        let mut kept = Vec::new();
        let mut problems = Vec::new();
        for p in planned {
            let label = p.spec.config.label.clone();
            let Some(error) = failure_of(connected, &label) else {
                kept.push(p);
                continue;
            };
            let mut problem = Problem::from_mcp(&label, p.spec.required, error);
            if let TransportConfig::Stdio(stdio) = &p.spec.config.transport
                && let Some(stderr) = self.launcher.stderr_of(stdio).await
            {
                problem.message = format!("{}; its stderr ended with: {stderr}", problem.message);
            }
            problems.push(problem);
        }
        (kept, problems)
    }
}

fn failure_of<'a>(connected: &'a Connected, label: &str) -> Option<&'a McpError> {
    connected.failures.iter().find(|f| f.label == label).map(|f| &f.error)
}

fn bearer(token: &VaultToken) -> Secret {
    Secret::new(format!("Bearer {}", token.token.expose()))
}

fn config(param: &McpToolParam, transport: TransportConfig) -> ServerConfig {
    let mut config = ServerConfig::new(param.server_label.clone(), transport);
    config.allowed_tools = param.allowed_tools.clone();
    config.request_metadata = param.request_metadata.clone();
    config.call_timeout = Some(param.call_timeout());
    config
}
