//! MCP credentials in turns: session-level inline `authorization` and `headers` (sealed at rest,
//! never shown), a vault `static_bearer`, and an `mcp_oauth` token refreshed once after a 401.

use super::{NodeServer, http_tool, mcp_calls, run_turn, setup, tool_result, turn_items};
use crate::suite::vaults::{OauthServer, credential, in_seconds, vault};
use reqwest::StatusCode;
use serde_json::{Value, json};
use test_support::model_server::{ScriptedToolCall, Step};

fn call(id: &str, name: &str, arguments: Value) -> Step {
    Step::tool_calls([ScriptedToolCall::new(name, arguments).id(id)])
}

/// Every file of the data directory that may hold the session (the SQLite file and its WAL).
fn stored_bytes(s: &crate::support::TestServer) -> Vec<(String, Vec<u8>)> {
    std::fs::read_dir(s.dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("rebyte.db"))
        .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap()))
        .collect()
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[tokio::test]
async fn inline_session_authorization_reaches_the_server_and_is_never_shown_or_stored_in_the_clear() {
    let fixture = NodeServer::auth_fixture().await;
    let (model, s) = setup(vec![
        call("c1", "call_tool", json!({"server": "company", "name": "add_tool", "arguments": {"name": "first"}})),
        Step::text("one"),
        call("c2", "call_tool", json!({"server": "company", "name": "add_tool", "arguments": {"name": "second"}})),
        Step::text("two"),
    ])
    .await;
    let mut tool = http_tool("company", &fixture.url, true);
    tool["transport"]["authorization"] = json!("Bearer s3cret-token");
    tool["transport"]["headers"] = json!({"X-Tenant": "acme"});
    let (status, created) = s
        .post("/v1/agents/sessions", json!({"agent": {"model": "m", "tools": [tool]}, "environment": {"type": "none"}}))
        .await;
    assert_eq!(status, StatusCode::OK, "{created}");
    let sid = created["id"].as_str().unwrap().to_string();
    assert_eq!(
        created["agent"]["tools"][0]["transport"],
        json!({"type": "http", "server_url": fixture.url, "headers": {}})
    );

    // The fixture answers 401 without both: the turn completing proves they reached it.
    let (turn_id, turn) = run_turn(&s, &sid, "first").await;
    assert_eq!(turn["status"], "completed", "{turn}");
    assert_eq!(tool_result(&model.requests()[1].body, "c1"), "added first");
    // An update that leaves the tools alone keeps the sealed secrets.
    let (status, _) = s.post(&format!("/v1/agents/sessions/{sid}"), json!({"metadata": {"k": "v"}})).await;
    assert_eq!(status, StatusCode::OK);
    let (_, turn) = run_turn(&s, &sid, "second").await;
    assert_eq!(turn["status"], "completed", "{turn}");
    assert_eq!(tool_result(&model.requests()[3].body, "c2"), "added second");

    let mut shown = vec![
        created,
        s.get(&format!("/v1/agents/sessions/{sid}")).await.1,
        s.get("/v1/agents/sessions").await.1,
        s.get(&format!("/v1/agents/sessions/{sid}/items")).await.1,
        s.get(&format!("/v1/responses/resp_{turn_id}")).await.1,
        s.get(&format!("/v1/conversations/conv_{sid}/items")).await.1,
    ];
    shown.extend(s.events(&sid).await);
    for answer in &shown {
        let text = answer.to_string();
        assert!(!text.contains("s3cret-token") && !text.contains("X-Tenant"), "a secret was shown: {text}");
    }
    for (file, bytes) in stored_bytes(&s) {
        assert!(!contains(&bytes, "s3cret-token"), "{file} holds the authorization in the clear");
    }

    // Deleting the session ends its MCP session upstream, with the session's credentials.
    assert_eq!(s.delete(&format!("/v1/agents/sessions/{sid}")).await.0, StatusCode::OK);
    let stats = fixture.stats().await;
    assert_eq!(stats["deletes"], 1, "{stats}");
    assert_eq!(stats["lastDelete"]["authorization"], "Bearer s3cret-token");
}

#[tokio::test]
async fn saved_agents_still_refuse_inline_secrets_but_a_session_may_add_them() {
    let fixture = NodeServer::auth_fixture().await;
    let (model, s) = setup(vec![
        call("c1", "call_tool", json!({"server": "company", "name": "add_tool", "arguments": {"name": "x"}})),
        Step::text("ok"),
    ])
    .await;
    let agent = s.agent(json!({"model": "m", "tools": [http_tool("company", &fixture.url, true)]})).await;
    let mut tool = http_tool("company", &fixture.url, true);
    tool["transport"]["authorization"] = json!("Bearer s3cret-token");
    tool["transport"]["headers"] = json!({"X-Tenant": "acme"});
    let session =
        s.session(json!({"agent_id": agent["id"], "agent": {"tools": [tool]}, "environment": {"type": "none"}})).await;
    let sid = session["id"].as_str().unwrap();
    let (_, turn) = run_turn(&s, sid, "go").await;
    assert_eq!(turn["status"], "completed", "{turn}");
    assert_eq!(tool_result(&model.requests()[1].body, "c1"), "added x");
    let (_, saved) = s.get(&format!("/v1/agents/{}", agent["id"].as_str().unwrap())).await;
    assert!(!saved.to_string().contains("s3cret-token"), "not copied into the saved agent: {saved}");
}

#[tokio::test]
async fn a_vault_static_bearer_reaches_the_server_matched_by_its_url() {
    let fixture = NodeServer::auth_fixture().await;
    let (model, s) = setup(vec![
        call("c1", "call_tool", json!({"server": "company", "name": "whoami", "arguments": {}})),
        Step::text("ok"),
    ])
    .await;
    let v = vault(&s).await;
    credential(&s, &v, json!({"type": "static_bearer", "token": "s3cret-token", "mcp_server_url": fixture.url})).await;
    // The token comes from the vault; the tenant header is the session's own.
    let mut tool = http_tool("company", &fixture.url, true);
    tool["transport"]["headers"] = json!({"X-Tenant": "acme"});
    let session = s
        .session(json!({"agent": {"model": "m", "tools": [tool]}, "environment": {"type": "none"}, "vault_ids": [v]}))
        .await;
    let sid = session["id"].as_str().unwrap();
    let (turn_id, turn) = run_turn(&s, sid, "who am I?").await;
    assert_eq!(turn["status"], "completed", "{turn}");
    let seen: Value = serde_json::from_str(&tool_result(&model.requests()[1].body, "c1")).unwrap();
    assert_eq!(seen, json!({"authorization": "Bearer s3cret-token", "tenant": "acme"}));
    assert_eq!(mcp_calls(&turn_items(&s, sid, &turn_id).await)[0]["status"], "completed");
}

#[tokio::test]
async fn an_oauth_token_refused_with_401_is_refreshed_once_and_the_connection_retried() {
    let oauth = OauthServer::start().await;
    oauth.accept("refresh-1");
    let mcp = NodeServer::bearer("issued-access-").await;
    let (model, s) = setup(vec![
        call("c1", "call_tool", json!({"server": "api", "name": "whoami", "arguments": {}})),
        Step::text("ok"),
    ])
    .await;
    let v = vault(&s).await;
    let auth = json!({"type": "mcp_oauth", "access_token": "revoked-upstream", "mcp_server_url": mcp.url,
        "expires_at": in_seconds(3600), "refresh": {"client_id": "rebyte", "refresh_token": "refresh-1",
        "token_endpoint": oauth.url(), "token_endpoint_auth": {"type": "none"}}});
    let cred = credential(&s, &v, auth).await;
    let mut tool = http_tool("api", &mcp.url, true);
    tool["credential_id"] = cred["id"].clone();
    let session = s
        .session(json!({"agent": {"model": "m", "tools": [tool]}, "environment": {"type": "none"}, "vault_ids": [v]}))
        .await;
    let sid = session["id"].as_str().unwrap();
    let (_, turn) = run_turn(&s, sid, "who am I?").await;
    assert_eq!(turn["status"], "completed", "{turn}");
    assert_eq!(oauth.calls(), 1, "one forced refresh");
    let seen: Value = serde_json::from_str(&tool_result(&model.requests()[1].body, "c1")).unwrap();
    assert_eq!(seen["authorization"], format!("Bearer {}", oauth.last_issued()));
    assert!(mcp.stats().await["unauthorized"].as_u64().unwrap() >= 1, "the stale token was refused first");
}

#[tokio::test]
async fn a_call_refused_with_401_mid_session_refreshes_the_token_and_is_retried_once() {
    let oauth = OauthServer::start().await;
    oauth.accept("refresh-1");
    let mcp = NodeServer::bearer("issued-access-").await;
    let whoami = |id| call(id, "call_tool", json!({"server": "api", "name": "whoami", "arguments": {}}));
    let (model, s) = setup(vec![whoami("c1"), Step::text("one"), whoami("c2"), Step::text("two")]).await;
    let v = vault(&s).await;
    let auth = json!({"type": "mcp_oauth", "access_token": "issued-access-initial", "mcp_server_url": mcp.url,
        "expires_at": in_seconds(3600), "refresh": {"client_id": "rebyte", "refresh_token": "refresh-1",
        "token_endpoint": oauth.url(), "token_endpoint_auth": {"type": "none"}}});
    credential(&s, &v, auth).await;
    let session = s
        .session(json!({"agent": {"model": "m", "tools": [http_tool("api", &mcp.url, true)]},
                        "environment": {"type": "none"}, "vault_ids": [v]}))
        .await;
    let sid = session["id"].as_str().unwrap();
    let (_, turn) = run_turn(&s, sid, "first").await;
    assert_eq!(turn["status"], "completed", "{turn}");
    let seen: Value = serde_json::from_str(&tool_result(&model.requests()[1].body, "c1")).unwrap();
    assert_eq!(seen["authorization"], "Bearer issued-access-initial");
    assert_eq!(oauth.calls(), 0);

    // The server revokes the token it accepted; the next turn reuses the session's connection.
    let revoked =
        reqwest::Client::new().post(format!("{}/revoke?token=issued-access-initial", mcp.base)).send().await.unwrap();
    assert!(revoked.status().is_success());
    let (turn_id, turn) = run_turn(&s, sid, "second").await;
    assert_eq!(turn["status"], "completed", "{turn}");
    assert_eq!(oauth.calls(), 1, "one forced refresh");
    let seen: Value = serde_json::from_str(&tool_result(&model.requests()[3].body, "c2")).unwrap();
    assert_eq!(seen["authorization"], format!("Bearer {}", oauth.last_issued()));
    let calls = mcp_calls(&turn_items(&s, sid, &turn_id).await);
    assert_eq!(calls.len(), 1, "the retried call is one item: {calls:?}");
    assert_eq!(calls[0]["status"], "completed");
}

#[tokio::test]
async fn deleting_the_session_as_a_conversation_also_ends_its_mcp_session_upstream() {
    let fixture = NodeServer::auth_fixture().await;
    let (_model, s) = setup(vec![
        call("c1", "call_tool", json!({"server": "company", "name": "add_tool", "arguments": {"name": "x"}})),
        Step::text("ok"),
    ])
    .await;
    let mut tool = http_tool("company", &fixture.url, true);
    tool["transport"]["authorization"] = json!("Bearer s3cret-token");
    tool["transport"]["headers"] = json!({"X-Tenant": "acme"});
    let session = s.session(json!({"agent": {"model": "m", "tools": [tool]}, "environment": {"type": "none"}})).await;
    let sid = session["id"].as_str().unwrap();
    let (_, turn) = run_turn(&s, sid, "go").await;
    assert_eq!(turn["status"], "completed", "{turn}");
    assert_eq!(s.delete(&format!("/v1/conversations/conv_{sid}")).await.0, StatusCode::OK);
    assert_eq!(fixture.stats().await["deletes"], 1);
}
