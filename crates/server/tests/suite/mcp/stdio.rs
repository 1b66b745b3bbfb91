//! Stdio MCP servers inside an environment's sandbox: server-filesystem launched as the
//! walkthrough configures it, `env` and `env_vars` (with a bound environment credential), one
//! broker per (sandbox, label) that outlives the session that started it, and a server that
//! cannot start.

use super::{environment_with_servers, mcp_calls, run_turn, setup, tool_result, turn_items};
use crate::suite::vaults::{credential, vault};
use base64::Engine as _;
use reqwest::StatusCode;
use serde_json::{Value, json};
use test_support::model_server::{ScriptedToolCall, Step};

fn call(id: &str, name: &str, arguments: Value) -> Step {
    Step::tool_calls([ScriptedToolCall::new(name, arguments).id(id)])
}

async fn session_on(s: &crate::support::TestServer, env_id: &str, tools: Value) -> String {
    let session = s
        .session(json!({"agent": {"model": "m", "tools": tools},
                        "environment": {"type": "reference", "environment_id": env_id}}))
        .await;
    session["id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn server_filesystem_runs_inside_the_environment_sandbox_through_npx() {
    let (model, s) = setup(vec![
        call("c_search", "search_tools", json!({"query": "read text file contents", "server": "files"})),
        call(
            "c_read",
            "call_tool",
            json!({"server": "files", "name": "read_text_file",
                                            "arguments": {"path": "/workspace/notes.txt"}}),
        ),
        Step::text("It says hello."),
    ])
    .await;
    let notes = base64::engine::general_purpose::STANDARD.encode("hello from the sandbox");
    let env_id = environment_with_servers(
        &s,
        json!({"files": [{"type": "inline", "path": "/workspace/notes.txt", "data": notes}]}),
    )
    .await;
    // As in the walkthrough; npx finds the package installed in /workspace and needs no network.
    let files = json!({"type": "mcp", "server_label": "files", "required": true,
        "transport": {"type": "stdio", "command": "npx", "cwd": "/workspace",
                      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/workspace"]}});
    let sid = session_on(&s, &env_id, json!([files])).await;
    let (turn_id, turn) = run_turn(&s, &sid, "What do my notes say?").await;
    assert_eq!(turn["status"], "completed", "{turn}");
    let requests: Vec<Value> = model.requests().into_iter().map(|r| r.body).collect();
    let found = tool_result(&requests[1], "c_search");
    assert!(found.contains("\"read_text_file\""), "{found}");
    assert_eq!(tool_result(&requests[2], "c_read"), "hello from the sandbox");
    let item = &mcp_calls(&turn_items(&s, &sid, &turn_id).await)[0];
    assert_eq!((&item["server_label"], &item["status"]), (&json!("files"), &json!("completed")));
    let (_, env) = s.get(&format!("/v1/agents/environments/{env_id}")).await;
    assert_eq!(env["status"], "ready", "the stdio server went through the environment's initialization");
    // The turn waited for the environment before its first model call, and said so.
    let events = s.events(&sid).await;
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    let mut env_events: Vec<&str> =
        kinds.iter().copied().filter(|k| k.starts_with("agent.session.environment.")).collect();
    // Initialization's progress may repeat `pending` (each with the output so far).
    env_events.dedup();
    assert_eq!(
        env_events,
        ["agent.session.environment.pending", "agent.session.environment.ready", "agent.session.environment.connected"],
        "{kinds:?}"
    );
    let connected = kinds.iter().position(|k| *k == "agent.session.environment.connected").unwrap();
    let first_call = events
        .iter()
        .position(|e| e["type"] == "agent.session.turn.item.added" && e["item"]["type"] == "mcp_call")
        .unwrap();
    let in_progress = kinds.iter().position(|k| *k == "agent.session.turn.in_progress").unwrap();
    assert!(in_progress < connected && connected < first_call, "before the first model call: {kinds:?}");
    let ready = events.iter().find(|e| e["type"] == "agent.session.environment.ready").unwrap();
    assert_eq!((&ready["environment"]["id"], &ready["turn_id"]), (&json!(env_id), &json!(turn_id)));
}

#[tokio::test]
async fn env_vars_select_environment_variables_and_bound_credentials_and_the_first_launch_wins() {
    let names = json!({"names": ["REGION", "API_TOKEN", "MODE"]});
    let (model, s) = setup(vec![
        call("c_a", "call_tool", json!({"server": "envs", "name": "env", "arguments": names})),
        Step::text("a"),
        call("c_b", "call_tool", json!({"server": "envs", "name": "env", "arguments": names})),
        Step::text("b"),
    ])
    .await;
    let v = vault(&s).await;
    let token = credential(
        &s,
        &v,
        json!({"type": "environment_variable", "secret_name": "API_TOKEN", "secret_value": "env-s3cret",
               "networking": {"type": "unrestricted"}}),
    )
    .await;
    let binding = json!([{"vault_id": v, "credential_id": token["id"]}]);
    let env_id = environment_with_servers(&s, json!({"env": {"REGION": "eu"}, "vault_credentials": binding})).await;
    let tool = |mode: &str| {
        json!([{"type": "mcp", "server_label": "envs", "required": true,
            "transport": {"type": "stdio", "command": "node", "cwd": "/workspace", "args": ["env.mjs"],
                          "env": {"MODE": mode}, "env_vars": ["REGION", "API_TOKEN"]}}])
    };
    let a = session_on(&s, &env_id, tool("a")).await;
    let (_, turn) = run_turn(&s, &a, "env?").await;
    assert_eq!(turn["status"], "completed", "{turn}");
    let first: Value = serde_json::from_str(&tool_result(&model.requests()[1].body, "c_a")).unwrap();
    assert_eq!(first["env"], json!({"REGION": "eu", "API_TOKEN": "env-s3cret", "MODE": "a"}));

    // "Deleting a Session leaves its stdio MCP process running"; a later session with the same
    // label reuses that broker and its launch configuration.
    assert_eq!(s.delete(&format!("/v1/agents/sessions/{a}")).await.0, StatusCode::OK);
    let b = session_on(&s, &env_id, tool("b")).await;
    let (_, turn) = run_turn(&s, &b, "env?").await;
    assert_eq!(turn["status"], "completed", "{turn}");
    let second: Value = serde_json::from_str(&tool_result(&model.requests()[3].body, "c_b")).unwrap();
    assert_eq!(second, first, "same process, same launch-time environment");
}

#[tokio::test]
async fn a_saved_agents_sealed_stdio_env_reaches_the_server_of_each_session_made_from_it() {
    let names = json!({"names": ["MODE"]});
    let (model, s) = setup(vec![
        call("c_a", "call_tool", json!({"server": "envs", "name": "env", "arguments": names})),
        Step::text("a"),
    ])
    .await;
    let env_id = environment_with_servers(&s, json!({})).await;
    let tools = json!([{"type": "mcp", "server_label": "envs", "required": true,
        "transport": {"type": "stdio", "command": "node", "cwd": "/workspace", "args": ["env.mjs"], "env": {"MODE": "saved"}}}]);
    let agent = s.agent(json!({"model": "m", "tools": tools})).await;
    assert!(!agent.to_string().contains("saved\""), "the env is never shown: {agent}");
    let session = s
        .session(json!({"agent_id": agent["id"], "environment": {"type": "reference", "environment_id": env_id}}))
        .await;
    let sid = session["id"].as_str().unwrap();
    let (_, turn) = run_turn(&s, sid, "env?").await;
    assert_eq!(turn["status"], "completed", "{turn}");
    let got: Value = serde_json::from_str(&tool_result(&model.requests()[1].body, "c_a")).unwrap();
    assert_eq!(got["env"], json!({"MODE": "saved"}));
}

#[tokio::test]
async fn a_required_stdio_server_that_cannot_start_fails_the_turn_naming_it_and_its_stderr() {
    let (model, s) = setup(vec![Step::text("never sent")]).await;
    let (status, env) = s.post("/v1/agents/environments", json!({"environment": {"type": "openai_hosted"}})).await;
    assert_eq!(status, StatusCode::CREATED, "{env}");
    let broken = json!({"type": "mcp", "server_label": "broken", "required": true,
        "transport": {"type": "stdio", "command": "node", "cwd": "/workspace", "args": ["missing.mjs"]}});
    let sid = session_on(&s, env["id"].as_str().unwrap(), json!([broken])).await;
    let (_, turn) = run_turn(&s, &sid, "hello").await;
    assert_eq!(turn["status"], "failed", "{turn}");
    let message = turn["error"]["message"].as_str().unwrap();
    assert!(message.contains("'broken'") && message.contains("initialize"), "{message}");
    assert!(message.contains("Cannot find module"), "the server's stderr explains it: {message}");
    assert_eq!(model.request_count(), 0, "no model call was made");
}
