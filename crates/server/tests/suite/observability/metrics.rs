//! `GET /metrics` describes the work (issue 10): a real turn with a shell call in its
//! environment and a `call_tool` to a real MCP server moves the families of turns, model steps,
//! tokens, tool calls, MCP latency, sandboxes, setup and the journal by exactly what it did.

use super::{Scrape, scrape};
use crate::suite::mcp::{NodeServer, http_tool, run_turn};
use crate::support::{TestServer, models_toml};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::Duration;
use test_support::model_server::{ModelServer, ScriptedToolCall, ScriptedUsage, Step};

fn usage(input_tokens: u64, output_tokens: u64) -> ScriptedUsage {
    ScriptedUsage { input_tokens, output_tokens, cached_tokens: 0, reasoning_tokens: 0 }
}

/// One turn on a new session, with the scrapes before and after it.
struct Observed {
    sid: String,
    turn_id: String,
    turn: Value,
    before: Scrape,
    after: Scrape,
}

impl Observed {
    /// Creates a session from `body`, scrapes, runs a turn of `text` to its end, scrapes again.
    async fn turn(s: &TestServer, body: Value, text: &str) -> Self {
        let session = s.session(body).await;
        let sid = session["id"].as_str().unwrap().to_string();
        let before = scrape(s).await;
        let (turn_id, turn) = run_turn(s, &sid, text).await;
        let after = scrape(s).await;
        Self { sid, turn_id, turn, before, after }
    }

    /// How much a sample grew over the turn.
    fn moved(&self, key: &str) -> f64 {
        self.after.since(&self.before, key)
    }
}

/// Polls the scrape until `done` holds (or 10 s pass); returns the last one.
async fn scrape_until(s: &TestServer, done: impl Fn(&Scrape) -> bool) -> Scrape {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let now = scrape(s).await;
        if done(&now) || tokio::time::Instant::now() > deadline {
            return now;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test]
async fn a_turn_with_a_shell_and_an_mcp_call_moves_the_work_families_by_what_it_did() {
    let everything = NodeServer::everything().await;
    let usages = [usage(11, 5), usage(13, 7), usage(17, 3)];
    let call = json!({"server": "everything", "name": "echo", "arguments": {"message": "hi"}});
    let model = ModelServer::with_script(vec![
        Step::tool_call("shell", json!({"command": "echo hi"})).usage(usages[0]),
        Step::tool_calls([ScriptedToolCall::new("call_tool", call)]).usage(usages[1]),
        Step::text("Both worked.").usage(usages[2]),
    ])
    .await
    .unwrap();
    let toml = models_toml(&model);
    // Sandboxes idle for a moment are paused: the gauges move from running to paused.
    let s = TestServer::start_with(|c| {
        c.models_toml = Some(toml);
        c.idle_pause = Duration::from_millis(400);
    })
    .await;
    let body = json!({"agent": {"model": "m-observed", "tools": [http_tool("everything", &everything.url, true)]},
                      "environment": {"type": "openai_hosted", "setup_commands": [{"command": "echo set up"}]}});
    let run = Observed::turn(&s, body, "Run echo in the shell, then echo through MCP").await;
    let (sid, turn_id, turn, after) = (&run.sid, &run.turn_id, &run.turn, &run.after);
    assert_eq!(turn["status"], "completed", "{turn}");
    let moved = |key: &str| run.moved(key);

    assert_eq!(moved(r#"rebyte_turns_total{status="completed"}"#), 1.0);
    assert_eq!(moved(r#"rebyte_turns_total{status="failed"}"#), 0.0);
    assert_eq!(moved(r#"rebyte_turn_duration_seconds_count{model="m-observed"}"#), 1.0);
    let steps = model.requests().len() as f64;
    assert_eq!(steps, 3.0, "the script ran to its end");
    assert_eq!(moved(r#"rebyte_model_step_duration_seconds_count{model="m-observed"}"#), steps);
    // Tokens: what the scripted model reported, which is also the turn's usage.
    let input: u64 = usages.iter().map(|u| u.input_tokens).sum();
    let output: u64 = usages.iter().map(|u| u.output_tokens).sum();
    assert_eq!(turn["usage"]["input_tokens"], input, "{turn}");
    assert_eq!(turn["usage"]["output_tokens"], output, "{turn}");
    assert_eq!(moved(r#"rebyte_model_tokens_total{model="m-observed",direction="input"}"#), input as f64);
    assert_eq!(moved(r#"rebyte_model_tokens_total{model="m-observed",direction="output"}"#), output as f64);

    // One call of each kind, as the turn's items record them.
    let (_, items) = s.get(&format!("/v1/agents/sessions/{sid}/turns/{turn_id}/items?order=asc")).await;
    let statuses = |kind: &str| -> Vec<String> {
        let items = items["data"].as_array().unwrap();
        items.iter().filter(|i| i["type"] == kind).map(|i| i["status"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(
        (statuses("command_execution"), statuses("mcp_call")),
        (vec!["completed".into()], vec!["completed".into()])
    );
    assert_eq!(moved(r#"rebyte_tool_calls_total{kind="shell",outcome="completed"}"#), 1.0);
    assert_eq!(moved(r#"rebyte_tool_calls_total{kind="mcp",outcome="completed"}"#), 1.0);
    assert_eq!(moved(r#"rebyte_tool_calls_total{kind="function",outcome="completed"}"#), 0.0);
    assert_eq!(moved(r#"rebyte_mcp_call_duration_seconds_count{server="everything"}"#), 1.0);
    assert!(moved(r#"rebyte_mcp_call_duration_seconds_sum{server="everything"}"#) > 0.0);

    // The environment started once, its setup ran once and did not fail.
    assert_eq!(moved("rebyte_sandbox_first_use_seconds_count"), 1.0);
    assert_eq!(moved("rebyte_environment_setup_duration_seconds_count"), 1.0);
    assert_eq!(moved("rebyte_environment_setup_failures_total"), 0.0);
    let sandboxes =
        |s: &Scrape| (s.value(r#"rebyte_sandboxes{state="running"}"#), s.value(r#"rebyte_sandboxes{state="paused"}"#));
    let (running, paused) = sandboxes(after);
    assert_eq!(running + paused, 1.0, "one sandbox, running or already paused");
    let idle = scrape_until(&s, |now| sandboxes(now) == (0.0, 1.0)).await;
    assert_eq!(sandboxes(&idle), (0.0, 1.0), "the idle sandbox is counted as paused");

    // Every write of the turn was committed by the journal, in batches it timed.
    assert!(moved("rebyte_journal_commit_duration_seconds_count") >= 1.0);
    let drained = scrape_until(&s, |now| now.value("rebyte_journal_queue_depth") == 0.0).await;
    assert_eq!(drained.value("rebyte_journal_queue_depth"), 0.0);
    // The requests themselves, by route template.
    let route =
        r#"rebyte_http_requests_total{route="/v1/agents/sessions/{session_id}/events",method="POST",status="202"}"#;
    assert_eq!(moved(route), 1.0);
}

#[tokio::test]
async fn a_live_event_stream_is_a_subscriber_until_it_closes() {
    let s = TestServer::start().await;
    let session = s.session(json!({"agent": {"model": "m"}, "environment": {"type": "none"}})).await;
    let sid = session["id"].as_str().unwrap();
    assert_eq!(scrape(&s).await.value("rebyte_event_stream_subscribers"), 0.0);
    let stream =
        s.http.get(s.url(&format!("/v1/agents/sessions/{sid}/events"))).bearer_auth(&s.key).send().await.unwrap();
    assert_eq!(stream.status(), StatusCode::OK);
    let open = scrape_until(&s, |now| now.value("rebyte_event_stream_subscribers") == 1.0).await;
    assert_eq!(open.value("rebyte_event_stream_subscribers"), 1.0);
    drop(stream);
    let closed = scrape_until(&s, |now| now.value("rebyte_event_stream_subscribers") == 0.0).await;
    assert_eq!(closed.value("rebyte_event_stream_subscribers"), 0.0);
}

#[tokio::test]
async fn a_failed_setup_is_a_setup_failure_and_its_turn_a_failed_turn() {
    let model =
        ModelServer::with_script(vec![Step::tool_call("shell", json!({"command": "echo never"}))]).await.unwrap();
    let s = TestServer::with_model(&model).await;
    let body = json!({"agent": {"model": "m"},
                      "environment": {"type": "openai_hosted", "setup_commands": [{"command": "exit 3"}]}});
    let run = Observed::turn(&s, body, "Try the shell").await;
    assert_eq!(run.turn["status"], "failed", "{}", run.turn);
    let (after, moved) = (&run.after, |key: &str| run.moved(key));
    assert_eq!(moved(r#"rebyte_turns_total{status="failed"}"#), 1.0);
    assert_eq!(moved(r#"rebyte_turns_total{status="completed"}"#), 0.0);
    assert_eq!(moved("rebyte_environment_setup_failures_total"), 1.0);
    assert_eq!(moved("rebyte_environment_setup_duration_seconds_count"), 1.0);
    assert_eq!(moved("rebyte_sandbox_first_use_seconds_count"), 0.0, "the sandbox never became usable");
    assert_eq!(after.value(r#"rebyte_sandboxes{state="running"}"#), 0.0);
    // The shell call never ran: no item, no tool call counted.
    assert_eq!(moved(r#"rebyte_tool_calls_total{kind="shell",outcome="completed"}"#), 0.0);
    assert_eq!(moved(r#"rebyte_tool_calls_total{kind="shell",outcome="failed"}"#), 0.0);
}

#[tokio::test]
async fn a_client_function_call_counts_under_its_outcome() {
    let model = ModelServer::with_script(vec![Step::tool_call("lookup", json!({})), Step::text("Found nothing.")])
        .await
        .unwrap();
    let s = TestServer::with_model(&model).await;
    let lookup =
        json!({"type": "function", "name": "lookup", "description": "Looks up.", "parameters": {"type": "object"}});
    let session = s.session(json!({"agent": {"model": "m", "tools": [lookup]}, "environment": {"type": "none"}})).await;
    let sid = session["id"].as_str().unwrap();
    let before = scrape(&s).await;
    let turn_id = s.send(sid, "Look it up").await;
    s.wait_turn_status(sid, &turn_id, &["waiting"]).await;
    let (_, waiting) = s.get(&format!("/v1/agents/sessions/{sid}")).await;
    let call_id = waiting["required_actions"][0]["call_id"].as_str().unwrap().to_string();
    let result = json!({"events": [{"type": "agent.session.input.tool_result", "turn_id": turn_id,
                                    "call_id": call_id, "success": false, "error": "no such entry"}]});
    let (status, body) = s.post(&format!("/v1/agents/sessions/{sid}/events"), result).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(s.wait_turn(sid, &turn_id).await["status"], "completed");
    let after = scrape(&s).await;
    let moved = |key: &str| after.since(&before, key);
    assert_eq!(moved(r#"rebyte_tool_calls_total{kind="function",outcome="failed"}"#), 1.0);
    assert_eq!(moved(r#"rebyte_tool_calls_total{kind="function",outcome="completed"}"#), 0.0);
    assert_eq!(moved(r#"rebyte_turns_total{status="completed"}"#), 1.0);
}
