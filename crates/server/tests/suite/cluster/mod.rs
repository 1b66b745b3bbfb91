//! Several nodes on one PostgreSQL database (skipped on SQLite, one
//! process's file): any node answers, the node that holds a session's lease
//! runs its turns, events fan out across nodes, a revoked key stops working
//! everywhere, and a node killed mid-turn is survived (one cut off from the
//! database past its lease has its late writes refused: [`fence`]).

mod fence;

use crate::support::{Scratch, TestServer, models_toml, open_stream, read_until, rebyte_bin, test_database, types};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use test_support::model_server::{ModelServer, Step};

/// A second node on the database of `a` (its own data directory, the same master key).
async fn second_node(a: &TestServer, id: &str, toml: Option<String>) -> TestServer {
    let url = test_database(a.dir.path()).unwrap();
    let master = a.dir.path().join("master.key");
    let key = a.key.clone();
    let id = id.to_string();
    TestServer::start_with(move |c| {
        c.database_url = Some(url);
        c.master_key_file = Some(master);
        c.bootstrap_key = Some(key);
        c.node_id = Some(id);
        c.models_toml = toml;
    })
    .await
}

/// The first node, `id`, with the models of `toml`; `None` on SQLite.
async fn first_node(id: &str, toml: &str) -> Option<TestServer> {
    let (id, toml) = (id.to_string(), toml.to_string());
    let a = TestServer::start_with(|c| {
        c.models_toml = Some(toml);
        c.node_id = Some(id);
    })
    .await;
    test_database(a.dir.path())?;
    Some(a)
}

/// Two nodes sharing `model`; `None` on SQLite.
async fn two_nodes(model: &ModelServer) -> Option<(TestServer, TestServer)> {
    let toml = models_toml(model);
    let a = first_node("node-a", &toml).await?;
    let b = second_node(&a, "node-b", Some(toml)).await;
    Some((a, b))
}

#[tokio::test]
async fn a_turn_on_one_node_streams_to_a_subscriber_on_another_and_replays_there() {
    let model = ModelServer::with_script([Step::text("Hello from node a").chunks(4)]).await.unwrap();
    let Some((a, b)) = two_nodes(&model).await else { return };
    let session = a.session(json!({"agent": {"model": "m"}, "environment": {"type": "none"}})).await;
    let sid = session["id"].as_str().unwrap().to_string();
    // b's subscriber first; then the turn, sent to (and so run by) a.
    let (live, turn_id) = tokio::join!(
        async { read_until(open_stream(&b, &sid).await, |e| e["type"] == "agent.session.turn.completed").await },
        async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            a.send(&sid, "hi").await
        }
    );
    assert_eq!(a.wait_turn(&sid, &turn_id).await["status"], "completed");
    let kinds = types(&live);
    assert!(kinds.contains(&"agent.session.turn.output_text.delta".to_string()), "{kinds:?}");
    let texts: String = live
        .iter()
        .filter(|e| e["type"] == "agent.session.turn.output_text.delta")
        .filter_map(|e| e["delta"].as_str())
        .collect();
    assert_eq!(texts, "Hello from node a");
    // In order, and exactly what either node replays from the database.
    let ids: Vec<&str> = live.iter().map(|e| e["event_id"].as_str().unwrap()).collect();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted, "ascending ids");
    let replay_a = a.events(&sid).await;
    let replay_b = b.events(&sid).await;
    assert_eq!(replay_a, replay_b);
    let from = replay_a.iter().position(|e| e["event_id"] == live[0]["event_id"]).unwrap();
    assert_eq!(live, replay_a[from..from + live.len()].to_vec());
}

#[tokio::test]
async fn input_function_results_and_cancels_sent_to_another_node_reach_the_running_turn() {
    let model = ModelServer::with_script([
        Step::tool_call("now", json!({})),
        Step::text("It is noon."),
        Step::text("slow").latency(Duration::from_millis(800)),
        Step::text("queued answer"),
        Step::stall(),
    ])
    .await
    .unwrap();
    let Some((a, b)) = two_nodes(&model).await else { return };
    let tool = json!({"type": "function", "name": "now", "description": "The time", "parameters": {"type": "object", "properties": {}}});
    let session = a.session(json!({"agent": {"model": "m", "tools": [tool]}, "environment": {"type": "none"}})).await;
    let sid = session["id"].as_str().unwrap().to_string();
    let events = format!("/v1/agents/sessions/{sid}/events");

    // A turn waiting on a (it holds the session) takes the function's result sent to b.
    let t1 = a.send(&sid, "what time is it?").await;
    let waiting = a.wait_turn_status(&sid, &t1, &["waiting"]).await;
    assert_eq!(waiting["status"], "waiting");
    let (_, s) = b.get(&format!("/v1/agents/sessions/{sid}")).await;
    assert_eq!(s["status"], "requires_action", "b sees a's state: {s}");
    let call_id = s["required_actions"][0]["call_id"].as_str().unwrap().to_string();
    let result = json!({"events": [{"type": "agent.session.input.tool_result", "turn_id": t1, "call_id": call_id,
                                    "success": true, "output": "12:00"}]});
    let (status, body) = b.post(&events, result.clone()).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(b.wait_turn(&sid, &t1).await["status"], "completed");
    // A second answer is refused on b exactly as on one node.
    let (status, again) = b.post(&events, result).await;
    assert_eq!(
        (status, again["error"]["message"].as_str()),
        (StatusCode::BAD_REQUEST, Some(&*format!("Unknown pending tool call: {call_id}")))
    );

    // Input to b while a runs a turn becomes the next turn, run after it.
    let t2 = a.send(&sid, "slow one").await;
    a.wait_turn_status(&sid, &t2, &["in_progress"]).await;
    let t3 = b.send(&sid, "and then").await;
    let (_, queued) = b.get(&format!("/v1/agents/sessions/{sid}/turns/{t3}")).await;
    assert_eq!(queued["status"], "queued", "{queued}");
    let (second, third) = (a.wait_turn(&sid, &t2).await, b.wait_turn(&sid, &t3).await);
    assert_eq!((second["status"].as_str(), third["status"].as_str()), (Some("completed"), Some("completed")));
    assert!(third["started_at"].as_i64() >= second["completed_at"].as_i64());

    // A cancel sent to a reaches a stalled turn that b runs (b took the idle session).
    let t4 = b.send(&sid, "stall").await;
    b.wait_turn_status(&sid, &t4, &["in_progress"]).await;
    let started = Instant::now();
    let (status, body) = a.post(&events, json!({"events": [{"type": "agent.session.input.cancel"}]})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(a.wait_turn(&sid, &t4).await["status"], "cancelled");
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    // With nothing to cancel, the same error as one node's.
    let (status, body) = a.post(&events, json!({"events": [{"type": "agent.session.input.cancel"}]})).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::BAD_REQUEST, Some("no_active_turn")), "{body}");
}

#[tokio::test]
async fn a_hundred_concurrent_inputs_spread_over_two_nodes_become_a_hundred_turns_in_one_order() {
    let model = ModelServer::with_script([Step::text("ok")]).await.unwrap();
    model.set_looping(true);
    let Some((a, b)) = two_nodes(&model).await else { return };
    let session = a.session(json!({"agent": {"model": "m"}, "environment": {"type": "none"}})).await;
    let sid = session["id"].as_str().unwrap().to_string();
    let path = format!("/v1/agents/sessions/{sid}/events");
    let sends = (0..100).map(|i| {
        let node = if i % 2 == 0 { &a } else { &b };
        let body = json!({"events": [{"type": "agent.session.input.message",
            "input": [{"role": "user", "content": [{"type": "input_text", "text": format!("input {i}")}]}]}]});
        let path = path.clone();
        async move { node.post(&path, body).await }
    });
    for (status, body) in futures::future::join_all(sends).await {
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    let turns = loop {
        let (_, turns) = b.get(&format!("/v1/agents/sessions/{sid}/turns?limit=100&order=asc")).await;
        let turns = turns["data"].as_array().unwrap().clone();
        if turns.len() == 100 && turns.iter().all(|t| t["status"] == "completed") {
            break turns;
        }
        assert!(Instant::now() < deadline, "{} turns, not all completed", turns.len());
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // One after another, never two at once.
    for pair in turns.windows(2) {
        assert!(pair[1]["started_at"].as_i64() >= pair[0]["completed_at"].as_i64(), "{pair:?}");
    }
    // Each input is exactly one turn's.
    let mut texts: Vec<String> = Vec::new();
    let mut after = String::new();
    loop {
        let (_, page) = a.get(&format!("/v1/agents/sessions/{sid}/items?limit=100&order=asc{after}")).await;
        let data = page["data"].as_array().unwrap_or_else(|| panic!("{page}"));
        texts.extend(
            data.iter()
                .filter(|i| i["role"] == "user")
                .filter_map(|i| i["content"][0]["text"].as_str().map(String::from)),
        );
        if page["has_more"] != true {
            break;
        }
        after = format!("&after={}", data.last().and_then(|i| i["id"].as_str()).unwrap());
    }
    texts.sort();
    let mut want: Vec<String> = (0..100).map(|i| format!("input {i}")).collect();
    want.sort();
    assert_eq!(texts, want);
}

#[tokio::test]
async fn a_key_revoked_on_one_node_stops_working_on_every_node_within_a_second() {
    let model = ModelServer::start().await.unwrap();
    let Some((a, b)) = two_nodes(&model).await else { return };
    let (status, org) = a.post("/v1/admin/organizations", json!({"name": "revoked"})).await;
    assert_eq!(status, StatusCode::OK, "{org}");
    let (status, created) =
        a.post("/v1/admin/keys", json!({"organization_id": org["id"], "scopes": ["tasks:read"]})).await;
    assert_eq!(status, StatusCode::OK, "{created}");
    let key = created["secret"].as_str().unwrap().to_string();
    let list = |s: &TestServer| {
        let (http, url, key) = (s.http.clone(), s.url("/v1/agents"), key.clone());
        async move { http.get(url).bearer_auth(key).send().await.unwrap().status() }
    };
    // Cached on b.
    assert_eq!(list(&b).await, StatusCode::OK);
    let id = created["id"].as_str().unwrap();
    let (status, body) = a.delete(&format!("/v1/admin/keys/{id}")).await;
    assert!(status.is_success(), "{body}");
    let revoked = Instant::now();
    while list(&b).await != StatusCode::UNAUTHORIZED {
        assert!(revoked.elapsed() < Duration::from_secs(1), "b still accepts the key");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A `rebyte serve` process on the database of `a` over the data directory
/// `dir/data`, its listening line read: the process and its base URL.
fn spawn_node(a: &TestServer, id: &str, toml: &str, dir: &std::path::Path) -> (std::process::Child, String) {
    let config = dir.join("rebyte.toml");
    std::fs::write(&config, toml).unwrap();
    let mut child = std::process::Command::new(rebyte_bin())
        .args(["serve", "--listen", "127.0.0.1:0", "--node-id", id])
        .arg("--data-dir")
        .arg(dir.join("data"))
        .arg("--database-url")
        .arg(test_database(a.dir.path()).unwrap())
        .arg("--master-key-file")
        .arg(a.dir.path().join("master.key"))
        .arg("--config")
        .arg(&config)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let url = test_support::process::listening_url(&mut child);
    (child, url)
}

/// A session created through the node at `url` with `input`, and its turn, once in progress.
async fn running_turn(a: &TestServer, url: &str, input: &str) -> (String, String) {
    let session: Value = reqwest::Client::new()
        .post(format!("{url}/v1/agents/sessions"))
        .bearer_auth(&a.key)
        .json(&json!({"agent": {"model": "m"}, "environment": {"type": "none"}, "input": input}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let sid = session["id"].as_str().expect("a session").to_string();
    let (_, turns) = a.get(&format!("/v1/agents/sessions/{sid}/turns")).await;
    let turn_id = turns["data"][0]["id"].as_str().unwrap().to_string();
    a.wait_turn_status(&sid, &turn_id, &["in_progress"]).await;
    (sid, turn_id)
}

/// The turn once it is no longer in progress, as `a` reads it (within `within`).
async fn settled_turn(a: &TestServer, sid: &str, turn_id: &str, within: Duration) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let (_, turn) = a.get(&format!("/v1/agents/sessions/{sid}/turns/{turn_id}")).await;
        if turn["status"] != "in_progress" {
            return turn;
        }
        assert!(Instant::now() < deadline, "the turn stayed in progress for {within:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_node_killed_mid_turn_is_survived_by_another() {
    let model = ModelServer::with_script([Step::stall(), Step::text("after the loss")]).await.unwrap();
    let toml = models_toml(&model);
    let Some(a) = first_node("survivor", &toml).await else { return };
    let dir = Scratch::new();
    let (mut doomed, url) = spawn_node(&a, "doomed", &toml, dir.path());
    let (sid, turn_id) = running_turn(&a, &url, "stall").await;
    doomed.kill().unwrap();
    doomed.wait().unwrap();
    let turn = settled_turn(&a, &sid, &turn_id, Duration::from_secs(15)).await;
    assert_eq!(turn["status"], "failed", "{turn}");
    assert_eq!(turn["error"]["code"], "internal_error", "{turn}");
    let message = turn["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("node_lost: ") && message.contains("'doomed'"), "{turn}");
    // The session takes new input on the surviving node, and nothing committed was lost.
    let next = a.send(&sid, "again").await;
    assert_eq!(a.wait_turn(&sid, &next).await["status"], "completed");
    let kinds = types(&a.events(&sid).await);
    for kind in ["agent.session.created", "agent.session.turn.created", "agent.session.turn.failed"] {
        assert!(kinds.contains(&kind.to_string()), "{kind} in {kinds:?}");
    }
}

#[tokio::test]
async fn an_environment_is_served_by_its_node_and_unavailable_while_that_node_is_gone() {
    use base64::Engine as _;
    let model = ModelServer::with_script([Step::text("ok")]).await.unwrap();
    model.set_looping(true);
    let toml = models_toml(&model);
    let Some(a) = first_node("keeper", &toml).await else { return };
    let dir = Scratch::new();
    let (mut home, url) = spawn_node(&a, "home", &toml, dir.path());
    let http = reqwest::Client::new();
    let created = http
        .post(format!("{url}/v1/agents/environments"))
        .bearer_auth(&a.key)
        .json(&json!({"environment": {"type": "openai_hosted"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    let env: Value = created.json().await.unwrap();
    let id = env["id"].as_str().unwrap().to_string();
    let files = format!("/v1/agents/environments/{id}/files");

    // A file written through a lands in home's sandbox; either node lists it.
    let data = base64::engine::general_purpose::STANDARD.encode("hello");
    let (status, file) = a.post(&files, json!({"type": "inline", "path": "/workspace/a.txt", "data": data})).await;
    assert_eq!(status, StatusCode::OK, "{file}");
    let (_, through_a) = a.get(&files).await;
    let through_home: Value =
        http.get(format!("{url}{files}")).bearer_auth(&a.key).send().await.unwrap().json().await.unwrap();
    assert_eq!(through_a, through_home);
    assert_eq!(through_a["data"][0]["path"], "/workspace/a.txt", "{through_a}");
    assert!(dir.path().join("data/environments").join(&id).join("workspace/a.txt").exists(), "on home's disk");
    assert!(!a.dir.path().join("environments").join(&id).exists(), "not on a's");
    // A forged forward is refused.
    let forged = http
        .get(a.url(&files))
        .bearer_auth(&a.key)
        .header("x-rebyte-node", "home")
        .header("x-rebyte-node-time", "0")
        .header("x-rebyte-node-signature", "00")
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), StatusCode::UNAUTHORIZED);

    // A session on it, whose input a takes, runs its turn on home.
    let session =
        a.session(json!({"agent": {"model": "m"}, "environment": {"type": "reference", "environment_id": id}})).await;
    let sid = session["id"].as_str().unwrap().to_string();
    let turn = a.send(&sid, "hi").await;
    assert_eq!(a.wait_turn(&sid, &turn).await["status"], "completed");

    // home is killed: the environment is unavailable, naming its node, and the session says so.
    home.kill().unwrap();
    home.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let gone = loop {
        let answer = a.get(&files).await;
        if answer.0 != StatusCode::OK {
            break answer;
        }
        assert!(Instant::now() < deadline, "home is still taken for alive");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(gone.0, StatusCode::SERVICE_UNAVAILABLE, "{}", gone.1);
    // Until its heartbeat is overdue, home is unreachable rather than known gone: a waits for that.
    while a.get("/readyz").await.1["nodes"].as_array().unwrap().iter().any(|n| n["id"] == "home" && n["alive"] == true)
    {
        assert!(Instant::now() < deadline, "home is still taken for alive");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(gone.1["error"]["code"], "environment_unavailable");
    assert!(gone.1["error"]["message"].as_str().unwrap().contains("node 'home'"), "{}", gone.1);
    let body = json!({"events": [{"type": "agent.session.input.message",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "again"}]}]}]});
    let (status, refused) = a.post(&format!("/v1/agents/sessions/{sid}/events"), body).await;
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, Some("environment_unavailable"))
    );
    let kinds = types(&a.events(&sid).await);
    assert!(kinds.contains(&"agent.session.environment.disconnected".to_string()), "{kinds:?}");

    // home comes back (its id, its data directory): so do the environment and its file.
    let (mut back, _url) = spawn_node(&a, "home", &toml, dir.path());
    let (status, listed) = a.get(&files).await;
    assert_eq!(status, StatusCode::OK, "{listed}");
    assert_eq!(listed["data"][0]["path"], "/workspace/a.txt");
    let turn = a.send(&sid, "back").await;
    assert_eq!(a.wait_turn(&sid, &turn).await["status"], "completed");
    back.kill().unwrap();
    back.wait().unwrap();
}
