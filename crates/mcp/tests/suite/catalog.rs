//! The catalog cache: all pages of `tools/list`, 30 s exactly (an injected clock), a hit never
//! extends expiry, `tools/list_changed` invalidates, scoped to organization, session,
//! configuration and credentials, and holding no credentials.

use super::support::{fixture, fixture_stats, node, stdio_config};
use mcp::{CallContext, CatalogCache, Connection, ManualClock, SearchArgs, Secret, ServerConfig, Toolset};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

fn manual() -> (Arc<ManualClock>, Arc<CatalogCache>) {
    let clock = Arc::new(ManualClock::new());
    (clock.clone(), Arc::new(CatalogCache::new(clock)))
}

fn config() -> ServerConfig {
    stdio_config("fixture", node("fixture.mjs", &[]))
}

async fn lists(connection: &Connection) -> u64 {
    fixture_stats(connection).await["toolsList"].as_u64().unwrap()
}

async fn search(toolset: &Toolset, query: &str) -> Vec<String> {
    let found = toolset.search_tools(&SearchArgs::query(query), &CancellationToken::new()).await.unwrap();
    found.results.into_iter().map(|hit| hit.name).collect()
}

#[tokio::test]
async fn a_catalog_is_served_from_cache_for_30_seconds_and_a_hit_never_extends_its_expiry() {
    let connection = fixture("fixture").await;
    let (clock, cache) = manual();
    let toolset = Toolset::new("org", "session", cache.clone()).with_server(config(), connection.clone());
    let key = toolset.cache_key(&config());

    assert_eq!(search(&toolset, "echo").await[0], "echo");
    assert_eq!(lists(&connection).await, 1);
    let expires_at = cache.expires_at(&key).unwrap();

    clock.advance(Duration::from_millis(29_999));
    search(&toolset, "echo").await;
    assert_eq!(lists(&connection).await, 1, "a search within 30 s is a cache hit");
    assert_eq!(cache.expires_at(&key), Some(expires_at), "the hit did not extend the expiry");

    clock.advance(Duration::from_millis(1));
    search(&toolset, "echo").await;
    assert_eq!(lists(&connection).await, 2, "at 30 s the entry has expired");
    assert_eq!(cache.expires_at(&key), Some(expires_at + Duration::from_secs(30)));
    assert_eq!(cache.stats().hits, 1);
}

#[tokio::test]
async fn tools_list_changed_invalidates_the_cached_catalog() {
    let connection = fixture("fixture").await;
    let (_clock, cache) = manual();
    let toolset = Toolset::new("org", "session", cache).with_server(config(), connection.clone());
    assert!(!search(&toolset, "dynamically").await.contains(&"dynamic_tool".to_owned()));

    let generation = connection.tools_generation();
    let args = json!({"name": "dynamic_tool"}).as_object().unwrap().clone();
    connection.call_tool("add_tool", args, &CallContext::default()).await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), async {
        while connection.tools_generation() == generation {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the fixture sends tools/list_changed");

    // The clock has not moved: only the notification makes the next search re-fetch.
    assert_eq!(search(&toolset, "dynamically").await, ["dynamic_tool"]);
    assert_eq!(lists(&connection).await, 2);
}

#[tokio::test]
async fn entries_are_scoped_to_organization_session_configuration_and_credentials() {
    let connection = fixture("fixture").await;
    let (_clock, cache) = manual();
    let base = config();
    let mut other_credentials = base.clone();
    if let mcp::TransportConfig::Stdio(stdio) = &mut other_credentials.transport {
        stdio.env.insert("API_TOKEN".into(), Secret::new("second"));
    }
    let mut other_config = base.clone();
    other_config.allowed_tools = Some(vec!["echo".into()]);

    let scopes = [
        ("org", "s1", base.clone()),
        ("org", "s2", base.clone()),
        ("org2", "s1", base.clone()),
        ("org", "s1", other_credentials),
        ("org", "s1", other_config),
    ];
    for (at, (org, session, config)) in scopes.into_iter().enumerate() {
        let toolset = Toolset::new(org, session, cache.clone()).with_server(config, connection.clone());
        search(&toolset, "echo").await;
        assert_eq!(lists(&connection).await, at as u64 + 1, "scope {at} got its own entry");
    }
    assert_eq!(cache.len(), 5);
    // The first scope again: a hit.
    let toolset = Toolset::new("org", "s1", cache.clone()).with_server(base, connection.clone());
    search(&toolset, "echo").await;
    assert_eq!(lists(&connection).await, 5);
}

#[tokio::test]
async fn the_cache_keeps_no_credentials() {
    let connection = fixture("fixture").await;
    let (_clock, cache) = manual();
    let mut config = config();
    if let mcp::TransportConfig::Stdio(stdio) = &mut config.transport {
        stdio.env.insert("API_TOKEN".into(), Secret::new("very-secret-token"));
    }
    let toolset = Toolset::new("org", "s", cache.clone()).with_server(config.clone(), connection);
    search(&toolset, "echo").await;
    let dump = format!("{cache:?} {:?}", toolset.cache_key(&config));
    assert!(!dump.contains("very-secret-token"), "{dump}");
}

#[tokio::test]
async fn every_page_of_tools_list_is_fetched_and_an_early_notification_is_tolerated() {
    // raw.mjs "paged" sends tools/list_changed before its initialize answer, then lists five
    // tools over three pages.
    let connection =
        Connection::spawn_stdio("paged", &node("raw.mjs", &["paged"]), super::support::timeouts()).await.unwrap();
    let tools = connection.list_tools(&CallContext::default()).await.unwrap();
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
    assert_eq!(names, ["alpha", "beta", "gamma", "delta", "epsilon"]);

    let (_clock, cache) = manual();
    let toolset = Toolset::new("org", "s", cache)
        .with_server(stdio_config("paged", node("raw.mjs", &["paged"])), Arc::new(connection));
    assert_eq!(search(&toolset, "fifth").await, ["epsilon"]);
}
