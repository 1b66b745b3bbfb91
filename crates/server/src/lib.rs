//! The rebyte HTTP server.
//!
//! # Layout
//! - [`router`] builds the axum `Router` over an [`AppState`]; [`serve`] runs it
//!   on a listener until a shutdown future resolves. Tests bind `127.0.0.1:0`.
//! - [`routes`]: one module per resource, functions named by verb.
//! - [`auth`]: the `Auth` extractor (key → organization and scopes).
//! - [`extract`]: JSON bodies and queries whose errors name the field;
//!   [`multipart`]: upload bodies (skills, files).
//! - [`error`]: `ApiError`, the one error type that becomes a response.
//! - [`bootstrap`]: the first-start organization and key; `master_key`: the
//!   master key checked at start.
//! - [`metrics`], [`openapi`]: `/metrics` and `/v1/openapi.json`; [`console`]:
//!   the web console's embedded files at `/console/`.
//! - [`idempotency`]: `Idempotency-Key` on creates; [`forward`]: requests
//!   for an environment on another node of the cluster; [`limits`]: the
//!   per-organization request rate.
//!
//! Data flows one way: handlers → store. Handlers never see SQL.

pub mod auth;
pub mod bootstrap;
pub mod console;
pub mod error;
pub mod extract;
pub mod forward;
pub mod idempotency;
pub mod limits;
mod master_key;
pub mod metrics;
pub mod multipart;
pub mod openapi;
pub mod routes;
pub mod sse;
pub mod state;

pub use app::limits::OrgLimits;

pub use app::{credentials, keys, mcp_secrets, now, rekey};
pub use state::AppState;

use axum::Router;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::net::TcpListener;

/// Largest request body accepted, in bytes (answered 413 beyond).
pub const DEFAULT_BODY_LIMIT: usize = 8 * 1024 * 1024;
/// Each environment's disk quota in GiB unless configured (`medium`'s).
pub const DEFAULT_ENVIRONMENT_DISK_GIB: u64 = 10;

/// How the server is set up.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where the SQLite file, the bootstrap key and environments live.
    pub data_dir: PathBuf,
    /// A `sqlite://…` or `postgres://…` URL overriding `<data_dir>/rebyte.db`.
    pub database_url: Option<String>,
    /// Largest request body accepted.
    pub body_limit: usize,
    /// A key to install on first start (`REBYTE_BOOTSTRAP_KEY`).
    pub bootstrap_key: Option<String>,
    /// `rebyte.toml`: model names → providers (environment variables otherwise).
    pub models_config: Option<PathBuf>,
    /// The same as TOML text, instead of a file (embedders and tests).
    pub models_toml: Option<String>,
    /// The master key (`REBYTE_MASTER_KEY`: 64 hex digits or base64 of 32
    /// bytes); when absent, the key file is used (and created on first start).
    pub master_key: Option<secrets::Secret>,
    /// The master key file; defaults to `<data_dir>/master.key`.
    pub master_key_file: Option<PathBuf>,
    /// The program and arguments that become a sandbox's agent; default:
    /// this executable's hidden `sandbox-agent` subcommand.
    pub sandbox_agent: Option<(PathBuf, Vec<String>)>,
    /// The limit of each environment setup command.
    pub setup_timeout: std::time::Duration,
    /// Sandboxes idle this long are paused.
    pub idle_pause: std::time::Duration,
    /// The resource limits of every environment's sandbox.
    pub sandbox_limits: sandbox::Limits,
    /// Each environment's disk quota in GiB (a `container_size` scales it:
    /// `engine::environments::disk_bytes`); 0: none.
    pub environment_disk_gib: u64,
    /// Addresses of `enabled` sandboxes and the blocked ranges they may reach anyway.
    pub sandbox_network: sandbox::local::NetworkConfig,
    /// This node's id in a cluster (PostgreSQL); default `<hostname>-<8 hex digits of the data directory's path>`.
    pub node_id: Option<String>,
    /// Where other nodes reach this one; default `http://<listen address>`.
    pub advertise: Option<String>,
    /// What nodes sign their requests to each other with; default derived
    /// from the master key (which every node of a cluster has).
    pub cluster_secret: Option<secrets::Secret>,
    /// What one organization may ask for at once (request rate, active turns).
    pub limits: app::limits::OrgLimits,
}

impl Config {
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        Self {
            data_dir: data_dir.into(),
            database_url: None,
            body_limit: DEFAULT_BODY_LIMIT,
            bootstrap_key: None,
            models_config: None,
            models_toml: None,
            master_key: None,
            master_key_file: None,
            sandbox_agent: None,
            setup_timeout: std::time::Duration::from_secs(600),
            idle_pause: std::time::Duration::from_secs(600),
            sandbox_limits: sandbox::Limits::default(),
            environment_disk_gib: DEFAULT_ENVIRONMENT_DISK_GIB,
            sandbox_network: sandbox::local::NetworkConfig::default(),
            node_id: None,
            advertise: None,
            cluster_secret: None,
            limits: app::limits::OrgLimits::default(),
        }
    }
}

/// Errors starting the server.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot use data directory {path}: {source}")]
    DataDir { path: PathBuf, source: std::io::Error },
    #[error("cannot open the store: {0}")]
    Store(#[from] store::Error),
    #[error("cannot join the cluster: {0}")]
    Cluster(#[source] store::Error),
    #[error("no database at {} (is --data-dir right? `rebyte serve` creates it on first start)", .0.display())]
    NoDatabase(PathBuf),
    #[error("master key: {0}")]
    MasterKey(#[from] secrets::Error),
    #[error("bootstrap failed: {0}")]
    Bootstrap(String),
    #[error("server error: {0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Models(#[from] models::ModelError),
    #[error("recovering unfinished turns failed: {0}")]
    Recover(#[from] engine::Error),
}

/// Opens the store the configuration names, creating the data directory.
pub async fn open_store(config: &Config) -> Result<Arc<dyn store::Store>, StartError> {
    private_dir(&config.data_dir).map_err(|source| StartError::DataDir { path: config.data_dir.clone(), source })?;
    Ok(match &config.database_url {
        None => Arc::new(store::SqliteStore::open(&config.data_dir.join("rebyte.db")).await?),
        Some(url) => store::open(url).await?,
    })
}

/// Creates the data directory with mode 0700, or takes group and other
/// permissions off an existing one: it holds the database, the master key
/// and the environments' files. An existing directory that cannot be
/// changed (another user's) is used as it is, with a warning.
fn private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let mode = std::fs::metadata(dir)?.permissions().mode();
    if mode & 0o077 != 0
        && let Err(e) = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode & 0o700))
    {
        tracing::warn!(path = %dir.display(), error = %e, "cannot restrict the data directory to its owner");
    }
    Ok(())
}

/// The SQLite file the configuration names.
fn sqlite_path(config: &Config) -> Option<PathBuf> {
    match &config.database_url {
        None => Some(config.data_dir.join("rebyte.db")),
        Some(url) => {
            let rest = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:"))?;
            let path = rest.split('?').next().unwrap_or_default();
            (!path.is_empty()).then(|| PathBuf::from(path))
        }
    }
}

/// Opens the store of a server that has already started once (the `keys`
/// commands): a data directory without a database is an error, not a new one.
pub async fn open_existing_store(config: &Config) -> Result<Arc<dyn store::Store>, StartError> {
    if let Some(path) = sqlite_path(config)
        && !path.exists()
    {
        return Err(StartError::NoDatabase(path));
    }
    open_store(config).await
}

/// The whole HTTP application.
pub fn router(state: AppState, body_limit: usize) -> Router {
    routes::router(state, body_limit)
}

/// Opens the store, bootstraps it, checks the master key, loads the model
/// registry, fails the turns a previous process left running, and builds the
/// application state.
pub async fn start(config: &Config) -> Result<AppState, StartError> {
    // The model configuration first: a file that does not parse stops the
    // start before anything is written or a key is printed.
    let models = match &config.models_toml {
        Some(text) => models::Registry::builder().config_toml(text.clone()).build()?,
        None => models::Registry::load(config.models_config.clone())?,
    };
    let store = open_store(config).await?;
    bootstrap::run(store.as_ref(), config).await?;
    let (cipher, derived_secret) = master_key::open_cipher(store.as_ref(), config).await?;
    // A start refused before here (a wrong master key) registers no node.
    let cluster = join_cluster(store.as_ref(), config).await?;
    let credentials = credentials::Credentials::new(Arc::clone(&store), cipher)
        .map_err(|e| StartError::Io(std::io::Error::other(e.to_string())))?;
    let local = match &config.sandbox_agent {
        Some((program, args)) => sandbox::LocalConfig::with_agent(program, args.clone()),
        None => sandbox::LocalConfig::default(),
    };
    let local = sandbox::LocalConfig { network: config.sandbox_network.clone(), ..local };
    // Before the backend clones any agent: see `sandbox::disk`.
    let root = config.data_dir.join("environments");
    let disk = match std::fs::create_dir_all(&root) {
        // An environment's directory holds `workspace/` and `home/` (engine::environments).
        Ok(()) => sandbox::disk::Images::open_with(&root, config.environment_disk_gib << 30, &["workspace", "home"]),
        Err(e) => {
            tracing::warn!(path = %root.display(), error = %e, "environments have no disk quota");
            None
        }
    };
    let backend: Arc<dyn sandbox::Backend> = Arc::new(sandbox::LocalBackend::new(local));
    // One registry for the server: the engine, its environments and the HTTP layer record into it.
    let metrics = Arc::new(telemetry::Metrics::default());
    let envs = engine::environments::Environments::new(
        Arc::clone(&store),
        backend,
        engine::environments::EnvironmentsConfig {
            root,
            setup_timeout: config.setup_timeout,
            idle_pause: config.idle_pause,
            limits: config.sandbox_limits,
            live_per_org: config.limits.live_sandboxes.map(|n| n as usize),
            disk,
        },
        Arc::clone(&metrics),
    );
    envs.start_reaper();
    let hub = Arc::new(mcp::Hub::new(Arc::new(mcp::SystemClock)));
    let mcp_setup = engine::mcp_connect::McpSetup {
        hub: Arc::clone(&hub),
        credentials: Arc::new(mcp_secrets::EngineCredentials(credentials.clone())),
    };
    let tools = Arc::new(engine::hosted::ServerTools {
        store: Arc::clone(&store),
        envs: Arc::clone(&envs),
        mcp: Some(mcp_setup),
    });
    let engine = engine::Engine::new(Arc::clone(&store), models, Some(tools), Arc::clone(&metrics)).await?;
    // Sandboxes paused and resumed are announced on the sessions attached to their environments.
    engine::environment_events::follow(&envs, Arc::clone(&store), Arc::clone(engine.bus()));
    if let Some(cluster) = &cluster {
        engine.join(Arc::clone(cluster));
    }
    // Turns left running belong to a process that is gone (in a cluster:
    // those of sessions no node holds; a lost node's are taken over).
    let recovered = engine.recover().await?;
    if recovered > 0 {
        tracing::warn!(recovered, "failed turns left unfinished by a previous process");
    }
    let mut state = state::Shared::new(
        app::App {
            store,
            engine,
            envs,
            credentials,
            mcp: hub,
            limits: config.limits,
            requests: Arc::default(),
            active_turns: Arc::default(),
        },
        metrics,
    );
    if let Some(cluster) = &cluster {
        auth::follow_revocations(&state.keys, cluster.notices());
        let secret = config.cluster_secret.as_ref().map_or(derived_secret.as_slice(), |s| s.expose().as_bytes());
        state.peers = Some(Arc::new(forward::Peers::new(secret, config.body_limit)));
    }
    state.cluster = cluster;
    Ok(AppState::from(state))
}

/// Registers this process as a node when the database is shared
/// (PostgreSQL), refusing an id a live node holds, and keeps its heartbeat.
async fn join_cluster(store: &dyn store::Store, config: &Config) -> Result<Option<Arc<store::Cluster>>, StartError> {
    // By default named after its data directory (each node has its own): a restart over the
    // same directory is the same node, whatever port it listens on.
    let id = config.node_id.clone().unwrap_or_else(|| {
        use sha2::Digest;
        let dir = std::fs::canonicalize(&config.data_dir).unwrap_or_else(|_| config.data_dir.clone());
        let digest = sha2::Sha256::digest(dir.to_string_lossy().as_bytes());
        let short: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
        format!("{}-{short}", hostname())
    });
    let advertise = config.advertise.clone().unwrap_or_else(|| "http://127.0.0.1:8787".to_string());
    let node = store::NodeSpec { id, advertise, version: env!("CARGO_PKG_VERSION").to_string() };
    let cluster = store.join_cluster(&node).await.map_err(StartError::Cluster)?;
    if let Some(cluster) = &cluster {
        cluster.keep_alive();
        tracing::info!(node = %node.id, slot = cluster.slot(), peers = cluster.peers(), "joined the cluster");
    }
    Ok(cluster)
}

/// This machine's name, as a node id's first part.
fn hostname() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let host: String = host.trim().chars().filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.')).collect();
    if host.is_empty() { "node".to_string() } else { host }
}

/// Starts the application and serves on `listener` until `shutdown`.
pub async fn serve(
    config: Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), StartError> {
    let addr = listener.local_addr()?;
    let mut config = config;
    if config.advertise.is_none() {
        config.advertise = Some(format!("http://{addr}"));
    }
    let state = start(&config).await?;
    let stop_streams = state.shutdown.clone();
    let shutdown = async move {
        shutdown.await;
        stop_streams.cancel();
    };
    let engine = state.app.engine.clone();
    let cluster = state.cluster.clone();
    let app = router(state, config.body_limit);
    // On stdout, one line that scripts and tests read to find the port.
    println!("rebyte listening on http://{addr}");
    tracing::info!(%addr, "rebyte listening");
    // Without TCP_NODELAY small SSE frames can wait ~40 ms on delayed ACKs.
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    // A make-service: `serve` given the router itself rebuilds its whole route table for every
    // connection and keeps that copy for the connection's life (~150 KB each, issue 11).
    axum::serve(listener, app.into_make_service()).with_graceful_shutdown(shutdown).await?;
    // What the engine queued before the shutdown is committed before the process ends.
    if let Err(e) = engine.flush().await {
        tracing::error!(error = %e, "committing the engine's last writes at shutdown failed");
    }
    if let Some(cluster) = cluster
        && let Err(e) = cluster.leave().await
    {
        tracing::warn!(error = %e, "leaving the cluster at shutdown failed");
    }
    Ok(())
}
