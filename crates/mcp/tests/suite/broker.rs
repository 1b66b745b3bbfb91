//! Brokers keyed by (sandbox, server_label): the first launch wins, later users share it without
//! comparing configurations, a dead broker fails explicitly and is never relaunched, and many
//! concurrent callers on one broker each get their own answer.

use super::support::{self, everything_stdio_config, node, stdio_config, timeouts};
use mcp::{
    BrokerRegistry, CallToolArgs, CatalogCache, Connection, McpCallStatus, McpError, StdioConfig, SystemClock, Toolset,
};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

async fn launch(config: &StdioConfig, label: &str) -> mcp::Result<Connection> {
    Connection::spawn_stdio(label, config, timeouts()).await
}

#[tokio::test]
async fn the_first_configuration_wins_and_later_sessions_reuse_its_broker() {
    let registry = BrokerRegistry::new();
    let launches = AtomicUsize::new(0);
    let first = node("fixture.mjs", &[]);
    let later = everything_stdio_config();
    let a = registry
        .get_or_start("sbx_1", "tools", || {
            launches.fetch_add(1, Ordering::SeqCst);
            launch(&first, "tools")
        })
        .await
        .unwrap();
    let b = registry
        .get_or_start("sbx_1", "tools", || {
            launches.fetch_add(1, Ordering::SeqCst);
            launch(&later, "tools")
        })
        .await
        .unwrap();
    assert_eq!(launches.load(Ordering::SeqCst), 1);
    assert!(Arc::ptr_eq(&a, &b));
    assert_eq!(b.connection().server_name().as_deref(), Some("fixture"), "the later configuration was ignored");

    // Another sandbox, or another label, is another broker.
    let other = registry.get_or_start("sbx_2", "tools", || launch(&later, "tools")).await.unwrap();
    assert_eq!(other.connection().server_name().as_deref(), Some("mcp-servers/everything"));
    assert_eq!(registry.len(), 2);
}

#[tokio::test]
async fn simultaneous_first_launches_start_one_broker() {
    let registry = BrokerRegistry::new();
    let launches = AtomicUsize::new(0);
    let config = node("fixture.mjs", &[]);
    let attempts = (0..10).map(|_| {
        registry.get_or_start("sbx", "tools", || {
            launches.fetch_add(1, Ordering::SeqCst);
            launch(&config, "tools")
        })
    });
    let brokers = futures::future::join_all(attempts).await;
    assert_eq!(launches.load(Ordering::SeqCst), 1);
    let first = brokers[0].as_ref().unwrap();
    assert!(brokers.iter().all(|b| Arc::ptr_eq(b.as_ref().unwrap(), first)));
}

#[tokio::test]
async fn a_dead_broker_fails_explicitly_and_is_not_restarted_with_a_later_configuration() {
    let registry = BrokerRegistry::new();
    let config = node("fixture.mjs", &[]);
    let broker = registry.get_or_start("sbx", "tools", || launch(&config, "tools")).await.unwrap();
    let crash = broker.connection().call_tool("crash", Default::default(), &Default::default()).await.unwrap_err();
    assert!(crash.is_connection_lost());
    tokio::time::timeout(Duration::from_secs(5), async {
        while broker.is_alive() {
            tokio::task::yield_now().await;
        }
    })
    .await
    .unwrap();

    let relaunched = AtomicUsize::new(0);
    let later = everything_stdio_config();
    let error = registry
        .get_or_start("sbx", "tools", || {
            relaunched.fetch_add(1, Ordering::SeqCst);
            launch(&later, "tools")
        })
        .await
        .unwrap_err();
    assert_eq!(relaunched.load(Ordering::SeqCst), 0);
    assert!(
        matches!(&error, McpError::BrokerDead { server, sandbox, .. } if server == "tools" && sandbox == "sbx"),
        "{error:?}"
    );
    assert!(error.to_string().contains("is not restarted"), "{error}");
    assert!(matches!(registry.get("sbx", "tools"), Some(Err(McpError::BrokerDead { .. }))));
}

#[tokio::test]
async fn a_failed_launch_is_final_for_that_label() {
    let registry = BrokerRegistry::new();
    let broken = StdioConfig { command: "/nonexistent/server".into(), ..StdioConfig::default() };
    let first = registry.get_or_start("sbx", "tools", || launch(&broken, "tools")).await.unwrap_err();
    assert!(matches!(first, McpError::Spawn { .. }), "the launching caller hears why: {first:?}");
    let fixed = node("fixture.mjs", &[]);
    let later = registry.get_or_start("sbx", "tools", || launch(&fixed, "tools")).await.unwrap_err();
    assert!(matches!(&later, McpError::BrokerDead { reason, .. } if reason.contains("launch failed")), "{later:?}");
}

#[tokio::test]
async fn removing_a_sandbox_forgets_its_brokers() {
    let registry = BrokerRegistry::new();
    let config = node("fixture.mjs", &[]);
    registry.get_or_start("sbx", "a", || launch(&config, "a")).await.unwrap();
    registry.get_or_start("other", "a", || launch(&config, "a")).await.unwrap();
    let removed = registry.remove_sandbox("sbx");
    assert_eq!(removed.len(), 1);
    for broker in removed {
        broker.connection().terminate().await.unwrap();
    }
    assert!(registry.get("sbx", "a").is_none());
    assert!(registry.get("other", "a").is_some());
}

#[tokio::test]
async fn one_hundred_sessions_calling_one_broker_concurrently_each_get_their_own_answer() {
    support::ensure_npm();
    let registry = BrokerRegistry::new();
    let config = everything_stdio_config();
    let cache = Arc::new(CatalogCache::new(Arc::new(SystemClock)));
    let calls = (0..100).map(|session| {
        let registry = &registry;
        let config = &config;
        let cache = cache.clone();
        async move {
            let broker = registry.get_or_start("sbx", "everything", || launch(config, "everything")).await.unwrap();
            let toolset = Toolset::new("org", format!("session_{session}"), cache)
                .with_server(stdio_config("everything", config.clone()), broker.connection().clone());
            let message = format!("session {session} says hello");
            let args = CallToolArgs::new("everything", "echo", json!({"message": message}));
            let record = toolset.call_tool(&args, &CancellationToken::new()).await;
            (message, record)
        }
    });
    let answers = futures::future::join_all(calls).await;
    for (message, record) in answers {
        assert_eq!(record.status, McpCallStatus::Completed, "{record:?}");
        assert_eq!(record.output, Some(format!("Echo: {message}")));
    }
    assert_eq!(registry.len(), 1);
}
