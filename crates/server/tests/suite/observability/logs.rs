//! The `rebyte` binary's log lines (issue 10): one per request, per turn start and end, per
//! model retry, per environment setup step and per MCP connection that failed — as one JSON
//! object a line with `REBYTE_LOG_FORMAT=json`, as plain text (no colours on a pipe) with
//! `--log-format text` — and never a secret: not the API key, the model provider's key, the
//! master key, a vault secret or a session's MCP authorization.

use crate::suite::mcp::dead_url;
use crate::support::{Scratch, rebyte_bin, test_key};
use serde_json::{Value, json};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use test_support::model_server::{ModelServer, ScriptedUsage, Step};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// What the scenario planted and created, and what the server logged meanwhile.
struct Run {
    secrets: Vec<String>,
    org_id: String,
    session_id: String,
    turn_id: String,
    env_id: String,
    lines: Vec<String>,
}

/// `rebyte serve` on a fresh data directory with its stderr collected.
struct Served {
    // Killed when dropped.
    _child: Child,
    url: String,
    key: String,
    http: reqwest::Client,
    lines: Arc<Mutex<Vec<String>>>,
    // After the child: the killed server's mounts go, then its directory.
    _dir: Scratch,
}

impl Served {
    async fn start(args: &[&str], env: &[(&str, &str)]) -> Self {
        let dir = Scratch::new();
        let key = test_key("logs");
        let mut command = Command::new(rebyte_bin());
        command.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"]).arg(dir.path()).args(args);
        command.env("REBYTE_BOOTSTRAP_KEY", &key).env_remove("REBYTE_LOG").env_remove("REBYTE_LOG_FORMAT");
        command.envs(env.iter().copied());
        let mut child =
            command.stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true).spawn().expect("rebyte starts");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (sink, mut stderr) = (Arc::clone(&lines), BufReader::new(child.stderr.take().unwrap()).lines());
        tokio::spawn(async move {
            while let Ok(Some(line)) = stderr.next_line().await {
                sink.lock().unwrap().push(line);
            }
        });
        let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        let url = loop {
            let line = stdout.next_line().await.unwrap().expect("the server printed its address");
            if let Some(url) = line.strip_prefix("rebyte listening on ") {
                break url.to_string();
            }
        };
        Self { _child: child, url, key, http: reqwest::Client::new(), lines, _dir: dir }
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut request = self.http.request(method, format!("{}{path}", self.url)).bearer_auth(&self.key);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status();
        let text = response.text().await.unwrap();
        let body: Value = if text.is_empty() { Value::Null } else { serde_json::from_str(&text).unwrap() };
        assert!(status.is_success(), "{path}: {status} {body}");
        body
    }

    async fn post(&self, path: &str, body: Value) -> Value {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }

    async fn get(&self, path: &str) -> Value {
        self.call(reqwest::Method::GET, path, None).await
    }

    /// Waits (up to 60 s) until every one of `needles` is in some line.
    async fn wait_for(&self, needles: &[&str]) -> Vec<String> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let lines = self.lines.lock().unwrap().clone();
            if needles.iter().all(|n| lines.iter().any(|l| l.contains(n))) {
                return lines;
            }
            assert!(tokio::time::Instant::now() < deadline, "never logged all of {needles:?}:\n{}", lines.join("\n"));
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
}

/// Starts the server with `args` and `env`, and plants a secret wherever one goes: the API key,
/// the model provider's key, the master key, a vault credential and a session's MCP
/// authorization (to a server that is not there: its failure is logged). The model answers 503
/// once (a retry), then text; the session's environment runs one setup command.
async fn scenario(args: &[&str], env: &[(&str, &str)]) -> Run {
    let model = ModelServer::with_script(vec![
        Step::error(503, r#"{"error": {"message": "overloaded"}}"#),
        Step::text("Hello.").usage(ScriptedUsage {
            input_tokens: 5,
            output_tokens: 2,
            cached_tokens: 0,
            reasoning_tokens: 0,
        }),
    ])
    .await
    .unwrap();
    let planted = |tag: &str| format!("{tag}{}", uuid::Uuid::new_v4().simple());
    let (provider_key, vault_token, mcp_token) = (planted("sk-provider-"), planted("vault-"), planted("mcp-"));
    let master_key = format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple());
    let mut all_env = vec![
        ("OPENAI_BASE_URL", model.base_url()),
        ("OPENAI_API_KEY", provider_key.clone()),
        ("REBYTE_MASTER_KEY", master_key.clone()),
    ];
    all_env.extend(env.iter().map(|(k, v)| (*k, v.to_string())));
    let env: Vec<(&str, &str)> = all_env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let s = Served::start(args, &env).await;

    s.post("/v1/agents", json!({"model": "m-logged"})).await;
    let vault = s.post("/v1/vaults", json!({"name": "logged"})).await;
    let vault_id = vault["id"].as_str().unwrap();
    let auth = json!({"type": "static_bearer", "token": vault_token, "mcp_server_url": "https://mcp.example.com/mcp"});
    s.post(&format!("/v1/vaults/{vault_id}/credentials"), json!({"name": "b", "auth": auth})).await;
    let gone = json!({"type": "mcp", "server_label": "gone", "required": false,
        "transport": {"type": "http", "server_url": dead_url(), "authorization": format!("Bearer {mcp_token}")}});
    let session = s
        .post(
            "/v1/agents/sessions",
            json!({"agent": {"model": "m-logged", "tools": [gone]}, "vault_ids": [vault_id],
                   "environment": {"type": "openai_hosted", "setup_commands": [{"command": "echo set up"}]}}),
        )
        .await;
    let session_id = session["id"].as_str().unwrap().to_string();
    let env_id = session["environment"]["id"].as_str().unwrap().to_string();
    let message = json!({"events": [{"type": "agent.session.input.message",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "Hi"}]}]}]});
    s.post(&format!("/v1/agents/sessions/{session_id}/events"), message).await;
    let turns = s.get(&format!("/v1/agents/sessions/{session_id}/turns?limit=1")).await;
    let turn_id = turns["data"][0]["id"].as_str().unwrap().to_string();
    let keys = s.get("/v1/admin/keys").await;
    let org_id = keys["data"][0]["organization_id"].as_str().unwrap().to_string();
    let lines = s.wait_for(&["turn ended", "environment ready"]).await;
    let secrets = vec![s.key.clone(), provider_key, master_key, vault_token, mcp_token];
    Run { secrets, org_id, session_id, turn_id, env_id, lines }
}

fn assert_no_secret(run: &Run) {
    let all = run.lines.join("\n");
    for secret in &run.secrets {
        assert!(!all.contains(secret.as_str()), "a secret is in the log:\n{all}");
    }
}

#[tokio::test]
async fn with_rebyte_log_format_json_every_line_is_a_json_object_naming_what_happened() {
    let run = scenario(&[], &[("REBYTE_LOG_FORMAT", "json")]).await;
    assert_no_secret(&run);
    let events: Vec<Value> = run
        .lines
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    for e in &events {
        assert!(e["timestamp"].is_string() && e["level"].is_string() && e["target"].is_string(), "{e}");
        assert!(e["message"].is_string(), "{e}");
    }
    let find = |message: &str, matches: &dyn Fn(&Value) -> bool| -> Value {
        let found = events.iter().find(|e| e["message"] == message && matches(e));
        found.cloned().unwrap_or_else(|| panic!("no {message:?} line in\n{}", run.lines.join("\n")))
    };

    let request = find("request", &|e| e["route"] == "/v1/agents" && e["method"] == "POST");
    assert_eq!((&request["level"], &request["status"]), (&json!("INFO"), &json!(200)), "{request}");
    assert!(request["duration_ms"].as_f64().is_some_and(|d| d >= 0.0), "{request}");
    let templated = find("request", &|e| e["method"] == "POST" && e["status"] == 202);
    assert_eq!(templated["route"], "/v1/agents/sessions/{session_id}/events", "a template, never the raw path");

    let ids = |e: &Value| (e["org"].clone(), e["session"].clone(), e["turn"].clone(), e["model"].clone());
    let expected = (json!(run.org_id), json!(run.session_id), json!(run.turn_id), json!("m-logged"));
    let started = find("turn started", &|_| true);
    assert_eq!((ids(&started), &started["level"]), (expected.clone(), &json!("INFO")), "{started}");
    let ended = find("turn ended", &|_| true);
    assert_eq!((ids(&ended), &ended["status"]), (expected, &json!("completed")), "{ended}");
    assert!(ended["duration_ms"].as_f64().is_some_and(|d| d > 0.0), "{ended}");

    let retry = find("retrying model request", &|_| true);
    assert_eq!(
        (&retry["level"], &retry["provider"], &retry["status"]),
        (&json!("WARN"), &json!("openai"), &json!(503))
    );

    let mcp = find("MCP server failed to connect", &|_| true);
    assert_eq!((&mcp["level"], &mcp["server"], &mcp["required"]), (&json!("WARN"), &json!("gone"), &json!(false)));
    let error = mcp["error"].as_str().unwrap();
    assert!(error.contains("'gone'") && !error.contains("rmcp::"), "the cause, not internal type names: {error}");

    let step = find("environment setup step", &|e| e["command"] == "echo set up");
    assert_eq!(step["step"], "setup_commands[0]", "the step by name, beside its command: {step}");
    assert_eq!(step["environment"], run.env_id.as_str(), "{step}");
    let ready = find("environment ready", &|_| true);
    assert_eq!(ready["environment"], run.env_id.as_str(), "{ready}");
}

#[tokio::test]
async fn with_log_format_text_lines_are_plain_text_without_colours() {
    // The flag wins over the variable.
    let run = scenario(&["--log-format", "text"], &[("REBYTE_LOG_FORMAT", "json")]).await;
    assert_no_secret(&run);
    let all = run.lines.join("\n");
    assert!(!all.contains('\u{1b}'), "no ANSI escapes when stderr is not a terminal:\n{all}");
    assert!(run.lines.iter().all(|l| serde_json::from_str::<Value>(l).is_err()), "{all}");
    let line = |needles: &[&str]| {
        let found = run.lines.iter().find(|l| needles.iter().all(|n| l.contains(n)));
        found.unwrap_or_else(|| panic!("no line with {needles:?} in\n{all}")).clone()
    };
    let request = line(&["INFO", "request", "method=POST", "route=/v1/agents ", "status=200"]);
    assert!(request.contains("duration_ms="), "{request}");
    let (org, session, turn) =
        (format!("org={}", run.org_id), format!("session={}", run.session_id), format!("turn={}", run.turn_id));
    let ended = line(&["turn ended", &org, &session, &turn, "model=m-logged", "status=completed"]);
    assert!(ended.contains("duration_ms="), "{ended}");
    line(&["WARN", "retrying model request", "provider=openai", "status=503"]);
    line(&["WARN", "MCP server failed to connect", "server=gone"]);
    line(&["environment setup step", &format!("environment={}", run.env_id)]);
}
