//! The environment manager: one sandbox per environment, initialized lazily
//! and exactly once however many sessions and file requests ask at the same
//! time (single-flight, in a task of its own so that a cancelled caller does
//! not cancel setup), paused after idling and resumed on use. While setup
//! runs, its progress ([`SetupProgress`]) is on the record and can be watched.
//! A pause (status `suspended` on the record) and the resume after it (status
//! `ready` again) are each a [`Change`] that [`Environments::changes`] tells
//! of ([`crate::environment_events`] announces them to the sessions attached).
//! The first initialization places the environment's skills
//! ([`crate::environment_contents`]) before its files and setup commands, and
//! reads its uploaded files (`file_id`) from its stored contents.

use crate::record::now;
use crate::setup_progress::{SetupProgress, Watch};
use futures::future::{BoxFuture, FutureExt, Shared};
use launch::{Launched, Unlaunched};
use phases::Phases;
use protocol::environment::{
    EnvironmentError, EnvironmentRecord, EnvironmentSetup, EnvironmentStatus, FileParam, NetworkAccess, SetupState,
};
use protocol::ids::EnvironmentId;
use sandbox::{Backend, NetworkPolicy, Sandbox, SandboxSpec, SetupFile, SetupSpec};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use store::Store;
use telemetry::{Gauge, Metrics};
use tokio::sync::broadcast;

mod disk;
mod fork;
mod launch;
mod phases;
mod snapshot;

pub use disk::disk_bytes;
pub use fork::FORK_BUSY;
pub use snapshot::{PrepareFailure, snapshot_key};

/// How many changes a listener may fall behind before it misses some.
const CHANGES_BUFFERED: usize = 256;

/// How environments are run.
#[derive(Debug, Clone)]
pub struct EnvironmentsConfig {
    /// Each environment's files live in `<root>/<id>/workspace`.
    pub root: PathBuf,
    /// The limit of each setup command.
    pub setup_timeout: Duration,
    /// A sandbox unused this long is paused.
    pub idle_pause: Duration,
    /// Each sandbox's resource limits.
    pub limits: sandbox::Limits,
    /// Sandboxes one organization may have on this server at once (running
    /// or paused); `None` for no limit.
    pub live_per_org: Option<usize>,
    /// Each environment's disk image (its quota, [`disk_bytes`]); `None`: no quota.
    pub disk: Option<Arc<sandbox::disk::Images>>,
}

/// The limits of a `container_size` (`small`: 1 CPU and 2 GiB, `medium`: 2 CPUs and 4 GiB,
/// `large`: 4 CPUs and 8 GiB) over `base` (the server's); `None` for an unknown size. No size
/// keeps `base`.
pub fn size_limits(base: sandbox::Limits, size: Option<&str>) -> Option<sandbox::Limits> {
    let (cpus, gib) = match size {
        None => return Some(base),
        Some("small") => (1, 2),
        Some("medium") => (2, 4),
        Some("large") => (4, 8),
        Some(_) => return None,
    };
    Some(sandbox::Limits { cpu_millicores: Some(cpus * 1000), memory_bytes: Some(gib << 30), ..base })
}

/// The [`EnvFailure`] code of a sandbox refused for the organization's limit
/// ([`EnvironmentsConfig::live_per_org`]): it clears by itself.
pub const TOO_MANY_SANDBOXES: &str = "too_many_sandboxes";

/// Why an environment cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvFailure {
    pub code: String,
    pub message: String,
}

impl EnvFailure {
    fn new(code: &str, message: impl Into<String>) -> Self {
        Self { code: code.into(), message: message.into() }
    }
}

type Init = Shared<BoxFuture<'static, Result<Arc<dyn Sandbox>, EnvFailure>>>;

/// What happened to an environment's running sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// Paused after idling (status `suspended`).
    Suspended,
    /// Thawed by its next use after a pause (status `ready`).
    Resumed,
}

/// A pause or resume of one environment's sandbox, told once its status is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub org_id: String,
    pub env_id: EnvironmentId,
    pub kind: ChangeKind,
}

/// One environment's live state on this server.
struct Live {
    org_id: String,
    init: Option<Init>,
    /// The progress of the initialization running, if one is.
    setup: Option<Arc<SetupProgress>>,
    last_used: Option<Instant>,
    paused: bool,
    /// Held while the sandbox is being paused or resumed: one at a time, each
    /// with its status written and its change told before the next begins.
    transition: Arc<tokio::sync::Mutex<()>>,
}

/// Runs environments' sandboxes.
pub struct Environments {
    store: Arc<dyn Store>,
    backend: Arc<dyn Backend>,
    config: EnvironmentsConfig,
    live: Mutex<HashMap<EnvironmentId, Live>>,
    // Serializes read-modify-write of environment records on this server.
    records: tokio::sync::Mutex<()>,
    metrics: Arc<Metrics>,
    changes: broadcast::Sender<Change>,
    /// The workspaces' shared layers (forks, snapshots) under `config.root`.
    layers: sandbox::layers::LayerStore,
}

impl Environments {
    /// The manager; its sandboxes by state are gauges of `metrics`, which also times their start and setup.
    pub fn new(
        store: Arc<dyn Store>,
        backend: Arc<dyn Backend>,
        config: EnvironmentsConfig,
        metrics: Arc<Metrics>,
    ) -> Arc<Self> {
        let records = tokio::sync::Mutex::new(());
        let (changes, _) = broadcast::channel(CHANGES_BUFFERED);
        let layers = sandbox::layers::LayerStore::new(&config.root);
        let this = Arc::new(Self { store, backend, config, live: Mutex::default(), records, metrics, changes, layers });
        for (gauge, paused) in [(Gauge::SandboxesRunning, false), (Gauge::SandboxesPaused, true)] {
            let weak = Arc::downgrade(&this);
            this.metrics.read(gauge, Box::new(move || weak.upgrade().map_or(0, |envs| envs.count(paused))));
        }
        this
    }

    /// Sandboxes running on this server, paused or not.
    fn count(&self, paused: bool) -> u64 {
        let live = self.live();
        let started = live.values().filter(|l| l.init.as_ref().and_then(|i| i.peek()).is_some_and(|s| s.is_ok()));
        started.filter(|l| l.paused == paused).count() as u64
    }

    fn live(&self) -> std::sync::MutexGuard<'_, HashMap<EnvironmentId, Live>> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The pauses and resumes of sandboxes on this server from now on, in the
    /// order they happened, each after its status is stored.
    pub fn changes(&self) -> broadcast::Receiver<Change> {
        self.changes.subscribe()
    }

    fn tell(&self, org_id: &str, env_id: &EnvironmentId, kind: ChangeKind) {
        // No listener (an embedder that announces nothing) is fine.
        let _ = self.changes.send(Change { org_id: org_id.to_string(), env_id: env_id.clone(), kind });
    }

    /// The host directory of an environment's files.
    pub fn workspace(&self, env_id: &EnvironmentId) -> PathBuf {
        self.config.root.join(env_id.as_str()).join("workspace")
    }

    /// Applies `change` to a stored environment record.
    pub async fn update(
        &self,
        org_id: &str,
        env_id: &EnvironmentId,
        change: impl FnOnce(&mut EnvironmentRecord),
    ) -> store::Result<Option<EnvironmentRecord>> {
        let _guard = self.records.lock().await;
        let Some(mut record) = self.store.get_environment(org_id, env_id).await? else { return Ok(None) };
        change(&mut record);
        self.store.put_environment(org_id, &record).await?;
        Ok(Some(record))
    }

    /// The environment's sandbox, initializing it on first use. Concurrent
    /// callers share one initialization; dropping the returned future does
    /// not stop it.
    pub async fn sandbox(
        self: &Arc<Self>,
        org_id: &str,
        env_id: &EnvironmentId,
    ) -> Result<Arc<dyn Sandbox>, EnvFailure> {
        let sandbox = self.begin(org_id, env_id)?.await?;
        let paused = {
            let mut live = self.live();
            live.get_mut(env_id).and_then(|l| {
                l.last_used = Some(Instant::now());
                l.paused.then(|| Arc::clone(&l.transition))
            })
        };
        if let Some(transition) = paused {
            // In a task of its own: a caller dropped meanwhile does not leave it half resumed.
            let this = Arc::clone(self);
            let (org, env, thawed) = (org_id.to_string(), env_id.clone(), Arc::clone(&sandbox));
            let task = tokio::spawn(async move { this.resume(&org, &env, thawed.as_ref(), &transition).await });
            if let Err(e) = task.await {
                tracing::warn!(environment = %env_id, error = %e, "resuming a paused sandbox failed");
            }
        }
        Ok(sandbox)
    }

    /// The environment's initialization, started unless one exists:
    /// registered before this returns, so [`Self::watch_setup`] finds its
    /// progress right after (a turn announcing that it waits sees the output).
    fn begin(self: &Arc<Self>, org_id: &str, env_id: &EnvironmentId) -> Result<Init, EnvFailure> {
        let mut live = self.live();
        let starting = live.get(env_id).and_then(|l| l.init.as_ref()).is_none();
        if starting && let Some(limit) = self.config.live_per_org {
            let alive = |l: &Live| l.init.as_ref().is_some_and(|i| !matches!(i.peek(), Some(Err(_))));
            let others = live.iter().filter(|(id, l)| *id != env_id && l.org_id == org_id && alive(l)).count();
            if others >= limit {
                return Err(EnvFailure::new(
                    TOO_MANY_SANDBOXES,
                    format!(
                        "this organization has {others} sandboxes on this server, its limit; delete or restart \
                         an environment, or wait for idle ones to be paused and retry"
                    ),
                ));
            }
        }
        let entry = live.entry(env_id.clone()).or_insert_with(|| Live {
            org_id: org_id.to_string(),
            init: None,
            setup: None,
            last_used: None,
            paused: false,
            transition: Arc::default(),
        });
        entry.last_used = Some(Instant::now());
        Ok(match &entry.init {
            Some(init) => init.clone(),
            None => {
                let this = Arc::clone(self);
                let (org, env) = (org_id.to_string(), env_id.clone());
                // Made here, not in the task, so a turn watching right after this call finds it.
                let progress = Arc::new(SetupProgress::default());
                entry.setup = Some(Arc::clone(&progress));
                let task = tokio::spawn(async move {
                    let out = this.initialize(&org, &env, &progress).await;
                    if let Some(live) = this.live().get_mut(&env) {
                        live.setup = None;
                    }
                    out
                });
                let init: Init = async move {
                    task.await.unwrap_or_else(|e| {
                        Err(EnvFailure::new("sandbox_error", format!("initialization panicked: {e}")))
                    })
                }
                .boxed()
                .shared();
                entry.init = Some(init.clone());
                init
            }
        })
    }

    /// Thaws a paused sandbox (unless another use did meanwhile), stores its
    /// status `ready` and tells of it.
    async fn resume(
        &self,
        org_id: &str,
        env_id: &EnvironmentId,
        sandbox: &dyn Sandbox,
        transition: &tokio::sync::Mutex<()>,
    ) {
        let _one_at_a_time = transition.lock().await;
        let resumed = self.live().get_mut(env_id).is_some_and(|l| std::mem::replace(&mut l.paused, false));
        if !resumed {
            return;
        }
        if let Err(e) = sandbox.resume().await {
            tracing::warn!(environment = %env_id, error = %e, "resuming a paused sandbox failed");
        }
        if let Err(e) = self.update(org_id, env_id, |r| r.status = EnvironmentStatus::Ready).await {
            tracing::warn!(environment = %env_id, error = %e, "a resumed environment's status could not be stored");
        }
        tracing::info!(environment = %env_id, "environment resumed");
        self.tell(org_id, env_id, ChangeKind::Resumed);
    }

    /// Starts initialization without waiting for it.
    pub fn warm(self: &Arc<Self>, org_id: &str, env_id: &EnvironmentId) {
        // Registered now, so a turn's tool asking right after watches this setup.
        if self.begin(org_id, env_id).is_err() {
            return;
        }
        let this = Arc::clone(self);
        let (org, env) = (org_id.to_string(), env_id.clone());
        tokio::spawn(async move {
            let _ = this.sandbox(&org, &env).await;
        });
    }

    /// The progress of the environment's initialization, while one runs here.
    pub fn watch_setup(&self, env_id: &EnvironmentId) -> Option<Watch> {
        Some(self.live().get(env_id)?.setup.as_ref()?.watch())
    }

    /// Where the stored environment's setup ended and its log (the last
    /// initialization's, once it has ended); `None` when there is none.
    pub async fn stored_setup(
        &self,
        org_id: &str,
        env_id: &EnvironmentId,
    ) -> Option<(Option<EnvironmentSetup>, String)> {
        let record = self.store.get_environment(org_id, env_id).await.ok()??;
        Some((record.setup, record.setup_log?))
    }

    /// The sandbox if it is already running on this server (never initializes).
    pub fn running(&self, env_id: &EnvironmentId) -> Option<Arc<dyn Sandbox>> {
        let live = self.live();
        live.get(env_id)?.init.as_ref()?.peek()?.as_ref().ok().cloned()
    }

    /// Initializes the sandbox, timed and logged.
    async fn initialize(
        &self,
        org_id: &str,
        env_id: &EnvironmentId,
        progress: &SetupProgress,
    ) -> Result<Arc<dyn Sandbox>, EnvFailure> {
        let began = Instant::now();
        tracing::info!(environment = %env_id, "environment initializing");
        let sandbox = self.start(org_id, env_id, progress).await?;
        self.metrics.sandbox_started(began.elapsed());
        tracing::info!(environment = %env_id, duration_ms = telemetry::millis(began.elapsed()), "environment ready");
        Ok(sandbox)
    }

    async fn start(
        &self,
        org_id: &str,
        env_id: &EnvironmentId,
        progress: &SetupProgress,
    ) -> Result<Arc<dyn Sandbox>, EnvFailure> {
        let store_err = |e: store::Error| EnvFailure::new("internal_error", e.to_string());
        let mut phases = Phases::start();
        let record = self.store.get_environment(org_id, env_id).await.map_err(store_err)?;
        let record = record
            .ok_or_else(|| EnvFailure::new("resource_not_found", format!("environment {env_id} no longer exists")))?;
        if record.status == EnvironmentStatus::Failed {
            let e = record.error.unwrap_or_else(|| EnvironmentError {
                code: "sandbox_error".into(),
                message: "initialization failed".into(),
                step: None,
                output: None,
            });
            return Err(EnvFailure::new(
                "sandbox_error",
                format!("environment {env_id} failed to initialize: {}", e.message),
            ));
        }
        // Setup runs once in an environment's life: a restart recreates the
        // sandbox over the same files without repeating it.
        let first = matches!(record.status, EnvironmentStatus::Pending | EnvironmentStatus::Initializing);
        let setup_spec = self.setup_spec(&record);
        // The row is marked `initializing` while the disk and the sandbox
        // are made (its write is off the first use's path); a failure is
        // recorded after that write, so `failed` is the row's last word.
        let marking = async {
            if !first {
                return Ok(());
            }
            let setup = EnvironmentSetup::started(now(), u32::try_from(setup_spec.step_count()).unwrap_or(u32::MAX));
            progress.begin(setup.clone());
            self.update(org_id, env_id, |r| {
                r.status = EnvironmentStatus::Initializing;
                r.setup = Some(setup);
                r.setup_log = None;
            })
            .await
            .map(|_| ())
        };
        let (marked, launched) = tokio::join!(marking, self.launch(org_id, &record, first, &mut phases));
        if let Err(e) = marked {
            if let Ok(launched) = launched {
                let _ = launched.sandbox.destroy().await;
            }
            return Err(store_err(e));
        }
        let Launched { sandbox, snapshot } = match launched {
            Ok(launched) => launched,
            Err(Unlaunched::Failed(e)) => return Err(e),
            Err(Unlaunched::At(step, message)) => {
                return Err(self.fail(org_id, env_id, &step, message, None, progress).await);
            }
        };
        if first {
            let mut setup_spec = setup_spec;
            if let Err((step, message)) =
                crate::environment_contents::uploaded_files(self.store.as_ref(), org_id, &record, &mut setup_spec).await
            {
                let _ = sandbox.destroy().await;
                return Err(self.fail(org_id, env_id, &step, message, None, progress).await);
            }
            if snapshot.is_some() {
                snapshot::applied_already(&record, &mut setup_spec);
            }
            phases.mark("files");
            let mut observe = |e: sandbox::SetupEvent<'_>| progress.observe(e);
            let setup = sandbox::apply_setup_observed(sandbox.as_ref(), &setup_spec, &mut observe);
            let began = Instant::now();
            let applied = progress.record_while(self, org_id, env_id, setup).await;
            self.metrics.setup_ran(began.elapsed());
            phases.mark("setup");
            match applied {
                Ok(log) => {
                    let ended = progress.finish(SetupState::Completed, now());
                    self.update(org_id, env_id, |r| {
                        r.status = EnvironmentStatus::Ready;
                        r.setup_log = Some(match &snapshot {
                            Some(note) => format!("{note}{}", log.log),
                            None => log.log,
                        });
                        if let Some((setup, _)) = ended {
                            r.setup = Some(setup);
                        }
                    })
                    .await
                    .map_err(store_err)?;
                }
                Err(e) => {
                    let _ = sandbox.destroy().await;
                    let (step, output, message) = match &e {
                        // The step is recorded on its own: the message is the reason alone.
                        sandbox::Error::Setup(f) => (f.step.clone(), Some(f.output.clone()), f.reason.clone()),
                        other => ("setup".to_string(), None, other.to_string()),
                    };
                    return Err(self.fail(org_id, env_id, &step, message, output, progress).await);
                }
            }
        } else {
            self.update(org_id, env_id, |r| r.status = EnvironmentStatus::Ready).await.map_err(store_err)?;
        }
        phases.mark("ready");
        tracing::debug!(environment = %env_id, phases = %phases, "environment initialization phases");
        Ok(sandbox)
    }

    /// The sandbox of `record`'s configuration over `dir` (`workspace/`,
    /// `home/`, and `system/` with system packages), its skills and layers aside.
    fn sandbox_spec(
        &self,
        sandbox_id: &str,
        record: &EnvironmentRecord,
        dir: &std::path::Path,
    ) -> Result<SandboxSpec, String> {
        let mut spec = SandboxSpec::new(sandbox_id, dir.join("workspace"));
        spec.home = Some(dir.join("home"));
        let network = record.config.network.as_ref();
        spec.network = match network.map(|n| n.access) {
            Some(NetworkAccess::Enabled) => NetworkPolicy::Enabled,
            Some(NetworkAccess::Restricted) => NetworkPolicy::Restricted,
            _ => NetworkPolicy::Disabled,
        };
        if let Some(n) = network {
            let (allowed, blocked) =
                (n.allowed_domains.clone().unwrap_or_default(), n.blocked_domains.clone().unwrap_or_default());
            spec.domains = sandbox::egress::DomainPolicy::new(&allowed, &blocked)
                .map_err(|e| format!("environment {} has an invalid network policy: {e}", record.id))?;
        }
        spec.env = record.config.env.clone().unwrap_or_default();
        // Validated at creation: an unknown size keeps the server's limits.
        spec.limits =
            size_limits(self.config.limits, record.config.container_size.as_deref()).unwrap_or(self.config.limits);
        // System packages need a system of the environment's own; the others
        // keep the cheaper read-only one.
        if !record.packages().system.is_empty() {
            spec.writable_system = Some(dir.join("system"));
        }
        Ok(spec)
    }

    pub(crate) fn setup_spec(&self, record: &EnvironmentRecord) -> SetupSpec {
        let c = &record.config;
        // One per entry: an uploaded file's data is read when setup runs
        // (`environment_contents::uploaded_files`).
        let files = c.files.iter().flatten().map(|f| match f {
            FileParam::Inline { path, data } => SetupFile { path: path.clone(), data: data.clone() },
            FileParam::FileId { path, .. } => SetupFile { path: path.clone(), data: String::new() },
        });
        let commands = c.setup_commands.iter().flatten().map(|s| match &s.cwd {
            Some(cwd) => format!("cd '{}' && {}", cwd.replace('\'', r"'\''"), s.command),
            None => s.command.clone(),
        });
        let p = record.packages();
        SetupSpec {
            files: files.collect(),
            env: c.env.clone().unwrap_or_default(),
            setup_commands: commands.collect(),
            packages: sandbox::Packages { python: p.python, npm: p.npm, system: p.system },
            command_timeout: self.config.setup_timeout,
            network: c.network.as_ref().is_some_and(|n| n.access != NetworkAccess::Disabled),
        }
    }

    /// Records a final initialization failure (with where setup was and its
    /// log so far, if it had started) and returns it.
    async fn fail(
        &self,
        org_id: &str,
        env_id: &EnvironmentId,
        step: &str,
        message: String,
        output: Option<String>,
        progress: &SetupProgress,
    ) -> EnvFailure {
        let ended = progress.finish(SetupState::Failed, now());
        self.metrics.setup_failed();
        tracing::warn!(environment = %env_id, %step, error = %message, "environment failed to initialize");
        let error =
            EnvironmentError { code: "setup_failed".into(), message: message.clone(), step: Some(step.into()), output };
        let _ = self
            .update(org_id, env_id, |r| {
                r.status = EnvironmentStatus::Failed;
                r.error = Some(error);
                if let Some((setup, log)) = ended {
                    r.setup = Some(setup);
                    r.setup_log = Some(log);
                }
            })
            .await;
        EnvFailure::new("sandbox_error", format!("environment {env_id} failed to initialize at `{step}`: {message}"))
    }

    /// Stops everything in an environment and forgets it; its files stay
    /// unless `remove_files`.
    pub async fn destroy(&self, env_id: &EnvironmentId, remove_files: bool) {
        let init = self.live().remove(env_id).and_then(|l| l.init);
        if let Some(init) = init
            && let Some(Ok(sandbox)) = init.peek().cloned()
        {
            let _ = sandbox.destroy().await;
        }
        if remove_files {
            // Its layers (and image) go with it unless another environment uses them.
            self.remove_files(env_id).await;
        }
    }

    /// Stops every process of the environment's sandbox on this server: the
    /// sandbox is destroyed and a new one started over the same files, without
    /// setup (which runs once in an environment's life). Established stdio MCP
    /// servers die with it and their brokers fail explicitly from then on.
    /// An environment not running here has nothing to stop; one whose
    /// initialization is under way is refused (`environment_initializing`).
    pub async fn restart(self: &Arc<Self>, org_id: &str, env_id: &EnvironmentId) -> Result<bool, EnvFailure> {
        let init = {
            let mut live = self.live();
            let initializing = live.get(env_id).and_then(|l| l.init.as_ref()).is_some_and(|i| i.peek().is_none());
            if initializing {
                return Err(EnvFailure::new(
                    "environment_initializing",
                    format!("environment {env_id} is initializing; restart it once it is ready"),
                ));
            }
            live.remove(env_id).and_then(|l| l.init)
        };
        let Some(Ok(sandbox)) = init.and_then(|i| i.peek().cloned()) else { return Ok(false) };
        if let Err(e) = sandbox.destroy().await {
            tracing::warn!(environment = %env_id, error = %e, "stopping a sandbox to restart it failed");
        }
        tracing::info!(environment = %env_id, "environment restarted");
        self.sandbox(org_id, env_id).await?;
        Ok(true)
    }

    /// Pauses sandboxes idle for longer than the configured time. Runs until
    /// the manager is dropped.
    pub fn start_reaper(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        let period = (self.config.idle_pause / 4).clamp(Duration::from_millis(50), Duration::from_secs(30));
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(period).await;
                let Some(this) = weak.upgrade() else { return };
                this.pause_idle().await;
            }
        });
    }

    /// Whether a sandbox is running and has not been used for the configured time.
    fn idle(&self, live: &Live) -> bool {
        !live.paused && live.last_used.is_some_and(|t| t.elapsed() >= self.config.idle_pause)
    }

    /// Pauses the idle sandboxes, stores their status `suspended` and tells of each.
    async fn pause_idle(&self) {
        type Idle = (EnvironmentId, String, Arc<dyn Sandbox>, Arc<tokio::sync::Mutex<()>>);
        let idle: Vec<Idle> = {
            let live = self.live();
            live.iter()
                .filter(|(_, l)| self.idle(l))
                .filter_map(|(id, l)| {
                    let sandbox = l.init.as_ref()?.peek()?.as_ref().ok()?.clone();
                    Some((id.clone(), l.org_id.clone(), sandbox, Arc::clone(&l.transition)))
                })
                .collect()
        };
        for (id, org, sandbox, transition) in idle {
            let _one_at_a_time = transition.lock().await;
            // Still idle: a use since it was chosen keeps it running.
            let idle = self.live().get_mut(&id).is_some_and(|l| {
                let idle = self.idle(l);
                l.paused |= idle;
                idle
            });
            if !idle {
                continue;
            }
            if let Err(e) = sandbox.pause().await {
                // Running as before: tried again after another idle period.
                tracing::warn!(environment = %id, error = %e, "pausing an idle sandbox failed");
                if let Some(l) = self.live().get_mut(&id) {
                    (l.paused, l.last_used) = (false, Some(Instant::now()));
                }
                continue;
            }
            if let Err(e) = self.update(&org, &id, |r| r.status = EnvironmentStatus::Suspended).await {
                tracing::warn!(environment = %id, error = %e, "a suspended environment's status could not be stored");
            }
            tracing::info!(environment = %id, "idle environment suspended");
            self.tell(&org, &id, ChangeKind::Suspended);
        }
    }
}
