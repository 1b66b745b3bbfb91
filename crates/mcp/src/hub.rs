//! The MCP hub the engine holds for the whole server: it turns a session's configured servers
//! into a [`Toolset`] for a turn. Service-origin HTTP connections belong to a session: reused
//! across its turns, replaced when their configuration or credentials change, and terminated
//! (HTTP `DELETE`) when the session is deleted. Environment-origin connections are brokers
//! shared by every session on the sandbox: stdio servers are launched inside the sandbox by the
//! engine's [`StdioLauncher`]. The catalog cache is shared by all.

use crate::broker::{Broker, BrokerRegistry};
use crate::catalog::CatalogCache;
use crate::clock::Clock;
use crate::config::{ConfigHash, CredentialHash, ServerConfig, StdioConfig, TransportConfig};
use crate::connection::{Connection, Termination, Timeouts};
use crate::error::{McpError, Result};
use crate::search::SearchLimits;
use crate::toolset::Toolset;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncRead, AsyncWrite};

/// Where a server's connection originates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// From this server process: HTTP only, owned by the session.
    Service,
    /// From the session's sandbox: a broker shared by every session on it.
    Environment { sandbox: String },
}

/// One configured server of a session.
#[derive(Debug, Clone)]
pub struct ServerSpec {
    pub config: ServerConfig,
    pub origin: Origin,
    /// A required server that cannot initialize fails the turn; an optional one is left out.
    pub required: bool,
}

/// A stdio server process started in a sandbox: its stdout, its stdin, and whatever must stay
/// alive with it (e.g. the sandbox's process handle).
pub struct StdioStreams {
    pub stdout: Box<dyn AsyncRead + Send + Unpin>,
    pub stdin: Box<dyn AsyncWrite + Send + Unpin>,
    pub keep_alive: Box<dyn std::any::Any + Send + Sync>,
}

/// Starts stdio MCP servers inside a sandbox, and says how environment-origin HTTP leaves it
/// (implemented by the engine over the sandbox crate).
pub trait StdioLauncher: Send + Sync {
    /// Starts `config` in `sandbox`; the error text says why it could not.
    fn launch<'a>(
        &'a self,
        sandbox: &'a str,
        config: &'a StdioConfig,
    ) -> Pin<Box<dyn Future<Output = std::result::Result<StdioStreams, String>> + Send + 'a>>;

    /// The proxy through which an environment-origin HTTP connection originates in `sandbox`
    /// (its loopback, its network policy); `None` when the sandbox shares the server's network.
    fn http_proxy<'a>(
        &'a self,
        sandbox: &'a str,
    ) -> Pin<Box<dyn Future<Output = std::result::Result<Option<HttpProxy>, String>> + Send + 'a>> {
        let _ = sandbox;
        Box::pin(async { Ok(None) })
    }
}

/// An HTTP proxy (Basic credentials) that HTTP MCP connections go through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpProxy {
    pub url: String,
    pub username: String,
    pub password: String,
}

/// A server left out of a turn's toolset.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerFailure {
    pub label: String,
    pub required: bool,
    pub error: McpError,
}

/// A turn's toolset and the servers that could not join it.
#[derive(Debug, Clone)]
pub struct Connected {
    pub toolset: Toolset,
    pub failures: Vec<ServerFailure>,
}

impl Connected {
    /// The first required server that failed: the turn must fail with its error.
    pub fn required_failure(&self) -> Option<&ServerFailure> {
        self.failures.iter().find(|failure| failure.required)
    }
}

#[derive(Debug)]
struct ServiceConnection {
    config: ConfigHash,
    credentials: CredentialHash,
    connection: Arc<Connection>,
}

type ServiceSlot = Arc<tokio::sync::Mutex<Option<ServiceConnection>>>;

/// Every MCP connection of the server process.
#[derive(Debug)]
pub struct Hub {
    cache: Arc<CatalogCache>,
    brokers: BrokerRegistry,
    // A std mutex: held to find a slot; the connect waits on the slot's own (tokio) mutex, so
    // only the same (session, label) is serialized.
    services: Mutex<HashMap<(String, String), ServiceSlot>>,
    timeouts: Timeouts,
    limits: SearchLimits,
}

impl Hub {
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Hub {
            cache: Arc::new(CatalogCache::new(clock)),
            brokers: BrokerRegistry::new(),
            services: Mutex::new(HashMap::new()),
            timeouts: Timeouts::default(),
            limits: SearchLimits::default(),
        }
    }

    pub fn with_timeouts(mut self, timeouts: Timeouts) -> Self {
        self.timeouts = timeouts;
        self
    }

    pub fn with_limits(mut self, limits: SearchLimits) -> Self {
        self.limits = limits;
        self
    }

    pub fn cache(&self) -> &Arc<CatalogCache> {
        &self.cache
    }

    pub fn brokers(&self) -> &BrokerRegistry {
        &self.brokers
    }

    /// Connects (or reuses the connections of) a session's servers for one turn. `launcher` is
    /// needed for environment-origin stdio servers; pass it after the sandbox's lazy init.
    pub async fn connect(
        &self,
        organization: &str,
        session: &str,
        specs: &[ServerSpec],
        launcher: Option<&dyn StdioLauncher>,
    ) -> Connected {
        let attempts = specs.iter().map(|spec| self.connection(session, spec, launcher));
        let outcomes = futures::future::join_all(attempts).await;
        let mut toolset = Toolset::new(organization, session, self.cache.clone()).with_limits(self.limits);
        let mut failures = Vec::new();
        for (spec, outcome) in specs.iter().zip(outcomes) {
            match outcome {
                Ok(connection) => toolset = toolset.with_server(spec.config.clone(), connection),
                Err(error) => {
                    failures.push(ServerFailure { label: spec.config.label.clone(), required: spec.required, error })
                }
            }
        }
        Connected { toolset, failures }
    }

    async fn connection(
        &self,
        session: &str,
        spec: &ServerSpec,
        launcher: Option<&dyn StdioLauncher>,
    ) -> Result<Arc<Connection>> {
        let label = spec.config.label.as_str();
        match (&spec.origin, &spec.config.transport) {
            (Origin::Service, TransportConfig::Http(_)) => self.service_connection(session, &spec.config).await,
            (Origin::Service, TransportConfig::Stdio(_)) => Err(McpError::Config {
                server: label.to_owned(),
                message: "stdio servers run in the session's environment (environment origin)".into(),
            }),
            (Origin::Environment { sandbox }, transport) => {
                let timeouts = self.timeouts;
                let broker = self
                    .brokers
                    .get_or_start(sandbox, label, || start_broker(label, sandbox, transport, launcher, timeouts))
                    .await?;
                Ok(broker.connection().clone())
            }
        }
    }

    async fn service_connection(&self, session: &str, config: &ServerConfig) -> Result<Arc<Connection>> {
        let TransportConfig::Http(http) = &config.transport else {
            return Err(McpError::Config { server: config.label.clone(), message: "not an HTTP server".into() });
        };
        let slot = {
            let mut services = self.services.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            services.entry((session.to_owned(), config.label.clone())).or_default().clone()
        };
        let mut slot = slot.lock().await;
        let (config_hash, credentials) = (config.config_hash(), config.credential_hash());
        if let Some(existing) = slot.as_ref() {
            let same = existing.config == config_hash && existing.credentials == credentials;
            if same && !existing.connection.is_closed() {
                return Ok(existing.connection.clone());
            }
        }
        let connection = Arc::new(Connection::connect_http(config.label.clone(), http, self.timeouts).await?);
        let replaced =
            slot.replace(ServiceConnection { config: config_hash, credentials, connection: connection.clone() });
        if let Some(old) = replaced {
            // New credentials or configuration: the old upstream session is ended.
            self.cache.forget_connection(&old.connection);
            tokio::spawn(async move {
                let _ = old.connection.terminate().await;
            });
        }
        Ok(connection)
    }

    /// Terminates a deleted session's service-origin HTTP connections upstream (`DELETE`; 404
    /// and 405 count as already gone). Its brokers live on with their sandbox.
    pub async fn close_session(&self, session: &str) -> Vec<(String, Result<Termination>)> {
        let slots: Vec<((String, String), ServiceSlot)> = {
            let mut services = self.services.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            let keys: Vec<(String, String)> = services.keys().filter(|(s, _)| s == session).cloned().collect();
            keys.into_iter().filter_map(|key| services.remove(&key).map(|slot| (key, slot))).collect()
        };
        let mut outcomes = Vec::new();
        for ((_, label), slot) in slots {
            if let Some(service) = slot.lock().await.take() {
                self.cache.forget_connection(&service.connection);
                outcomes.push((label, service.connection.terminate().await));
            }
        }
        outcomes
    }

    /// Forgets and terminates every broker of a deleted sandbox.
    pub async fn remove_sandbox(&self, sandbox: &str) -> Vec<(String, Result<Termination>)> {
        let brokers: Vec<Arc<Broker>> = self.brokers.remove_sandbox(sandbox);
        let mut outcomes = Vec::new();
        for broker in brokers {
            self.cache.forget_connection(broker.connection());
            outcomes.push((broker.key().label.clone(), broker.connection().terminate().await));
        }
        outcomes
    }
}

/// Launches an environment-origin server: a stdio server through the launcher, or an HTTP
/// connection (made from this process; the sandbox's network policy is not applied to it yet).
/// A named `async fn` rather than a closure's `async` block: with the block, [`Hub::connect`]'s
/// future failed the compiler's higher-ranked `Send` check, so the engine could not await it.
async fn start_broker(
    label: &str,
    sandbox: &str,
    transport: &TransportConfig,
    launcher: Option<&dyn StdioLauncher>,
    timeouts: Timeouts,
) -> Result<Connection> {
    match transport {
        TransportConfig::Stdio(stdio) => {
            let Some(launcher) = launcher else {
                return Err(McpError::Spawn {
                    server: label.to_owned(),
                    message: "no sandbox is available to run it in".into(),
                });
            };
            let streams = launcher
                .launch(sandbox, stdio)
                .await
                .map_err(|message| McpError::Spawn { server: label.to_owned(), message })?;
            // On a task of its own: awaited inline, rmcp's handshake future fails the compiler's
            // higher-ranked `Send` check here, and the engine needs this future to be `Send`.
            let handshake = Connection::connect_stdio(label.to_owned(), streams.stdout, streams.stdin, timeouts);
            let connection = tokio::spawn(handshake).await.map_err(|e| McpError::Spawn {
                server: label.to_owned(),
                message: format!("the MCP handshake task failed: {e}"),
            })??;
            Ok(connection.keep_alive(streams.keep_alive))
        }
        TransportConfig::Http(http) => {
            // It originates in the sandbox: its loopback is the sandbox's, its policy applies.
            let proxy = match launcher {
                Some(launcher) => launcher.http_proxy(sandbox).await.map_err(|message| McpError::Transport {
                    server: label.to_owned(),
                    step: crate::error::Step::Connect,
                    message: format!("the environment's network: {message}"),
                })?,
                None => None,
            };
            Connection::connect_http_via(label.to_owned(), http, timeouts, proxy.as_ref()).await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The engine awaits [`Hub::connect`] inside `Send` futures (a turn's task): a compile-time
    /// check that it stays `Send`.
    #[test]
    fn connect_is_send() {
        fn is_send<T: Send>(_: &T) {}
        fn check(hub: &Hub, launcher: &dyn StdioLauncher, specs: &[ServerSpec]) {
            is_send(&hub.connect("org", "session", specs, Some(launcher)));
        }
        let _ = check;
    }
}
