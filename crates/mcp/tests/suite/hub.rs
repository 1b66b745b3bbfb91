//! The hub: service-origin HTTP connections reused across a session's turns, replaced when
//! credentials change and terminated with the session; environment-origin stdio servers
//! launched in the sandbox once and shared; required and optional failures told apart.

use super::support::{HttpServer, everything_stdio_config, node, stdio_config};
use mcp::{
    Hub, McpError, Origin, Secret, ServerConfig, ServerSpec, StdioConfig, StdioLauncher, StdioStreams, Step,
    SystemClock, Termination, Timeouts, TransportConfig,
};
use serde_json::json;
use std::future::Future;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Stands in for the sandbox: runs the server on the host and hands over its stdout and stdin.
#[derive(Default)]
struct HostLauncher {
    launches: AtomicUsize,
}

impl StdioLauncher for HostLauncher {
    fn launch<'a>(
        &'a self,
        _sandbox: &'a str,
        config: &'a StdioConfig,
    ) -> Pin<Box<dyn Future<Output = Result<StdioStreams, String>> + Send + 'a>> {
        Box::pin(async move {
            self.launches.fetch_add(1, Ordering::SeqCst);
            let mut child = tokio::process::Command::new(&config.command)
                .args(&config.args)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .kill_on_drop(true)
                .spawn()
                .map_err(|e| e.to_string())?;
            let stdin = child.stdin.take().ok_or("no stdin")?;
            let stdout = child.stdout.take().ok_or("no stdout")?;
            Ok(StdioStreams { stdout: Box::new(stdout), stdin: Box::new(stdin), keep_alive: Box::new(child) })
        })
    }
}

fn hub() -> Hub {
    Hub::new(Arc::new(SystemClock)).with_timeouts(Timeouts::all(Duration::from_secs(20)))
}

fn http_spec(server: &HttpServer, tenant: &str) -> ServerSpec {
    let mut http = server.config();
    http.authorization = Some(Secret::new("Bearer s3cret-token"));
    http.headers.insert("X-Tenant".into(), Secret::new(tenant));
    ServerSpec {
        config: ServerConfig::new("company", TransportConfig::Http(http)),
        origin: Origin::Service,
        required: true,
    }
}

fn env_spec(sandbox: &str, label: &str, stdio: StdioConfig, required: bool) -> ServerSpec {
    ServerSpec { config: stdio_config(label, stdio), origin: Origin::Environment { sandbox: sandbox.into() }, required }
}

#[tokio::test]
async fn a_session_keeps_its_http_connection_across_turns_and_deleting_it_sends_delete() {
    let server = HttpServer::auth_fixture("default").await;
    let hub = hub();
    let first = hub.connect("org", "s1", &[http_spec(&server, "acme")], None).await;
    assert!(first.failures.is_empty(), "{:?}", first.failures);
    let second = hub.connect("org", "s1", &[http_spec(&server, "acme")], None).await;
    assert!(Arc::ptr_eq(&first.toolset.servers()[0].connection, &second.toolset.servers()[0].connection));
    let other_session = hub.connect("org", "s2", &[http_spec(&server, "acme")], None).await;
    assert!(!Arc::ptr_eq(&first.toolset.servers()[0].connection, &other_session.toolset.servers()[0].connection));

    let closed = hub.close_session("s1").await;
    assert_eq!(closed.len(), 1);
    assert_eq!(closed[0].0, "company");
    assert_eq!(closed[0].1, Ok(Termination::Deleted));
    assert_eq!(server.stats().await["deletes"], json!(1));
    assert!(first.toolset.servers()[0].connection.is_closed());
    assert!(!other_session.toolset.servers()[0].connection.is_closed());
}

#[tokio::test]
async fn new_credentials_replace_the_session_connection_and_end_the_old_one() {
    let server = HttpServer::everything().await;
    let hub = hub();
    let mut spec = ServerSpec {
        config: ServerConfig::new("everything", TransportConfig::Http(server.config())),
        origin: Origin::Service,
        required: false,
    };
    let before =
        hub.connect("org", "s", std::slice::from_ref(&spec), None).await.toolset.servers()[0].connection.clone();
    if let TransportConfig::Http(http) = &mut spec.config.transport {
        http.authorization = Some(Secret::new("Bearer refreshed"));
    }
    let after = hub.connect("org", "s", &[spec], None).await.toolset.servers()[0].connection.clone();
    assert!(!Arc::ptr_eq(&before, &after));
    tokio::time::timeout(Duration::from_secs(10), async {
        while !before.is_closed() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the replaced connection is terminated");
}

#[tokio::test]
async fn environment_stdio_servers_launch_once_in_the_sandbox_and_are_shared_by_sessions() {
    let hub = hub();
    let launcher = HostLauncher::default();
    let a =
        hub.connect("org", "s1", &[env_spec("sbx", "tools", node("fixture.mjs", &[]), true)], Some(&launcher)).await;
    let b =
        hub.connect("org", "s2", &[env_spec("sbx", "tools", everything_stdio_config(), true)], Some(&launcher)).await;
    assert_eq!(launcher.launches.load(Ordering::SeqCst), 1);
    assert!(Arc::ptr_eq(&a.toolset.servers()[0].connection, &b.toolset.servers()[0].connection));
    assert_eq!(b.toolset.servers()[0].connection.server_name().as_deref(), Some("fixture"));

    // Deleting a session leaves the broker running; deleting the sandbox ends it.
    assert!(hub.close_session("s1").await.is_empty());
    assert!(!a.toolset.servers()[0].connection.is_closed());
    let removed = hub.remove_sandbox("sbx").await;
    assert_eq!(removed, vec![("tools".to_owned(), Ok(Termination::Closed))]);
}

#[tokio::test]
async fn a_required_server_that_cannot_initialize_is_reported_and_optional_ones_are_left_out() {
    // Long enough for node to start under a loaded test run; the hung server waits it out.
    let hub = Hub::new(Arc::new(SystemClock)).with_timeouts(Timeouts::all(Duration::from_secs(3)));
    let launcher = HostLauncher::default();
    let specs = [
        env_spec("sbx", "good", node("fixture.mjs", &[]), false),
        env_spec("sbx", "optional-broken", node("raw.mjs", &["exit"]), false),
        env_spec("sbx", "required-hung", node("raw.mjs", &["hang"]), true),
    ];
    let connected = hub.connect("org", "s", &specs, Some(&launcher)).await;
    let labels: Vec<&str> = connected.toolset.servers().iter().map(|s| s.config.label.as_str()).collect();
    assert_eq!(labels, ["good"]);
    assert_eq!(connected.failures.len(), 2);
    let required = connected.required_failure().unwrap();
    assert_eq!(required.label, "required-hung");
    assert_eq!(
        required.error,
        McpError::Timeout { server: "required-hung".into(), step: Step::Initialize, after: Duration::from_secs(3) }
    );
    assert!(!connected.failures[0].required);
}

#[tokio::test]
async fn stdio_needs_a_sandbox() {
    let hub = hub();
    let service_stdio =
        ServerSpec { config: stdio_config("local", node("fixture.mjs", &[])), origin: Origin::Service, required: true };
    let no_sandbox = env_spec("sbx", "local2", node("fixture.mjs", &[]), true);
    let connected = hub.connect("org", "s", &[service_stdio, no_sandbox], None).await;
    assert!(matches!(connected.failures[0].error, McpError::Config { .. }), "{:?}", connected.failures);
    assert!(matches!(connected.failures[1].error, McpError::Spawn { .. }), "{:?}", connected.failures);
}
