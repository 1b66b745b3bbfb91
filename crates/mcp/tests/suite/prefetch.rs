//! `call_tool` with its fresh `tools/list` prefetched while the model streams the arguments
//! ([`mcp::Prefetch`]): a fitting prefetch is the call's one fetch (awaited if still in flight),
//! anything else falls back to a fetch of the call's own.

use super::support::{cache, fixture, fixture_stats, node, spawn, stdio_config};
use mcp::{CallToolArgs, Connection, McpCallStatus, Toolset};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// The fixture answering `tools/list` 300 ms late.
async fn slow_lists(label: &str) -> Arc<Connection> {
    spawn(label, &node("fixture.mjs", &["--list-delay-ms=300"])).await
}

fn toolset(servers: &[(&str, &Arc<Connection>)]) -> Toolset {
    servers.iter().fold(Toolset::new("org", "session", cache()), |toolset, (label, connection)| {
        toolset.with_server(stdio_config(label, node("fixture.mjs", &[])), Arc::clone(connection))
    })
}

fn echo(server: &str, message: &str) -> CallToolArgs {
    CallToolArgs::new(server, "echo", json!({"message": message}))
}

async fn lists(connection: &Connection) -> u64 {
    fixture_stats(connection).await["toolsList"].as_u64().unwrap()
}

#[tokio::test]
async fn a_finished_prefetch_is_the_calls_only_fetch_and_is_not_waited_for_again() {
    let connection = slow_lists("company").await;
    let toolset = toolset(&[("company", &connection)]);
    let cancel = CancellationToken::new();
    let before = lists(&connection).await;
    let prefetch = toolset.prefetch("company", &cancel).expect("a configured server");
    // The rest of the arguments stream meanwhile.
    tokio::time::sleep(Duration::from_millis(450)).await;
    let started = Instant::now();
    let record = toolset.call_tool_prefetched(&echo("company", "hi"), Some(prefetch), &cancel).await;
    let took = started.elapsed();
    assert_eq!(record.output.as_deref(), Some("hi"), "{record:?}");
    assert!(took < Duration::from_millis(300), "a fetch of its own would take 300 ms; took {took:?}");
    assert_eq!(lists(&connection).await, before + 1, "exactly one tools/list for the call");
}

#[tokio::test]
async fn a_prefetch_still_in_flight_is_awaited_rather_than_repeated() {
    let connection = slow_lists("company").await;
    let toolset = toolset(&[("company", &connection)]);
    let cancel = CancellationToken::new();
    let before = lists(&connection).await;
    let prefetch = toolset.prefetch("company", &cancel);
    let record = toolset.call_tool_prefetched(&echo("company", "hi"), prefetch, &cancel).await;
    assert_eq!(record.output.as_deref(), Some("hi"), "{record:?}");
    assert_eq!(lists(&connection).await, before + 1, "exactly one tools/list for the call");
}

#[tokio::test]
async fn a_prefetch_of_another_server_is_dropped_and_the_named_server_is_fetched() {
    let (a, b) = (slow_lists("a").await, fixture("b").await);
    let toolset = toolset(&[("a", &a), ("b", &b)]);
    let cancel = CancellationToken::new();
    let (a_before, b_before) = (lists(&a).await, lists(&b).await);
    let prefetch = toolset.prefetch("a", &cancel);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let record = toolset.call_tool_prefetched(&echo("b", "to b"), prefetch, &cancel).await;
    assert_eq!(record.output.as_deref(), Some("to b"), "{record:?}");
    assert_eq!(lists(&b).await, b_before + 1, "the named server's own fetch");
    assert_eq!(lists(&a).await, a_before + 1, "only the prefetch reached the other server");
    // The unused prefetch, still in flight, was cancelled.
    let deadline = Instant::now() + Duration::from_secs(5);
    while fixture_stats(&a).await["cancelled"].as_array().is_none_or(Vec::is_empty) {
        assert!(Instant::now() < deadline, "the dropped prefetch was never cancelled");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_failed_prefetch_falls_back_to_a_fetch_of_the_calls_own() {
    let connection = fixture("company").await;
    let toolset = toolset(&[("company", &connection)]);
    let cancelled = CancellationToken::new();
    cancelled.cancel();
    let before = lists(&connection).await;
    let prefetch = toolset.prefetch("company", &cancelled);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let record = toolset.call_tool_prefetched(&echo("company", "again"), prefetch, &CancellationToken::new()).await;
    assert_eq!(record.status, McpCallStatus::Completed, "{record:?}");
    assert_eq!(record.output.as_deref(), Some("again"));
    assert!(lists(&connection).await > before, "the call fetched");
}

#[tokio::test]
async fn nothing_is_prefetched_for_a_server_the_session_does_not_configure() {
    let connection = fixture("company").await;
    let toolset = toolset(&[("company", &connection)]);
    assert!(toolset.prefetch("elsewhere", &CancellationToken::new()).is_none());
}
