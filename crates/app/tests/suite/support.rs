//! A real `App` over a temporary data directory.

use app::App;
use std::sync::Arc;

pub struct TestApp {
    pub app: App,
    pub org: String,
    _dir: tempfile::TempDir,
}

/// An app whose models all go to `model_url` (an OpenAI-compatible `/v1`).
pub async fn start(model_url: &str) -> TestApp {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn store::Store> = Arc::new(store::SqliteStore::open(&dir.path().join("rebyte.db")).await.unwrap());
    let toml = format!("[providers.openai]\nbase_url = \"{model_url}\"\n");
    let models = models::Registry::builder().config_toml(toml).build().unwrap();
    let metrics = Arc::new(telemetry::Metrics::default());
    let engine = engine::Engine::new(Arc::clone(&store), models, None, Arc::clone(&metrics)).await.unwrap();
    let backend: Arc<dyn sandbox::Backend> = Arc::new(sandbox::LocalBackend::new(sandbox::LocalConfig::default()));
    let envs = engine::environments::Environments::new(
        Arc::clone(&store),
        backend,
        engine::environments::EnvironmentsConfig {
            root: dir.path().join("environments"),
            setup_timeout: std::time::Duration::from_secs(30),
            idle_pause: std::time::Duration::from_secs(600),
            limits: sandbox::Limits::default(),
            live_per_org: None,
            disk: None,
        },
        metrics,
    );
    let cipher = secrets::Cipher::new(&secrets::MasterKey::generate());
    let credentials = app::credentials::Credentials::new(Arc::clone(&store), cipher).unwrap();
    let mcp = Arc::new(mcp::Hub::new(Arc::new(mcp::SystemClock)));
    let org = app::keys::create_organization(store.as_ref(), "tests").await.unwrap().id;
    TestApp {
        app: App {
            store,
            engine,
            envs,
            credentials,
            mcp,
            limits: app::limits::OrgLimits::none(),
            requests: Default::default(),
            active_turns: Default::default(),
        },
        org,
        _dir: dir,
    }
}
