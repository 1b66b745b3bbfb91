//! The `rebyte` binary: `serve` runs the server; `keys` manages organization
//! API keys directly on a data directory (the server may be running).

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use protocol::admin::Scope;
use server::{Config, keys};
use std::path::PathBuf;

mod log_writer;
mod logging;
mod rotate;

#[derive(Parser)]
#[command(name = "rebyte", version, about = "A self-hosted agent platform server")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args, Clone)]
struct Storage {
    /// Where the database, the bootstrap key and environments live.
    #[arg(long, env = "REBYTE_DATA_DIR", default_value = "./rebyte-data")]
    data_dir: PathBuf,
    /// A sqlite://PATH URL; defaults to <data-dir>/rebyte.db.
    #[arg(long, env = "REBYTE_DATABASE_URL")]
    database_url: Option<String>,
}

impl Storage {
    fn config(&self) -> Config {
        let mut c = Config::new(&self.data_dir);
        c.database_url = self.database_url.clone();
        c
    }
}

#[derive(Subcommand)]
enum Command {
    /// Run the server.
    #[command(after_long_help = SERVE_ENVIRONMENT)]
    Serve {
        /// Address to listen on.
        #[arg(long, env = "REBYTE_LISTEN", default_value = "127.0.0.1:8787")]
        listen: String,
        #[command(flatten)]
        storage: Storage,
        /// Largest request body in bytes.
        #[arg(long, env = "REBYTE_BODY_LIMIT", default_value_t = server::DEFAULT_BODY_LIMIT)]
        body_limit: usize,
        /// rebyte.toml: maps model names to providers (OPENAI_* / ANTHROPIC_* variables otherwise).
        #[arg(long, env = "REBYTE_CONFIG")]
        config: Option<PathBuf>,
        /// The master key file that encrypts vault secrets at rest; defaults to
        /// <data-dir>/master.key, created with mode 0600 on first start. The
        /// REBYTE_MASTER_KEY variable (64 hex digits, or base64 of 32 bytes, e.g.
        /// `openssl rand -base64 32`) takes precedence over any file.
        #[arg(long, env = "REBYTE_MASTER_KEY_FILE")]
        master_key_file: Option<PathBuf>,
        /// CPUs each environment's sandbox may use (a cgroup quota, e.g. 1.5); without it a
        /// sandbox has no quota but still competes as one group for its fair share.
        #[arg(long, env = "REBYTE_SANDBOX_CPUS")]
        sandbox_cpus: Option<f64>,
        /// Each environment's disk quota in GiB (a disk image of its own; `container_size`
        /// small halves it, large doubles it); 0 for none. Needs root and a loop device:
        /// without them there is no quota and the server says so once at start.
        #[arg(long, env = "REBYTE_ENVIRONMENT_DISK_GIB", default_value_t = server::DEFAULT_ENVIRONMENT_DISK_GIB)]
        environment_disk_gib: u64,
        /// An IPv4 range that sandboxes with network access `enabled` may reach although it is
        /// private, link-local or otherwise blocked (repeatable or comma-separated, e.g.
        /// 10.1.0.0/16); never the host's own addresses nor other sandboxes.
        #[arg(long = "sandbox-allow-cidr", env = "REBYTE_SANDBOX_ALLOW_CIDR", value_delimiter = ',')]
        sandbox_allow_cidr: Vec<sandbox::local::Ipv4Cidr>,
        /// Where each `enabled` sandbox's /30 (its veth pair to the host) comes from: a range
        /// unused on this host's networks.
        #[arg(long, env = "REBYTE_SANDBOX_ADDRESS_POOL", default_value = "10.200.0.0/16")]
        sandbox_address_pool: sandbox::local::Ipv4Cidr,
        /// Seconds an environment's sandbox may go unused before it is paused (fractions
        /// allowed); its environment is `suspended` until the next use resumes it.
        #[arg(long, env = "REBYTE_IDLE_PAUSE", default_value_t = 600.0)]
        idle_pause: f64,
        /// This node's id in a cluster (several servers on one PostgreSQL database):
        /// unique among the running nodes; default <hostname>-<hash of the data
        /// directory's path>.
        #[arg(long, env = "REBYTE_NODE_ID")]
        node_id: Option<String>,
        /// Where the other nodes of a cluster reach this one; default http://<listen address>.
        #[arg(long, env = "REBYTE_ADVERTISE")]
        advertise: Option<String>,
        /// The secret nodes of a cluster sign their requests to each other with
        /// (the same on every node); default derived from the master key,
        /// which every node shares.
        #[arg(long, env = "REBYTE_CLUSTER_SECRET", hide_env_values = true)]
        cluster_secret: Option<String>,
        /// Requests per second one organization may make, sustained, on each node (0: no limit).
        #[arg(long, env = "REBYTE_ORG_REQUESTS_PER_SECOND", default_value_t = 500.0)]
        org_requests_per_second: f64,
        /// Requests one organization may make at once before that rate applies.
        #[arg(long, env = "REBYTE_ORG_REQUEST_BURST", default_value_t = 1000)]
        org_request_burst: u32,
        /// Turns one organization may have queued or running at once, on all nodes (0: no limit).
        #[arg(long, env = "REBYTE_ORG_ACTIVE_TURNS", default_value_t = 500)]
        org_active_turns: u32,
        /// Sandboxes one organization may have running or paused at once, on each node (0: no limit).
        #[arg(long, env = "REBYTE_ORG_LIVE_SANDBOXES", default_value_t = 500)]
        org_live_sandboxes: u32,
        /// Log lines as text, or as one JSON object a line.
        #[arg(long, env = "REBYTE_LOG_FORMAT", value_enum, default_value_t)]
        log_format: logging::LogFormat,
    },
    /// Manage organization API keys.
    Keys {
        #[command(subcommand)]
        command: KeysCommand,
    },
}

/// The variables `serve` reads besides those shown with its options.
const SERVE_ENVIRONMENT: &str = "\
Environment variables besides those shown with the options above:
  REBYTE_BOOTSTRAP_KEY   the first key (rbk_ and at least 32 letters or digits), installed on start
  REBYTE_MASTER_KEY      the master key itself (64 hex digits or base64 of 32 bytes); wins over any file
  REBYTE_LOG             the log filter (tracing syntax, e.g. info or info,engine=debug); default info
  NO_COLOR               set: no ANSI colours in text logs (never used off a terminal anyway)
  OPENAI_BASE_URL        where model names go without rebyte.toml (an OpenAI-compatible /v1 endpoint)
  OPENAI_API_KEY         the key sent there
  ANTHROPIC_API_KEY      routes claude-* model names to Anthropic when set
  ANTHROPIC_BASE_URL     the Anthropic endpoint (default the public one)
  (and each api_key_env that rebyte.toml names)
  SSL_CERT_FILE          the TLS roots the egress proxy verifies hosts against when it swaps in a
                         limited credential (default the host's store), also put in the sandbox's bundle
  HOME, PATH, PYENV_ROOT, PYENV_VERSION
                         where the host's toolchain (python3, pip3, node, npm, npx) is found for the sandboxes";

#[derive(Subcommand)]
enum KeysCommand {
    /// Create a key (and the organization, if new); prints the key once.
    Create {
        #[arg(long)]
        org: String,
        /// Comma-separated scopes.
        #[arg(long, value_delimiter = ',', default_value = "tasks:read,tasks:write")]
        scopes: Vec<String>,
        #[arg(long)]
        name: Option<String>,
        #[command(flatten)]
        storage: Storage,
    },
    /// List keys (never their secrets).
    List {
        #[arg(long)]
        org: Option<String>,
        #[command(flatten)]
        storage: Storage,
    },
    /// Revoke a key by id.
    Revoke {
        id: String,
        #[command(flatten)]
        storage: Storage,
    },
    /// Make a new master key and seal every secret in the database again
    /// under it, in one transaction; stop every server on the database first.
    /// The key file is replaced (the old one kept as <file>.old); a key given
    /// as REBYTE_MASTER_KEY is replaced by one printed on stdout.
    RotateMaster {
        /// The master key file; defaults to <data-dir>/master.key.
        #[arg(long, env = "REBYTE_MASTER_KEY_FILE")]
        master_key_file: Option<PathBuf>,
        #[command(flatten)]
        storage: Storage,
    },
}

fn main() -> std::process::ExitCode {
    // Inside a sandbox this same executable is PID 1, the sandbox agent; it
    // must start before any runtime threads exist.
    if std::env::args().nth(1).as_deref() == Some("sandbox-agent") {
        sandbox::agent::main();
    }
    let result = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(anyhow::Error::from)
        .and_then(|runtime| runtime.block_on(run()));
    logging::flush();
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", one_line(&e));
            std::process::ExitCode::FAILURE
        }
    }
}

/// The error and its causes on one line, never a backtrace (whatever
/// `RUST_BACKTRACE` says); a cause that its error's message already quotes is
/// not repeated.
fn one_line(e: &anyhow::Error) -> String {
    let mut line = e.to_string();
    for cause in e.chain().skip(1) {
        let cause = cause.to_string();
        if !line.contains(&cause) {
            line.push_str(": ");
            line.push_str(&cause);
        }
    }
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

async fn run() -> Result<()> {
    let cli = Cli::parse();
    logging::init(match &cli.command {
        Command::Serve { log_format, .. } => *log_format,
        _ => logging::LogFormat::Text,
    });
    match cli.command {
        Command::Serve {
            listen,
            storage,
            body_limit,
            config: models_config,
            master_key_file,
            sandbox_cpus,
            environment_disk_gib,
            sandbox_allow_cidr,
            sandbox_address_pool,
            idle_pause,
            node_id,
            advertise,
            cluster_secret,
            org_requests_per_second,
            org_request_burst,
            org_active_turns,
            org_live_sandboxes,
            ..
        } => {
            anyhow::ensure!(
                org_requests_per_second.is_finite() && org_requests_per_second >= 0.0,
                "--org-requests-per-second must be a number of at least 0"
            );
            let mut config = storage.config();
            config.node_id = node_id;
            config.advertise = advertise;
            config.cluster_secret = cluster_secret.map(secrets::Secret::new);
            config.body_limit = body_limit;
            config.limits = server::OrgLimits {
                requests_per_second: (org_requests_per_second > 0.0).then_some(org_requests_per_second),
                request_burst: org_request_burst,
                active_turns: (org_active_turns > 0).then_some(org_active_turns),
                live_sandboxes: (org_live_sandboxes > 0).then_some(org_live_sandboxes),
            };
            if let Some(cpus) = sandbox_cpus {
                anyhow::ensure!(cpus.is_finite() && cpus > 0.0, "--sandbox-cpus must be a positive number");
                config.sandbox_limits.cpu_millicores = Some((cpus * 1000.0).round().max(10.0) as u64);
            }
            config.environment_disk_gib = environment_disk_gib;
            config.sandbox_network =
                sandbox::local::NetworkConfig { pool: sandbox_address_pool, allow: sandbox_allow_cidr };
            config.idle_pause = std::time::Duration::try_from_secs_f64(idle_pause)
                .ok()
                .filter(|d| !d.is_zero())
                .context("--idle-pause must be a positive number of seconds")?;
            config.models_config = models_config.or_else(|| {
                let default = PathBuf::from("rebyte.toml");
                default.exists().then_some(default)
            });
            config.bootstrap_key = std::env::var("REBYTE_BOOTSTRAP_KEY").ok().filter(|k| !k.is_empty());
            // From the environment only: a key on the command line would show in `ps`.
            config.master_key =
                std::env::var("REBYTE_MASTER_KEY").ok().filter(|k| !k.trim().is_empty()).map(secrets::Secret::from);
            config.master_key_file = master_key_file;
            let listener =
                tokio::net::TcpListener::bind(&listen).await.with_context(|| format!("cannot listen on {listen}"))?;
            server::serve(config, listener, shutdown_signal()).await?;
            Ok(())
        }
        Command::Keys { command } => keys_command(command).await,
    }
}

async fn keys_command(command: KeysCommand) -> Result<()> {
    match command {
        KeysCommand::Create { org, scopes, name, storage } => {
            let scopes =
                scopes.iter().map(|s| s.parse::<Scope>()).collect::<Result<Vec<_>, _>>().map_err(anyhow::Error::msg)?;
            let store = server::open_existing_store(&storage.config()).await?;
            let org = keys::ensure_organization(store.as_ref(), &org).await?;
            let created = keys::create_key(store.as_ref(), &org.id, name, scopes, None).await?;
            eprintln!("Created key {} for organization '{}' ({}). It is shown once:", created.key.id, org.name, org.id);
            println!("{}", created.secret);
        }
        KeysCommand::List { org, storage } => {
            let store = server::open_existing_store(&storage.config()).await?;
            let org_id = match org {
                Some(name) => match store.find_organization(&name).await? {
                    Some(o) => Some(o.id),
                    None => bail!("no organization named '{name}'"),
                },
                None => None,
            };
            for k in store.list_api_keys(org_id.as_deref()).await? {
                let scopes: Vec<&str> = k.scopes.iter().map(|s| s.as_str()).collect();
                let state = if k.revoked_at.is_some() { "revoked" } else { "active" };
                println!(
                    "{}\t{}\t{}…\t{}\t{}\t{}",
                    k.id,
                    k.org_id,
                    k.prefix,
                    scopes.join(","),
                    state,
                    k.name.unwrap_or_default()
                );
            }
        }
        KeysCommand::RotateMaster { master_key_file, storage } => {
            let mut config = storage.config();
            config.master_key_file = master_key_file;
            rotate::rotate_master(&config).await?;
        }
        KeysCommand::Revoke { id, storage } => {
            let store = server::open_existing_store(&storage.config()).await?;
            if !store.revoke_api_key(None, &id, server::now()).await? {
                bail!("no key with id '{id}'");
            }
            println!("revoked {id}");
        }
    }
    Ok(())
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
    tracing::info!("shutting down");
}
