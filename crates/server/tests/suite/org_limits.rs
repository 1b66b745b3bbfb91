//! Per-organization limits (issue 17, item 3): a request rate and a ceiling
//! on active turns, each a 429 with `Retry-After` that names the limit, for
//! one organization only; nothing of a refused request is applied.

use crate::support::{TestServer, assert_error};
use reqwest::{Method, StatusCode};
use serde_json::json;
use std::time::Duration;
use test_support::model_server::{ModelServer, Step};

#[tokio::test]
async fn an_organization_past_its_request_rate_gets_429_with_retry_after_and_others_do_not() {
    let s = TestServer::start_with(|c| {
        c.limits = server::OrgLimits { requests_per_second: Some(2.0), request_burst: 3, ..server::OrgLimits::none() }
    })
    .await;
    // Another organization's bucket is its own (made first: these count too).
    let (_, other) = s.org_with_key("other", &["tasks:read", "tasks:write"]).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    for _ in 0..3 {
        assert_eq!(s.get("/v1/agents").await.0, StatusCode::OK);
    }
    let resp = s.http.get(s.url("/v1/agents")).bearer_auth(&s.key).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry_after: u64 = resp.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=2).contains(&retry_after), "{retry_after}");
    assert!(resp.headers().get("x-should-retry").is_none(), "the client may retry after the wait");
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_error(
        &(StatusCode::TOO_MANY_REQUESTS, body.clone()),
        StatusCode::TOO_MANY_REQUESTS,
        "rate_limit_error",
        None,
    );
    assert_eq!(body["error"]["code"], "rate_limit_exceeded", "{body}");

    // A refused create creates nothing.
    let refused = s.post("/v1/agents", json!({"model": "m"})).await;
    assert_eq!(refused.0, StatusCode::TOO_MANY_REQUESTS, "{}", refused.1);
    assert_eq!(s.call_as(Some(&other), Method::GET, "/v1/agents", None).await.0, StatusCode::OK);
    // No key: the usual 401, not a 429.
    assert_eq!(s.call_as(None, Method::GET, "/v1/agents", None).await.0, StatusCode::UNAUTHORIZED);

    tokio::time::sleep(Duration::from_millis(1600)).await;
    let (status, agents) = s.get("/v1/agents").await;
    assert_eq!(status, StatusCode::OK, "the bucket refills at the rate");
    assert_eq!(agents["data"].as_array().unwrap().len(), 0, "the refused create made no agent");
}

#[tokio::test]
async fn an_organization_at_its_active_turn_limit_gets_429_until_a_turn_ends() {
    let slow = || Step::text("done").latency(Duration::from_millis(1500));
    let model = ModelServer::with_script(vec![slow(), slow(), Step::text("third")]).await.unwrap();
    let toml = crate::support::models_toml(&model);
    let s = TestServer::start_with(|c| {
        c.models_toml = Some(toml);
        c.limits = server::OrgLimits { active_turns: Some(2), ..server::OrgLimits::none() };
    })
    .await;
    let mut sessions = Vec::new();
    for _ in 0..3 {
        let session = s.session(json!({"agent": {"model": "m"}, "environment": {"type": "none"}})).await;
        sessions.push(session["id"].as_str().unwrap().to_string());
    }
    let first = s.send(&sessions[0], "one").await;
    let _second = s.send(&sessions[1], "two").await;
    let body = json!({"events": [{"type": "agent.session.input.message",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "three"}]}]}]});
    let path = format!("/v1/agents/sessions/{}/events", sessions[2]);
    let resp = s.http.post(s.url(&path)).bearer_auth(&s.key).json(&body).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(resp.headers()["retry-after"], "1");
    let err: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(
        (err["error"]["type"].as_str(), err["error"]["code"].as_str()),
        (Some("rate_limit_error"), Some("too_many_active_turns")),
        "{err}"
    );
    let (_, turns) = s.get(&format!("/v1/agents/sessions/{}/turns", sessions[2])).await;
    assert_eq!(turns["data"].as_array().unwrap().len(), 0, "nothing of the refused input was applied");

    assert_eq!(s.wait_turn(&sessions[0], &first).await["status"], "completed");
    let (status, answer) = s.post(&path, body).await;
    assert_eq!(status, StatusCode::ACCEPTED, "room again once a turn ended: {answer}");
}

#[tokio::test]
async fn an_organization_at_its_sandbox_limit_gets_429_until_one_is_deleted() {
    let s = TestServer::start_with(|c| {
        c.limits = server::OrgLimits { live_sandboxes: Some(2), ..server::OrgLimits::none() }
    })
    .await;
    let mut envs = Vec::new();
    for _ in 0..3 {
        let (status, env) = s.post("/v1/agents/environments", json!({"environment": {"type": "openai_hosted"}})).await;
        assert_eq!(status, StatusCode::CREATED, "{env}");
        envs.push(env["id"].as_str().unwrap().to_string());
    }
    let write = |env: &str| {
        let body = json!({"type": "inline", "path": "/workspace/f.txt", "data": "eA=="});
        (format!("/v1/agents/environments/{env}/files"), body)
    };
    for env in &envs[..2] {
        let (path, body) = write(env);
        assert_eq!(s.post(&path, body).await.0, StatusCode::OK, "the first two sandboxes start");
    }
    let (path, body) = write(&envs[2]);
    let resp = s.http.post(s.url(&path)).bearer_auth(&s.key).json(&body).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(resp.headers()["retry-after"], "5");
    let err: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(err["error"]["code"], "too_many_sandboxes", "{err}");
    let (_, env) = s.get(&format!("/v1/agents/environments/{}", envs[2])).await;
    assert_eq!(env["status"], "pending", "a refused start is not a failed environment: {env}");

    // Restarting one of the two is not a third.
    let restart = s.post(&format!("/v1/agents/environments/{}/restart", envs[0]), json!({})).await;
    assert_eq!(restart.0, StatusCode::OK, "{}", restart.1);
    // Another organization has its own count.
    let (_, other) = s.org_with_key("other", &["tasks:read", "tasks:write"]).await;
    let theirs = s
        .call_as(
            Some(&other),
            Method::POST,
            "/v1/agents/environments",
            Some(json!({"environment": {"type": "openai_hosted"}})),
        )
        .await;
    let (path, body) = write(theirs.1["id"].as_str().unwrap());
    assert_eq!(s.call_as(Some(&other), Method::POST, &path, Some(body)).await.0, StatusCode::OK);

    assert_eq!(s.delete(&format!("/v1/agents/environments/{}", envs[1])).await.0, StatusCode::OK);
    let (path, body) = write(&envs[2]);
    assert_eq!(s.post(&path, body).await.0, StatusCode::OK, "room again once one was deleted");
}
