//! Dynamic Workflow end to end (issue 14): the scripted model runs `dynamic_workflow` programs
//! against the real `server-everything` over Streamable HTTP. Nested calls go through the same
//! checks as the model's own, make no `mcp_call` items, and the run is a `program` item and a
//! `program_output` item with their events; limits and bad programs end it `incomplete` while
//! the turn goes on; cancelling stops a running program at once.

use super::{NodeServer, http_tool, mcp_calls, offered, run_turn, session_with, setup, tool_result, turn_items};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use test_support::model_server::{ScriptedToolCall, Step};

fn program(id: &str, code: &str) -> Step {
    Step::tool_calls([ScriptedToolCall::new("dynamic_workflow", json!({"code": code})).id(id)])
}

fn now_function() -> Value {
    json!({"type": "function", "name": "now", "description": "The time", "parameters": {"type": "object", "properties": {}}})
}

/// The `program_output` item of `call_id`.
fn output_of<'a>(items: &'a [Value], call_id: &str) -> &'a Value {
    items
        .iter()
        .find(|i| i["type"] == "program_output" && i["call_id"] == call_id)
        .unwrap_or_else(|| panic!("no program_output for {call_id} in {items:?}"))
}

#[tokio::test]
async fn a_program_searches_calls_two_tools_and_combines_them() {
    let everything = NodeServer::everything().await;
    let code = r#"
        const found = await search_tools({query: "sum two numbers", server: "everything", limit: 3});
        const sum = await call_tool({server: "everything", name: "get-sum", arguments: {a: 2, b: 3}});
        const weather = await call_tool({server: "everything", name: "get-structured-content",
                                         arguments: {location: "Chicago"}});
        console.log("found", found.results.map(r => r.name).join(","));
        return {sum, temperature: weather.temperature, first: found.results[0].name};
    "#;
    let (model, s) = setup(vec![program("p1", code), Step::text("Combined.")]).await;
    let tools = json!([http_tool("everything", &everything.url, true), {"type": "dynamic_workflow"}, now_function()]);
    let sid = session_with(&s, tools).await;
    let (turn_id, turn) = run_turn(&s, &sid, "Add and look up the weather").await;
    assert_eq!(turn["status"], "completed", "{turn}");

    let requests: Vec<Value> = model.requests().into_iter().map(|r| r.body).collect();
    assert!(offered(&requests[0]).contains(&"dynamic_workflow".to_string()), "{:?}", offered(&requests[0]));
    let answer = tool_result(&requests[1], "p1");
    let (value, log) = answer.split_once("\n\nconsole output:\n").unwrap_or_else(|| panic!("{answer}"));
    let value: Value = serde_json::from_str(value).unwrap();
    assert_eq!(value, json!({"sum": "The sum of 2 and 3 is 5.", "temperature": 36, "first": "get-sum"}));
    assert!(log.starts_with("found get-sum"), "{log}");

    let items = turn_items(&s, &sid, &turn_id).await;
    assert!(mcp_calls(&items).is_empty(), "nested calls make no mcp_call items: {items:?}");
    let kinds: Vec<&str> = items.iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["message", "program", "program_output", "message"]);
    let (prog, out) = (&items[1], &items[2]);
    assert_eq!((&prog["call_id"], &prog["code"]), (&json!("p1"), &json!(code)));
    assert_eq!(prog["fingerprint"].as_str().map(str::len), Some(64));
    assert_eq!((&out["call_id"], &out["status"], &out["result"]), (&json!("p1"), &json!("completed"), &json!(answer)));

    let events = s.events(&sid).await;
    let seen: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e["item"]["type"].as_str().is_some_and(|t| t.starts_with("program")))
        .map(|e| (e["type"].as_str().unwrap(), e["item"]["type"].as_str().unwrap()))
        .collect();
    assert_eq!(
        seen,
        [
            ("agent.session.turn.item.added", "program"),
            ("agent.session.turn.item.done", "program"),
            ("agent.session.turn.item.added", "program_output"),
            ("agent.session.turn.item.done", "program_output"),
        ]
    );

    // The Responses view shows both; the next turn's history replays the program.
    let (_, response) = s.get(&format!("/v1/responses/resp_{turn_id}")).await;
    let shown: Vec<&str> = response["output"].as_array().unwrap().iter().map(|o| o["type"].as_str().unwrap()).collect();
    assert_eq!(shown, ["program", "program_output", "message"], "{response}");
    model.push(Step::text("again"));
    run_turn(&s, &sid, "And now?").await;
    assert_eq!(tool_result(&model.last_request().unwrap(), "p1"), answer);
}

#[tokio::test]
async fn nested_calls_follow_the_rules_of_direct_calls_and_run_at_once() {
    let everything = NodeServer::everything().await;
    let code = r#"
        const out = {};
        try { await call_tool({server: "everything", name: "get-env"}); } catch (e) { out.allowed = e.message; }
        try { await call_tool({server: "everything", name: "get-sum", arguments: {a: "x", b: 1}}); }
        catch (e) { out.schema = e.message; }
        try { await call_tool({server: "functions", name: "now"}); } catch (e) { out.client = e.message; }
        try { await call_tool({server: "sandbox", name: "shell", arguments: {command: "ls"}}); }
        catch (e) { out.sandbox = e.message; }
        const began = Date.now();
        out.echoes = await Promise.all([...Array(10).keys()].map(i =>
            call_tool({server: "everything", name: "echo", arguments: {message: "m" + i}})));
        return out;
    "#;
    let direct = |id: &str, name: &str, arguments: Value| {
        Step::tool_calls([ScriptedToolCall::new(
            "call_tool",
            json!({"server": "everything", "name": name, "arguments": arguments}),
        )
        .id(id)])
    };
    let (model, s) = setup(vec![
        program("p1", code),
        direct("d_allowed", "get-env", json!({})),
        direct("d_schema", "get-sum", json!({"a": "x", "b": 1})),
        Step::text("done"),
    ])
    .await;
    let mut mcp = http_tool("everything", &everything.url, true);
    mcp["allowed_tools"] = json!(["echo", "get-sum"]);
    let tools = json!([mcp, {"type": "programmatic_tool_calling", "enabled": true}, now_function()]);
    let sid = session_with(&s, tools).await;
    let (turn_id, turn) = run_turn(&s, &sid, "rules").await;
    assert_eq!(turn["status"], "completed", "{turn}");
    let requests: Vec<Value> = model.requests().into_iter().map(|r| r.body).collect();
    let out: Value = serde_json::from_str(&tool_result(&requests[1], "p1")).unwrap();
    // The same errors the model gets for the same calls, as the Error's message.
    let allowed = tool_result(&requests[2], "d_allowed");
    let schema = tool_result(&requests[3], "d_schema");
    assert_eq!(format!("error: {}", out["allowed"].as_str().unwrap()), allowed);
    assert_eq!(format!("error: {}", out["schema"].as_str().unwrap()), schema);
    assert!(allowed.contains("allowed_tools"), "{allowed}");
    let client = out["client"].as_str().unwrap();
    assert!(client.starts_with("'now' is not an MCP tool"), "{client}");
    assert!(out["sandbox"].as_str().unwrap().starts_with("'shell' is not an MCP tool"), "{out}");
    let echoes: Vec<String> = (0..10).map(|i| format!("Echo: m{i}")).collect();
    assert_eq!(out["echoes"], json!(echoes));
    let items = turn_items(&s, &sid, &turn_id).await;
    assert_eq!(mcp_calls(&items).len(), 2, "only the two direct calls: {items:?}");
}

#[tokio::test]
async fn limits_and_bad_programs_end_incomplete_and_the_turn_goes_on() {
    let everything = NodeServer::everything().await;
    let many = "for (let i = 0; i < 101; i++) await call_tool({server: 'everything', name: 'echo', \
                arguments: {message: 'x'}}); return 'never';";
    let cases: Vec<(&str, &str, &str)> = vec![
        ("syntax", "const a = ;", "error: the program does not parse: SyntaxError:"),
        (
            "memory",
            "const a = []; while (true) a.push(new Array(100000).fill(1));",
            "error: the program reached its memory limit of 64 MiB",
        ),
        ("stack", "function f() { return f() + 1; } return f();", "error: the program exceeded its stack limit"),
        ("thrown", "throw {code: 7};", "error: the program threw a value that is not an Error: {\"code\":7}"),
        ("cycle", "const a = {}; a.a = a; return a;", "error: the program threw TypeError: circular"),
        ("bigint", "return 2n ** 70n;", "error: the program threw TypeError"),
        ("nested", many, "error: the program reached its limit of 100 nested calls"),
    ];
    let mut steps: Vec<Step> = cases.iter().map(|(id, code, _)| program(id, code)).collect();
    steps.push(Step::text("survived"));
    let (model, s) = setup(steps).await;
    let tools = json!([http_tool("everything", &everything.url, true), {"type": "dynamic_workflow"}]);
    let sid = session_with(&s, tools).await;
    let (turn_id, turn) = run_turn(&s, &sid, "bad programs").await;
    assert_eq!(turn["status"], "completed", "{turn}");
    let items = turn_items(&s, &sid, &turn_id).await;
    let last = model.last_request().unwrap();
    for (id, _, start) in &cases {
        let out = output_of(&items, id);
        assert_eq!(out["status"], "incomplete", "{out}");
        let result = out["result"].as_str().unwrap();
        assert!(result.starts_with(start), "{id}: {result}");
        assert_eq!(tool_result(&last, id), result);
    }
    assert_eq!(items.last().unwrap()["content"][0]["text"], "survived");
}

#[tokio::test]
async fn cancelling_the_turn_stops_a_running_program_at_once() {
    let everything = NodeServer::everything().await;
    let (_model, s) = setup(vec![program("p1", "while (true) {}"), Step::text("never")]).await;
    let tools = json!([http_tool("everything", &everything.url, true), {"type": "dynamic_workflow"}]);
    let sid = session_with(&s, tools).await;
    let turn_id = s.send(&sid, "spin").await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while !turn_items(&s, &sid, &turn_id).await.iter().any(|i| i["type"] == "program") {
        assert!(Instant::now() < deadline, "the program never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let began = Instant::now();
    let cancel = json!({"events": [{"type": "agent.session.input.cancel"}]});
    let (status, body) = s.post(&format!("/v1/agents/sessions/{sid}/events"), cancel).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let turn = s.wait_turn(&sid, &turn_id).await;
    assert_eq!(turn["status"], "cancelled", "{turn}");
    assert!(began.elapsed() < Duration::from_secs(2), "{:?}", began.elapsed());
    let items = turn_items(&s, &sid, &turn_id).await;
    let out = output_of(&items, "p1");
    assert_eq!(out["status"], "incomplete");
    assert_eq!(out["result"], "error: the program was stopped: the turn was cancelled");
}
