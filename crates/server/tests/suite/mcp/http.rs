//! Service-origin Streamable HTTP servers in turns: search, then call, then answer; the
//! allowlist; schema violations; required and optional servers that cannot initialize.

use super::{
    NodeServer, dead_url, http_tool, mcp_calls, offered, run_turn, session_with, setup, tool_result, turn_items,
};
use serde_json::{Value, json};
use test_support::model_server::{ScriptedToolCall, Step};

fn call(id: &str, name: &str, arguments: Value) -> Step {
    Step::tool_calls([ScriptedToolCall::new(name, arguments).id(id)])
}

#[tokio::test]
async fn a_turn_searches_then_calls_an_http_server_then_answers() {
    let everything = NodeServer::everything().await;
    let (model, s) = setup(vec![
        call("c_search", "search_tools", json!({"query": "echo message", "server": "everything", "limit": 3})),
        call("c_call", "call_tool", json!({"server": "everything", "name": "echo", "arguments": {"message": "hi"}})),
        Step::text("The server said hi."),
    ])
    .await;
    let sid = session_with(&s, json!([http_tool("everything", &everything.url, true)])).await;
    let (turn_id, turn) = run_turn(&s, &sid, "Echo hi through the MCP server").await;
    assert_eq!(turn["status"], "completed", "{turn}");

    // The model sees the five helpers, never the server's catalog.
    let requests: Vec<Value> = model.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(requests.len(), 3);
    let mut tools = offered(&requests[0]);
    tools.sort();
    assert_eq!(
        tools,
        ["call_tool", "list_mcp_resource_templates", "list_mcp_resources", "read_mcp_resource", "search_tools"]
    );
    // "Results include the server label, original tool name, description, and inputSchema."
    let found: Value = serde_json::from_str(&tool_result(&requests[1], "c_search")).unwrap();
    let echo = found["results"].as_array().unwrap().iter().find(|r| r["name"] == "echo").expect("echo is found");
    assert_eq!(echo["server"], "everything");
    assert!(echo["description"].as_str().is_some_and(|d| !d.is_empty()), "{echo}");
    assert_eq!(echo["inputSchema"]["properties"]["message"]["type"], "string", "{echo}");
    assert_eq!(tool_result(&requests[2], "c_call"), "Echo: hi");

    let items = turn_items(&s, &sid, &turn_id).await;
    let calls = mcp_calls(&items);
    assert_eq!(calls.len(), 1, "one mcp_call item per call_tool; searches record none: {items:?}");
    let item = &calls[0];
    assert_eq!(
        (&item["server_label"], &item["name"], &item["arguments"], &item["output"], &item["error"], &item["status"]),
        (
            &json!("everything"),
            &json!("echo"),
            &json!({"message": "hi"}),
            &json!("Echo: hi"),
            &Value::Null,
            &json!("completed")
        )
    );
    assert_eq!(item["turn_id"], turn_id);
    assert_eq!(items.last().unwrap()["content"][0]["text"], "The server said hi.");

    // The item is added in progress, then done, on the session's stream.
    let events = s.events(&sid).await;
    let states: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e["item"]["type"] == "mcp_call")
        .map(|e| (e["type"].as_str().unwrap(), e["item"]["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        states,
        [("agent.session.turn.item.added", "in_progress"), ("agent.session.turn.item.done", "completed")]
    );

    // The Responses view shows the call as an `mcp_call` output item.
    let (_, response) = s.get(&format!("/v1/responses/resp_{turn_id}")).await;
    let shown = response["output"].as_array().unwrap().iter().find(|o| o["type"] == "mcp_call").cloned();
    let shown = shown.unwrap_or_else(|| panic!("no mcp_call in {response}"));
    assert_eq!((&shown["name"], &shown["output"]), (&json!("echo"), &json!("Echo: hi")));
    assert_eq!(shown["arguments"], json!({"message": "hi"}).to_string());

    // The next turn's history carries the call and its result.
    model.push(Step::text("again"));
    run_turn(&s, &sid, "And now?").await;
    let last = model.last_request().unwrap();
    let replayed = tool_result(&last, &call_id_of(&last, "call_tool"));
    assert_eq!(replayed, "Echo: hi");
}

/// The id of the first call of `name` in a request's history.
fn call_id_of(request: &Value, name: &str) -> String {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["tool_calls"].as_array().cloned().unwrap_or_default())
        .find(|c| c["function"]["name"] == name)
        .and_then(|c| c["id"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("no {name} call in {request}"))
}

#[tokio::test]
async fn allowed_tools_limit_search_and_call() {
    let everything = NodeServer::everything().await;
    let (model, s) = setup(vec![
        call("c_search", "search_tools", json!({"pattern": ".*", "limit": 20})),
        call("c_call", "call_tool", json!({"server": "everything", "name": "get-sum", "arguments": {"a": 1, "b": 2}})),
        Step::text("not allowed"),
    ])
    .await;
    let mut tool = http_tool("everything", &everything.url, true);
    tool["allowed_tools"] = json!(["echo"]);
    let sid = session_with(&s, json!([tool])).await;
    let (turn_id, turn) = run_turn(&s, &sid, "sum").await;
    assert_eq!(turn["status"], "completed", "{turn}");
    let requests: Vec<Value> = model.requests().into_iter().map(|r| r.body).collect();
    let found: Value = serde_json::from_str(&tool_result(&requests[1], "c_search")).unwrap();
    let names: Vec<&str> = found["results"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["echo"], "only allowed tools are found");
    let refused = tool_result(&requests[2], "c_call");
    assert!(refused.starts_with("error: ") && refused.contains("allowed_tools"), "{refused}");
    let item = &mcp_calls(&turn_items(&s, &sid, &turn_id).await)[0];
    assert_eq!((&item["name"], &item["status"]), (&json!("get-sum"), &json!("failed")));
    assert!(item["error"].as_str().unwrap().contains("allowed_tools"), "{item}");
}

#[tokio::test]
async fn arguments_that_violate_the_schema_go_back_to_the_model() {
    let everything = NodeServer::everything().await;
    let (model, s) = setup(vec![
        call("c_bad", "call_tool", json!({"server": "everything", "name": "echo", "arguments": {"message": 5}})),
        call("c_good", "call_tool", json!({"server": "everything", "name": "echo", "arguments": {"message": "5"}})),
        Step::text("fixed it"),
    ])
    .await;
    let sid = session_with(&s, json!([http_tool("everything", &everything.url, true)])).await;
    let (turn_id, turn) = run_turn(&s, &sid, "echo five").await;
    assert_eq!(turn["status"], "completed", "{turn}");
    let requests: Vec<Value> = model.requests().into_iter().map(|r| r.body).collect();
    let refusal = tool_result(&requests[1], "c_bad");
    assert!(refusal.starts_with("error: ") && refusal.contains("inputSchema"), "{refusal}");
    assert_eq!(tool_result(&requests[2], "c_good"), "Echo: 5");
    let calls = mcp_calls(&turn_items(&s, &sid, &turn_id).await);
    let statuses: Vec<&Value> = calls.iter().map(|c| &c["status"]).collect();
    assert_eq!(statuses, [&json!("failed"), &json!("completed")]);
}

#[tokio::test]
async fn a_required_server_that_cannot_initialize_fails_the_turn_before_the_first_model_call() {
    let (model, s) = setup(vec![Step::text("never sent")]).await;
    let sid = session_with(&s, json!([http_tool("company", &dead_url(), true)])).await;
    let (_, turn) = run_turn(&s, &sid, "hello").await;
    assert_eq!(turn["status"], "failed", "{turn}");
    assert_eq!(turn["error"]["code"], "connection_failed", "{turn}");
    let message = turn["error"]["message"].as_str().unwrap();
    assert!(message.contains("'company'") && message.contains("initialize"), "names server and step: {message}");
    assert_eq!(model.request_count(), 0, "no model call was made");
    let (_, session) = s.get(&format!("/v1/agents/sessions/{sid}")).await;
    assert_eq!(session["status"], "idle", "the session takes input again");
}

#[tokio::test]
async fn an_unavailable_optional_server_contributes_nothing_and_the_turn_goes_on() {
    let everything = NodeServer::everything().await;
    let (model, s) = setup(vec![
        call("c_search", "search_tools", json!({"query": "echo"})),
        call("c_gone", "call_tool", json!({"server": "flaky", "name": "echo", "arguments": {"message": "x"}})),
        Step::text("done"),
    ])
    .await;
    let tools = json!([http_tool("everything", &everything.url, true), http_tool("flaky", &dead_url(), false)]);
    let sid = session_with(&s, tools).await;
    let (_, turn) = run_turn(&s, &sid, "go").await;
    assert_eq!(turn["status"], "completed", "{turn}");
    let requests: Vec<Value> = model.requests().into_iter().map(|r| r.body).collect();
    let found: Value = serde_json::from_str(&tool_result(&requests[1], "c_search")).unwrap();
    assert!(found["results"].as_array().unwrap().iter().all(|r| r["server"] == "everything"), "{found}");
    assert!(found.get("unavailable").is_none(), "the left-out server is not searched: {found}");
    let gone = tool_result(&requests[2], "c_gone");
    assert!(gone.contains("unknown MCP server 'flaky'"), "{gone}");
    let events = s.events(&sid).await;
    let warning = events.iter().find(|e| e["type"] == "error").expect("the caller hears of the left-out server");
    assert_eq!(warning["error"]["type"], "warning");
    assert_eq!(warning["error"]["code"], "mcp_server_unavailable");
    assert!(warning["error"]["message"].as_str().unwrap().contains("'flaky'"), "{warning}");
}

#[tokio::test]
async fn a_stdio_server_needs_the_session_environment() {
    let (model, s) = setup(vec![Step::text("never sent")]).await;
    let stdio = json!({"type": "mcp", "server_label": "files", "required": true,
        "transport": {"type": "stdio", "command": "node", "cwd": "/workspace", "args": ["server.js"]}});
    let sid = session_with(&s, json!([stdio])).await;
    let (_, turn) = run_turn(&s, &sid, "list files").await;
    assert_eq!(turn["status"], "failed", "{turn}");
    let message = turn["error"]["message"].as_str().unwrap();
    assert!(message.contains("'files'") && message.contains("environment"), "{message}");
    assert_eq!(model.request_count(), 0);
}
