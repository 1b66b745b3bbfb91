//! `/v1/vaults` and `/v1/vaults/{id}/credentials` over HTTP: shapes, lists,
//! updates and rotation, validation naming the field, scopes, and another
//! organization's ids answering 404.

use super::{credential, vault};
use crate::support::{TestServer, assert_error};
use reqwest::{Method, StatusCode};
use serde_json::json;

#[tokio::test]
async fn vaults_are_created_updated_listed_and_deleted() {
    let s = TestServer::start().await;
    let (status, v) = s.post("/v1/vaults", json!({"name": "  team  ", "metadata": {"app": "a"}})).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    let id = v["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("vault_"));
    assert_eq!(
        v,
        json!({"id": id, "created_at": v["created_at"], "metadata": {"app": "a"}, "name": "team", "object": "vault"})
    );
    assert_eq!(s.get(&format!("/v1/vaults/{id}")).await.1, v);

    let (_, updated) = s.post(&format!("/v1/vaults/{id}"), json!({"name": null, "metadata": {"b": "2"}})).await;
    assert_eq!(updated["name"], json!(null));
    assert_eq!(updated["metadata"], json!({"b": "2"}));
    let (_, kept) = s.post(&format!("/v1/vaults/{id}"), json!({})).await;
    assert_eq!(kept, updated, "omitted fields are kept");

    let other = super::vault(&s).await;
    let (_, page) = s.get("/v1/vaults?limit=1&order=asc").await;
    assert_eq!(page["data"][0]["id"], id.as_str());
    assert_eq!(page["has_more"], true);
    let (_, next) = s.get(&format!("/v1/vaults?limit=1&order=asc&after={id}")).await;
    assert_eq!(next["data"][0]["id"], other.as_str());
    let (_, filtered) = s.get("/v1/vaults?metadata[b]=2").await;
    assert_eq!(filtered["data"].as_array().unwrap().len(), 1);
    let (_, active) = s.get("/v1/vaults?status[]=active&status[]=archived").await;
    assert_eq!(active["data"].as_array().unwrap().len(), 2);
    let (_, archived) = s.get("/v1/vaults?status=archived").await;
    assert_eq!(archived["data"], json!([]), "nothing is ever archived here");
    assert_error(
        &s.get("/v1/vaults?status=gone").await,
        StatusCode::BAD_REQUEST,
        "invalid_request_error",
        Some("status"),
    );

    let (status, deleted) = s.delete(&format!("/v1/vaults/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(deleted, json!({"id": id, "deleted": true, "object": "vault.deleted"}));
    assert_eq!(s.get(&format!("/v1/vaults/{id}")).await.0, StatusCode::NOT_FOUND);
    assert_eq!(s.delete(&format!("/v1/vaults/{id}")).await.0, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn credentials_show_only_their_non_secret_configuration() {
    let s = TestServer::start().await;
    let v = vault(&s).await;
    let bearer = credential(
        &s,
        &v,
        json!({"type": "static_bearer", "token": "tok-1", "mcp_server_url": "https://mcp.example.com/mcp"}),
    )
    .await;
    let id = bearer["id"].as_str().unwrap();
    assert!(id.starts_with("cred_"));
    assert_eq!(
        bearer,
        json!({"id": id, "auth": {"type": "static_bearer", "mcp_server_url": "https://mcp.example.com/mcp"},
            "created_at": bearer["created_at"], "metadata": {}, "name": "cred", "object": "vault.credential",
            "updated_at": bearer["created_at"], "vault_id": v})
    );
    let oauth = credential(
        &s,
        &v,
        json!({"type": "mcp_oauth", "access_token": "at-1",
        "mcp_server_url": "https://mcp.example.com/other", "expires_at": "2030-01-01T02:00:00+02:00",
        "refresh": {"client_id": "client", "refresh_token": "rt-1", "token_endpoint": "https://auth.example.com/token",
            "token_endpoint_auth": {"type": "client_secret_post", "client_secret": "cs-1"}, "scope": "read write"}}),
    )
    .await;
    assert_eq!(
        oauth["auth"],
        json!({"type": "mcp_oauth", "expires_at": "2030-01-01T00:00:00Z", "mcp_server_url": "https://mcp.example.com/other",
            "refresh": {"client_id": "client", "resource": null, "scope": "read write",
                "token_endpoint": "https://auth.example.com/token", "token_endpoint_auth": {"type": "client_secret_post"}}})
    );
    let env = credential(
        &s,
        &v,
        json!({"type": "environment_variable", "secret_name": "SERVICE_API_KEY",
        "secret_value": "sv-1", "networking": {"type": "limited", "allowed_hosts": ["API.example.com"]}}),
    )
    .await;
    assert_eq!(
        env["auth"],
        json!({"type": "environment_variable", "secret_name": "SERVICE_API_KEY",
            "networking": {"type": "limited", "allowed_hosts": ["api.example.com"]}})
    );

    let (_, list) = s.get(&format!("/v1/vaults/{v}/credentials?order=asc")).await;
    let ids: Vec<&str> = list["data"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [id, oauth["id"].as_str().unwrap(), env["id"].as_str().unwrap()]);
    assert_eq!(list["data"][0], bearer);
    let text = list.to_string();
    for secret in ["tok-1", "at-1", "rt-1", "cs-1", "sv-1"] {
        assert!(!text.contains(secret), "{secret} leaked into {text}");
    }
    assert_eq!(s.get(&format!("/v1/vaults/{v}/credentials/{id}")).await.1, bearer);
    let (_, deleted) = s.delete(&format!("/v1/vaults/{v}/credentials/{id}")).await;
    assert_eq!(deleted, json!({"id": id, "deleted": true, "object": "vault.credential.deleted"}));
    assert_eq!(s.get(&format!("/v1/vaults/{v}/credentials/{id}")).await.0, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn an_update_rotates_secrets_of_the_same_kind_only() {
    let s = TestServer::start().await;
    let v = vault(&s).await;
    let c = credential(
        &s,
        &v,
        json!({"type": "mcp_oauth", "access_token": "at-1", "mcp_server_url": "https://m.example.com",
        "expires_at": super::in_seconds(3600)}),
    )
    .await;
    let path = format!("/v1/vaults/{v}/credentials/{}", c["id"].as_str().unwrap());
    let wrong = s.post(&path, json!({"auth": {"type": "static_bearer", "token": "x"}})).await;
    assert_error(&wrong, StatusCode::BAD_REQUEST, "invalid_request_error", Some("auth.type"));
    let (_, meta) = s.post(&path, json!({"metadata": {"k": "v"}})).await;
    assert_eq!(meta["metadata"], json!({"k": "v"}));
    assert_eq!(meta["auth"], c["auth"], "metadata alone keeps the expiry");
    let (_, rotated) = s.post(&path, json!({"auth": {"type": "mcp_oauth", "access_token": "at-2"}})).await;
    assert_eq!(rotated["auth"]["expires_at"], json!(null), "a new token without an expiry clears it");
    assert_eq!(rotated["metadata"], json!({"k": "v"}));
    let (_, dated) = s.post(&path, json!({"auth": {"type": "mcp_oauth", "expires_at": "2031-05-05T05:05:05Z"}})).await;
    assert_eq!(dated["auth"]["expires_at"], "2031-05-05T05:05:05Z");
    let no_refresh = s.post(&path, json!({"auth": {"type": "mcp_oauth", "refresh": {"refresh_token": "r"}}})).await;
    assert_error(&no_refresh, StatusCode::BAD_REQUEST, "invalid_request_error", Some("auth.refresh"));
}

#[tokio::test]
async fn invalid_credentials_are_refused_naming_the_field() {
    let s = TestServer::start().await;
    let v = vault(&s).await;
    let path = format!("/v1/vaults/{v}/credentials");
    let cases = [
        (json!({"type": "static_bearer", "token": "", "mcp_server_url": "https://m"}), "auth.token"),
        (json!({"type": "static_bearer", "token": "t", "mcp_server_url": "ftp://m"}), "auth.mcp_server_url"),
        (
            json!({"type": "environment_variable", "secret_name": "1BAD", "secret_value": "v",
            "networking": {"type": "unrestricted"}}),
            "auth.secret_name",
        ),
        (
            json!({"type": "environment_variable", "secret_name": "OK", "secret_value": "a\nb",
            "networking": {"type": "unrestricted"}}),
            "auth.secret_value",
        ),
        (
            json!({"type": "environment_variable", "secret_name": "OK", "secret_value": "v",
            "networking": {"type": "limited", "allowed_hosts": ["*.x.com"]}}),
            "auth.networking.allowed_hosts[0]",
        ),
        (
            json!({"type": "mcp_oauth", "access_token": "a", "mcp_server_url": "https://m", "expires_at": "tomorrow"}),
            "auth.expires_at",
        ),
        (
            json!({"type": "mcp_oauth", "access_token": "a", "mcp_server_url": "https://m", "refresh": {"client_id": "c",
            "refresh_token": "r", "token_endpoint": "http://auth.example.com/token", "token_endpoint_auth": {"type": "none"}}}),
            "auth.refresh.token_endpoint",
        ),
        (json!({"type": "bogus"}), "auth.type"),
    ];
    for (auth, param) in cases {
        let got = s.post(&path, json!({"name": "n", "auth": auth})).await;
        assert_error(&got, StatusCode::BAD_REQUEST, "invalid_request_error", Some(param));
    }
    let blank = s
        .post(
            &path,
            json!({"name": "   ", "auth": {"type": "static_bearer", "token": "t", "mcp_server_url": "https://m"}}),
        )
        .await;
    assert_error(&blank, StatusCode::BAD_REQUEST, "invalid_request_error", Some("name"));
}

#[tokio::test]
async fn vault_endpoints_need_the_vault_scopes() {
    let s = TestServer::start().await;
    let (org, tasks) = s.org_with_key("tasks-only", &["tasks:read", "tasks:write"]).await;
    let got = s.call_as(Some(&tasks), Method::GET, "/v1/vaults", None).await;
    assert_error(&got, StatusCode::FORBIDDEN, "permission_error", None);
    assert!(got.1["error"]["message"].as_str().unwrap().contains("vaults:read"));
    let reader = s.key_for(&org, &["vaults:read"]).await;
    assert_eq!(s.call_as(Some(&reader), Method::GET, "/v1/vaults", None).await.0, StatusCode::OK);
    let got = s.call_as(Some(&reader), Method::POST, "/v1/vaults", Some(json!({}))).await;
    assert_error(&got, StatusCode::FORBIDDEN, "permission_error", None);
    assert!(got.1["error"]["message"].as_str().unwrap().contains("vaults:write"));
}

#[tokio::test]
async fn another_organizations_vaults_and_credentials_are_not_found() {
    let s = TestServer::start().await;
    let mine = vault(&s).await;
    let c = credential(&s, &mine, json!({"type": "static_bearer", "token": "t", "mcp_server_url": "https://m"})).await;
    let cid = c["id"].as_str().unwrap();
    let (_, other) = s.org_with_key("other", &["vaults:read", "vaults:write", "tasks:read", "tasks:write"]).await;
    for (method, path) in [
        (Method::GET, format!("/v1/vaults/{mine}")),
        (Method::DELETE, format!("/v1/vaults/{mine}")),
        (Method::GET, format!("/v1/vaults/{mine}/credentials")),
        (Method::GET, format!("/v1/vaults/{mine}/credentials/{cid}")),
        (Method::DELETE, format!("/v1/vaults/{mine}/credentials/{cid}")),
    ] {
        let got = s.call_as(Some(&other), method, &path, None).await;
        assert_error(&got, StatusCode::NOT_FOUND, "not_found_error", None);
    }
    let theirs = s.call_as(Some(&other), Method::POST, "/v1/vaults", Some(json!({}))).await.1["id"]
        .as_str()
        .unwrap()
        .to_string();

    // Sessions attach only vaults of their own organization.
    let body = |ids: Vec<&str>| json!({"agent": {"model": "m"}, "environment": {"type": "none"}, "vault_ids": ids});
    let got = s.post("/v1/agents/sessions", body(vec![&mine, &theirs])).await;
    assert_error(&got, StatusCode::NOT_FOUND, "not_found_error", Some("vault_ids[1]"));
    let got = s.post("/v1/agents/sessions", body(vec!["vault_nope"])).await;
    assert_error(&got, StatusCode::NOT_FOUND, "not_found_error", Some("vault_ids[0]"));
    let session = s.session(body(vec![&mine])).await;
    assert_eq!(session["vault_ids"], json!([mine]));
    let (_, again) = s.get(&format!("/v1/agents/sessions/{}", session["id"].as_str().unwrap())).await;
    assert_eq!(again["vault_ids"], json!([mine]));
}
