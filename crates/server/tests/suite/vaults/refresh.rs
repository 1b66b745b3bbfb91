//! The credential resolver the MCP code calls: choosing a credential, OAuth
//! refresh before expiry and after a 401 (one at a time per credential),
//! revoked refresh tokens, rotation, and environment credentials.

use super::{OauthServer, credential, in_seconds, resolver, vault};
use crate::support::TestServer;
use base64::Engine as _;
use protocol::vault::VaultCredentialBinding;
use serde_json::{Value, json};
use server::credentials::CredentialError;

async fn org_of(s: &TestServer) -> String {
    s.get("/v1/admin/keys").await.1["data"][0]["organization_id"].as_str().unwrap().to_string()
}

fn oauth_auth(oauth: &OauthServer, expires_in: i64, refresh_token: &str) -> Value {
    json!({"type": "mcp_oauth", "access_token": "original-access", "mcp_server_url": "https://mcp.example.com/mcp",
        "expires_at": in_seconds(expires_in), "refresh": {"client_id": "the client", "refresh_token": refresh_token,
        "token_endpoint": oauth.url(), "scope": "tools", "resource": "https://mcp.example.com/",
        "token_endpoint_auth": {"type": "client_secret_basic", "client_secret": "s3cret:x"}}})
}

#[tokio::test]
async fn a_token_expiring_soon_is_refreshed_before_use_and_stored() {
    let oauth = OauthServer::start().await;
    oauth.accept("rt-1");
    let s = TestServer::start().await;
    let v = vault(&s).await;
    let c = credential(&s, &v, oauth_auth(&oauth, 30, "rt-1")).await;
    let creds = resolver(&s).await;
    let org = org_of(&s).await;
    let url = "https://MCP.example.com:443/mcp/";

    let got = creds.resolve_mcp(&org, std::slice::from_ref(&v), url, None).await.unwrap().unwrap();
    assert_eq!(got.credential_id, c["id"].as_str().unwrap());
    assert_eq!(got.token.expose(), oauth.last_issued());
    assert_eq!(got.authorization().expose(), format!("Bearer {}", oauth.last_issued()));
    assert_eq!(oauth.calls(), 1);
    let (form, auth) = oauth.state.requests.lock().unwrap()[0].clone();
    let field =
        |k: &str| form.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str()).unwrap_or_default().to_string();
    assert_eq!(
        (field("grant_type"), field("refresh_token"), field("scope"), field("resource")),
        ("refresh_token".into(), "rt-1".into(), "tools".into(), "https://mcp.example.com/".into())
    );
    let basic = base64::engine::general_purpose::STANDARD.encode("the+client:s3cret%3Ax");
    assert_eq!(auth, Some(format!("Basic {basic}")), "RFC 6749 2.3.1: form-encoded, then Basic");

    // The new expiry is stored and shown; the next use needs no refresh.
    let (_, shown) = s.get(&format!("/v1/vaults/{v}/credentials/{}", got.credential_id)).await;
    let expires = chrono::DateTime::parse_from_rfc3339(shown["auth"]["expires_at"].as_str().unwrap()).unwrap();
    assert!((expires.timestamp() - server::now() - 3600).abs() < 60, "{shown}");
    let again = creds.resolve_mcp(&org, std::slice::from_ref(&v), url, None).await.unwrap().unwrap();
    assert_eq!(again.token.expose(), got.token.expose());
    assert_eq!(oauth.calls(), 1);
}

#[tokio::test]
async fn a_401_forces_one_refresh_that_later_callers_reuse() {
    let oauth = OauthServer::start().await;
    oauth.accept("rt-1");
    *oauth.state.rotate.lock().unwrap() = true;
    let s = TestServer::start().await;
    let v = vault(&s).await;
    credential(&s, &v, oauth_auth(&oauth, 7200, "rt-1")).await;
    let (creds, org) = (resolver(&s).await, org_of(&s).await);

    let first =
        creds.resolve_mcp(&org, std::slice::from_ref(&v), "https://mcp.example.com/mcp", None).await.unwrap().unwrap();
    assert_eq!(first.token.expose(), "original-access", "far from expiry: no refresh");
    assert_eq!(oauth.calls(), 0);
    let fresh = creds.force_refresh(&org, &first).await.unwrap();
    assert_eq!((fresh.token.expose(), oauth.calls()), (oauth.last_issued().as_str(), 1));
    // A second caller that was rejected with the same old token gets the new one.
    let shared = creds.force_refresh(&org, &first).await.unwrap();
    assert_eq!((shared.token.expose(), oauth.calls()), (fresh.token.expose(), 1));
    // The token endpoint rotated the refresh token; the stored one is used next.
    let newer = creds.force_refresh(&org, &fresh).await.unwrap();
    assert_eq!(oauth.calls(), 2);
    assert_ne!(newer.token.expose(), fresh.token.expose());
    let presented =
        oauth.state.requests.lock().unwrap()[1].0.iter().find(|(k, _)| k == "refresh_token").unwrap().1.clone();
    assert!(presented.starts_with("rotated-refresh-0-"), "{presented}");
}

#[tokio::test]
async fn a_revoked_refresh_token_is_an_explicit_error_naming_the_credential() {
    let oauth = OauthServer::start().await;
    let s = TestServer::start().await;
    let v = vault(&s).await;
    let c = credential(&s, &v, oauth_auth(&oauth, -10, "revoked-rt")).await;
    let (creds, org) = (resolver(&s).await, org_of(&s).await);
    let err = creds.resolve_mcp(&org, &[v], "https://mcp.example.com/mcp", None).await.unwrap_err();
    assert!(matches!(err, CredentialError::RefreshFailed { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains(c["id"].as_str().unwrap()) && text.contains("invalid_grant"), "{text}");
    assert!(!text.contains("revoked-rt"), "{text}");
}

#[tokio::test]
async fn concurrent_refreshes_of_one_credential_are_single_flight() {
    let oauth = OauthServer::start().await;
    oauth.accept("rt-1");
    *oauth.state.delay.lock().unwrap() = std::time::Duration::from_millis(200);
    let s = TestServer::start().await;
    let v = vault(&s).await;
    credential(&s, &v, oauth_auth(&oauth, 10, "rt-1")).await;
    let (creds, org) = (resolver(&s).await, org_of(&s).await);
    let vaults = [v];
    let calls = (0..10).map(|_| creds.resolve_mcp(&org, &vaults, "https://mcp.example.com/mcp", None));
    let tokens: Vec<String> = futures::future::join_all(calls)
        .await
        .into_iter()
        .map(|r| r.unwrap().unwrap().token.expose().to_string())
        .collect();
    assert_eq!(oauth.calls(), 1, "one refresh for ten concurrent callers");
    assert!(tokens.iter().all(|t| *t == oauth.last_issued()), "{tokens:?}");
}

#[tokio::test]
async fn rotation_reaches_the_next_resolution() {
    let s = TestServer::start().await;
    let v = vault(&s).await;
    let c =
        credential(&s, &v, json!({"type": "static_bearer", "token": "t1", "mcp_server_url": "https://m.example.com"}))
            .await;
    let (creds, org) = (resolver(&s).await, org_of(&s).await);
    let old = creds.resolve_mcp(&org, std::slice::from_ref(&v), "https://m.example.com", None).await.unwrap().unwrap();
    assert_eq!(old.token.expose(), "t1");
    let path = format!("/v1/vaults/{v}/credentials/{}", c["id"].as_str().unwrap());
    assert_eq!(
        s.post(&path, json!({"auth": {"type": "static_bearer", "token": "t2"}})).await.0,
        reqwest::StatusCode::OK
    );
    let new = creds.resolve_mcp(&org, std::slice::from_ref(&v), "https://m.example.com", None).await.unwrap().unwrap();
    assert_eq!(new.token.expose(), "t2");
    // A 401 on the old token: the rotated one is the answer.
    assert_eq!(creds.force_refresh(&org, &old).await.unwrap().token.expose(), "t2");
    let err = creds.force_refresh(&org, &new).await.unwrap_err();
    assert!(matches!(err, CredentialError::NotRefreshable { .. }), "{err:?}");
}

#[tokio::test]
async fn a_credential_is_chosen_by_id_or_as_the_only_one_for_the_url() {
    let s = TestServer::start().await;
    let (a, b) = (vault(&s).await, vault(&s).await);
    let url = "https://m.example.com/mcp";
    let first = credential(&s, &a, json!({"type": "static_bearer", "token": "ta", "mcp_server_url": url})).await;
    let second = credential(&s, &b, json!({"type": "static_bearer", "token": "tb", "mcp_server_url": url})).await;
    let elsewhere =
        credential(&s, &b, json!({"type": "static_bearer", "token": "tc", "mcp_server_url": "https://x.example.com"}))
            .await;
    let env = credential(
        &s,
        &b,
        json!({"type": "environment_variable", "secret_name": "K", "secret_value": "v",
        "networking": {"type": "unrestricted"}}),
    )
    .await;
    let expired = credential(
        &s,
        &a,
        json!({"type": "mcp_oauth", "access_token": "old", "mcp_server_url": "https://e.example.com",
        "expires_at": in_seconds(-5)}),
    )
    .await;
    let (creds, org) = (resolver(&s).await, org_of(&s).await);
    let id = |c: &Value| c["id"].as_str().unwrap().to_string();
    let both = [a.clone(), b.clone()];

    assert_eq!(
        creds.resolve_mcp(&org, std::slice::from_ref(&a), url, None).await.unwrap().unwrap().token.expose(),
        "ta"
    );
    let err = creds.resolve_mcp(&org, &both, url, None).await.unwrap_err();
    assert!(matches!(err, CredentialError::Ambiguous { .. }), "{err:?}");
    assert!(err.to_string().contains(&id(&first)) && err.to_string().contains(&id(&second)), "{err}");
    let chosen = creds.resolve_mcp(&org, &both, url, Some(&id(&second))).await.unwrap().unwrap();
    assert_eq!(chosen.token.expose(), "tb");
    assert!(creds.resolve_mcp(&org, &both, "https://none.example.com", None).await.unwrap().is_none());
    let err = creds.resolve_mcp(&org, &both, url, Some(&id(&elsewhere))).await.unwrap_err();
    assert!(matches!(err, CredentialError::UrlMismatch { .. }), "a token goes only to its own server: {err:?}");
    let err = creds.resolve_mcp(&org, std::slice::from_ref(&a), url, Some(&id(&second))).await.unwrap_err();
    assert!(matches!(err, CredentialError::NotAttached { .. }), "{err:?}");
    let err = creds.resolve_mcp(&org, &both, url, Some(&id(&env))).await.unwrap_err();
    assert!(matches!(err, CredentialError::WrongKind { .. }), "{err:?}");
    let err = creds.resolve_mcp(&org, &both, "https://e.example.com", None).await.unwrap_err();
    assert!(matches!(err, CredentialError::Expired { .. }) && err.to_string().contains(&id(&expired)), "{err:?}");
    // Another organization's vault attaches nothing.
    let err = creds.resolve_mcp("org_other", &both, url, Some(&id(&first))).await.unwrap_err();
    assert!(matches!(err, CredentialError::NotAttached { .. }), "{err:?}");
}

#[tokio::test]
async fn environment_credentials_resolve_through_their_bindings() {
    let s = TestServer::start().await;
    let v = vault(&s).await;
    let env = |name: &str, value: &str| json!({"type": "environment_variable", "secret_name": name, "secret_value": value, "networking": {"type": "unrestricted"}});
    let one = credential(&s, &v, env("SERVICE_KEY", "value-1")).await;
    let two = credential(&s, &v, env("OTHER", "value-2")).await;
    let dup = credential(&s, &v, env("SERVICE_KEY", "value-3")).await;
    let bearer =
        credential(&s, &v, json!({"type": "static_bearer", "token": "t", "mcp_server_url": "https://m"})).await;
    let (creds, org) = (resolver(&s).await, org_of(&s).await);
    let bind =
        |c: &Value| VaultCredentialBinding { vault_id: v.clone(), credential_id: c["id"].as_str().unwrap().into() };

    let got = creds.resolve_environment_credentials(&org, &[bind(&one), bind(&two)]).await.unwrap();
    let got: Vec<(String, String)> = got.into_iter().map(|(n, s)| (n, s.expose().to_string())).collect();
    assert_eq!(got, [("SERVICE_KEY".into(), "value-1".into()), ("OTHER".into(), "value-2".into())]);
    let missing = VaultCredentialBinding { vault_id: v.clone(), credential_id: "cred_nope".into() };
    let err = creds.resolve_environment_credentials(&org, &[bind(&one), missing]).await.unwrap_err();
    assert_eq!(err.param(), Some("vault_credentials[1]"), "{err}");
    let err = creds.resolve_environment_credentials(&org, &[bind(&bearer)]).await.unwrap_err();
    assert!(matches!(err, CredentialError::WrongKind { .. }), "{err:?}");
    let err = creds.resolve_environment_credentials(&org, &[bind(&one), bind(&dup)]).await.unwrap_err();
    assert!(matches!(err, CredentialError::DuplicateSecretName { .. }), "{err:?}");
    let err = creds.resolve_environment_credentials("org_other", &[bind(&one)]).await.unwrap_err();
    assert_eq!(err.param(), Some("vault_credentials[0]"), "another organization's binding is not found");
}
