//! `call_tool` whose arguments the model streams slowly: the server's fresh `tools/list` is
//! sent as soon as the streamed arguments name the server (or at once when the session has a
//! single MCP server), well before they are complete, and it is the call's only one; final
//! arguments naming another server fall back to that server's own fetch. The servers are
//! optional: a required one is also checked with a `tools/list` when the turn starts.

use super::{NodeServer, http_tool, mcp_calls, run_turn, session_with, setup, tool_result, turn_items};
use serde_json::{Value, json};
use test_support::model_server::{ScriptedToolCall, Step};

/// A `call_tool` whose raw arguments stream in 8 chunks, 100 ms apart.
fn slow_call(id: &str, arguments: &str) -> Step {
    Step::tool_calls([ScriptedToolCall::raw("call_tool", arguments).id(id)])
        .chunks(8)
        .chunk_delay(std::time::Duration::from_millis(100))
}

/// The fixture's log of `tools/*` requests: (method, arrival in ms since the epoch).
async fn log(server: &NodeServer) -> Vec<(String, f64)> {
    let stats = server.stats().await;
    stats["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["method"].as_str().unwrap().to_owned(), r["at"].as_f64().unwrap()))
        .filter(|(method, _)| method.starts_with("tools/"))
        .collect()
}

fn methods(log: &[(String, f64)]) -> Vec<&str> {
    log.iter().map(|(method, _)| method.as_str()).collect()
}

/// Each `tools/call` follows exactly one `tools/list`, sent at least 250 ms before it (while
/// the last 5 chunks of 100 ms were still streaming).
fn assert_prefetched(log: &[(String, f64)], calls: usize) {
    let expected: Vec<&str> = ["tools/list", "tools/call"].repeat(calls);
    assert_eq!(methods(log), expected, "{log:?}");
    for pair in log.chunks(2) {
        let ahead = pair[1].1 - pair[0].1;
        assert!(ahead >= 250.0, "tools/list only {ahead:.1} ms before its tools/call: {log:?}");
    }
}

#[tokio::test]
async fn a_streamed_call_tool_fetches_its_servers_catalog_while_the_arguments_stream() {
    let (timed, other) = (NodeServer::timed().await, NodeServer::timed().await);
    let arguments = r#"{"server":"timed","name":"echo","arguments":{"message":"hi"}}"#;
    let (model, s) = setup(vec![slow_call("c_1", arguments), slow_call("c_2", arguments), Step::text("done")]).await;
    let tools = json!([http_tool("timed", &timed.url, false), http_tool("other", &other.url, false)]);
    let sid = session_with(&s, tools).await;
    let (turn_id, turn) = run_turn(&s, &sid, "echo twice").await;
    assert_eq!(turn["status"], "completed", "{turn}");
    let requests: Vec<Value> = model.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(tool_result(&requests[1], "c_1"), "hi");
    assert_eq!(tool_result(&requests[2], "c_2"), "hi");
    assert_prefetched(&log(&timed).await, 2);
    assert_eq!(methods(&log(&other).await), Vec::<&str>::new(), "nothing was fetched from the other server");
    let items = mcp_calls(&turn_items(&s, &sid, &turn_id).await);
    assert!(items.iter().all(|i| i["status"] == "completed" && i["server_label"] == "timed"), "{items:?}");
}

#[tokio::test]
async fn with_a_single_mcp_server_the_fetch_starts_before_the_arguments_name_it() {
    let timed = NodeServer::timed().await;
    let arguments = r#"{"name":"echo","arguments":{"message":"last"},"server":"timed"}"#;
    let (model, s) = setup(vec![slow_call("c_1", arguments), Step::text("done")]).await;
    let sid = session_with(&s, json!([http_tool("timed", &timed.url, false)])).await;
    let (_, turn) = run_turn(&s, &sid, "echo").await;
    assert_eq!(turn["status"], "completed", "{turn}");
    assert_eq!(tool_result(&model.requests()[1].body, "c_1"), "last");
    assert_prefetched(&log(&timed).await, 1);
}

#[tokio::test]
async fn a_prefetch_for_one_server_is_not_used_when_the_final_arguments_name_another() {
    let (timed, other) = (NodeServer::timed().await, NodeServer::timed().await);
    // The streamed prefix names "timed"; the complete arguments name "other" (the last
    // duplicate key wins when they are parsed).
    let arguments = r#"{"server":"timed","name":"echo","arguments":{"message":"to other"},"server":"other"}"#;
    let (model, s) = setup(vec![slow_call("c_1", arguments), Step::text("done")]).await;
    let tools = json!([http_tool("timed", &timed.url, false), http_tool("other", &other.url, false)]);
    let sid = session_with(&s, tools).await;
    let (turn_id, turn) = run_turn(&s, &sid, "echo elsewhere").await;
    assert_eq!(turn["status"], "completed", "{turn}");
    assert_eq!(tool_result(&model.requests()[1].body, "c_1"), "to other");
    assert_eq!(methods(&log(&timed).await), ["tools/list"], "the prefetch, and no call");
    let other_log = log(&other).await;
    assert_eq!(methods(&other_log), ["tools/list", "tools/call"], "its own fresh fetch, then the call");
    assert!(other_log[1].1 - other_log[0].1 < 250.0, "fetched when the arguments were complete: {other_log:?}");
    let items = mcp_calls(&turn_items(&s, &sid, &turn_id).await);
    assert_eq!((&items[0]["server_label"], &items[0]["status"]), (&json!("other"), &json!("completed")));
}
