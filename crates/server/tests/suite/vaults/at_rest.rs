//! Secrets at rest and in what the server emits: ciphertext only in the
//! database, a master key that must match, and planted secrets that appear in
//! no answer, event, error or log line.

use super::{OauthServer, credential, in_seconds, resolver, vault};
use crate::support::TestServer;
use reqwest::StatusCode;
use serde_json::json;
use server::Config;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// Distinct, greppable secrets.
fn planted(tag: &str) -> String {
    format!("PLANTED{tag}{}", uuid::Uuid::new_v4().simple())
}

/// Every byte of every file in `dir` (the database, its WAL, the key file …).
fn files_of(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_file())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap()))
        .collect()
}

#[tokio::test]
async fn the_database_holds_only_ciphertext() {
    let s = TestServer::start().await;
    let v = vault(&s).await;
    let secrets = [planted("tok"), planted("access"), planted("refresh"), planted("client"), planted("env")];
    credential(
        &s,
        &v,
        json!({"type": "static_bearer", "token": secrets[0], "mcp_server_url": "https://m.example.com"}),
    )
    .await;
    credential(
        &s,
        &v,
        json!({"type": "mcp_oauth", "access_token": secrets[1], "mcp_server_url": "https://o.example.com",
        "refresh": {"client_id": "c", "refresh_token": secrets[2], "token_endpoint": "https://a.example.com/token",
            "token_endpoint_auth": {"type": "client_secret_basic", "client_secret": secrets[3]}}}),
    )
    .await;
    credential(
        &s,
        &v,
        json!({"type": "environment_variable", "secret_name": "K", "secret_value": secrets[4],
        "networking": {"type": "unrestricted"}}),
    )
    .await;
    // A stdio transport's inline env, on a saved agent, on a session, and on a session made
    // from the saved agent (issue 17, item 6).
    let (agent_env, session_env) = (planted("agentenv"), planted("sessionenv"));
    let stdio = |value: &str| {
        json!([{"type": "mcp", "server_label": "s", "transport": {"type": "stdio", "command": "node",
                "cwd": "/workspace", "env": {"SECRET": value}}}])
    };
    let agent = s.agent(json!({"model": "m", "tools": stdio(&agent_env)})).await;
    let hosted = json!({"type": "openai_hosted"});
    s.session(json!({"agent": {"model": "m", "tools": stdio(&session_env)}, "environment": hosted})).await;
    s.session(json!({"agent_id": agent["id"], "environment": hosted})).await;
    let (_, updated) = s.post(&format!("/v1/agents/{}", agent["id"].as_str().unwrap()), json!({"name": "v2"})).await;
    assert_eq!(updated["version"], 2, "{updated}");
    let secrets: Vec<String> = secrets.into_iter().chain([agent_env, session_env]).collect();
    let dir = s.stop().await;
    let mut files = files_of(dir.path());
    match crate::support::test_database(dir.path()) {
        // On PostgreSQL: everything the database holds, as pg_dump writes it.
        Some(url) => files.push(("pg_dump".into(), test_support::postgres::dump(&url))),
        None => assert!(files.iter().any(|(name, _)| name == "rebyte.db")),
    }
    for (name, bytes) in &files {
        for secret in &secrets {
            assert!(!bytes.windows(secret.len()).any(|w| w == secret.as_bytes()), "{secret} in plaintext in {name}");
        }
    }
    let mode = std::fs::metadata(dir.path().join("master.key")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the key file is created with mode 0600");
}

#[tokio::test]
async fn a_wrong_or_missing_master_key_stops_the_start() {
    let s = TestServer::start().await;
    let v = vault(&s).await;
    credential(&s, &v, json!({"type": "static_bearer", "token": "t", "mcp_server_url": "https://m.example.com"})).await;
    let key = s.key.clone();
    let dir = s.stop().await;
    let config = |master: Option<&str>| {
        let mut c = Config::new(dir.path());
        c.database_url = crate::support::test_database(dir.path());
        c.bootstrap_key = Some(key.clone());
        c.master_key = master.map(secrets::Secret::from);
        c
    };

    let other = secrets::MasterKey::generate().to_base64();
    let wrong = server::start(&config(Some(other.expose()))).await.err().expect("a wrong key must not start");
    assert!(wrong.to_string().contains("does not match"), "{wrong}");
    let garbled = server::start(&config(Some("not-a-key"))).await.err().expect("a garbled key must not start");
    assert!(garbled.to_string().contains("REBYTE_MASTER_KEY"), "{garbled}");

    let file = dir.path().join("master.key");
    let original = std::fs::read_to_string(&file).unwrap();
    std::fs::remove_file(&file).unwrap();
    let missing = server::start(&config(None)).await.err().expect("a missing key file must not start");
    assert!(missing.to_string().contains("missing"), "{missing}");
    assert!(!file.exists(), "no new key is made for data sealed under another");

    // The original key, given through the environment, opens the data again.
    let Ok(state) = server::start(&config(Some(original.trim()))).await else { panic!("the right key starts") };
    let got = state
        .app
        .credentials
        .resolve_mcp(&state_org(&state, &key).await, std::slice::from_ref(&v), "https://m.example.com", None)
        .await;
    assert_eq!(got.unwrap().unwrap().token.expose(), "t");
}

/// The organization of `key` (the bootstrap key: organization `default`).
async fn state_org(state: &server::AppState, _key: &str) -> String {
    state.app.store.find_organization("default").await.unwrap().unwrap().id
}

/// Log lines of the whole test binary, recorded while [`CAPTURING`] is above
/// zero. A process-wide subscriber: a thread-scoped one misses events whose
/// callsites other test threads registered concurrently.
static LOGS: Mutex<Vec<u8>> = Mutex::new(Vec::new());
static CAPTURING: AtomicUsize = AtomicUsize::new(0);
static INSTALLED: OnceLock<bool> = OnceLock::new();

struct LogWriter;

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        LOGS.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Starts recording every log line at every level; false when another
/// global subscriber was installed first.
fn capture_logs() -> bool {
    let installed = *INSTALLED.get_or_init(|| {
        use tracing_subscriber::prelude::*;
        let layer = tracing_subscriber::fmt::layer()
            .with_writer(|| LogWriter)
            .with_ansi(false)
            .with_filter(tracing_subscriber::filter::filter_fn(|_| CAPTURING.load(Ordering::SeqCst) > 0));
        tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer)).is_ok()
    });
    CAPTURING.fetch_add(1, Ordering::SeqCst);
    installed
}

#[tokio::test]
async fn planted_secrets_appear_in_no_answer_event_error_or_log() {
    assert!(capture_logs(), "this test needs to install the process-wide log subscriber");
    let oauth = OauthServer::start().await;
    let s = TestServer::start().await;
    let mut seen = String::new();
    let mut record = |got: &(StatusCode, serde_json::Value)| seen.push_str(&format!("{}\n", got.1));

    let (bearer, access, refresh, client, env) =
        (planted("bearer"), planted("access"), planted("refresh"), planted("client"), planted("env"));
    oauth.accept(&refresh);
    let v = vault(&s).await;
    let base = format!("/v1/vaults/{v}/credentials");
    let created = [
        s.post(&base, json!({"name": "b", "auth": {"type": "static_bearer", "token": bearer, "mcp_server_url": "https://b.example.com"}})).await,
        s.post(&base, json!({"name": "o", "auth": {"type": "mcp_oauth", "access_token": access, "mcp_server_url": "https://o.example.com",
            "expires_at": in_seconds(5), "refresh": {"client_id": "c", "refresh_token": refresh, "token_endpoint": oauth.url(),
            "token_endpoint_auth": {"type": "client_secret_post", "client_secret": client}}}})).await,
        s.post(&base, json!({"name": "e", "auth": {"type": "environment_variable", "secret_name": "K", "secret_value": env,
            "networking": {"type": "unrestricted"}}})).await,
    ];
    created.iter().for_each(&mut record);
    let ids: Vec<String> = created.iter().map(|c| c.1["id"].as_str().unwrap().to_string()).collect();
    record(&s.get(&base).await);
    for id in &ids {
        record(&s.get(&format!("{base}/{id}")).await);
    }
    // Refused requests that carry secrets: their errors must not quote them.
    record(
        &s.post(
            &base,
            json!({"name": "x", "auth": {"type": "environment_variable", "secret_name": "K",
        "secret_value": format!("{env}\nmore"), "networking": {"type": "unrestricted"}}}),
        )
        .await,
    );
    record(
        &s.post(
            &base,
            json!({"name": "x", "auth": {"type": "static_bearer", "token": bearer, "mcp_server_url": "nope"}}),
        )
        .await,
    );
    record(
        &s.post(&base, json!({"name": "x", "auth": {"type": "static_bearer", "token": bearer, "extra": bearer}})).await,
    );
    record(
        &s.post(&format!("{base}/{}", ids[0]), json!({"auth": {"type": "environment_variable", "secret_value": env}}))
            .await,
    );
    record(
        &s.post(
            &format!("{base}/{}", ids[0]),
            json!({"auth": {"type": "static_bearer", "token": format!("{bearer}2")}}),
        )
        .await,
    );
    let session = s.session(json!({"agent": {"model": "m"}, "environment": {"type": "none"}, "vault_ids": [v]})).await;
    seen.push_str(&session.to_string());
    for event in s.events(session["id"].as_str().unwrap()).await {
        seen.push_str(&event.to_string());
    }

    // The resolver: refresh (the token endpoint answers new tokens), then a
    // revoked refresh token whose error answer quotes the token back.
    let creds = resolver(&s).await;
    let org = s.get("/v1/admin/keys").await.1["data"][0]["organization_id"].as_str().unwrap().to_string();
    let got = creds.resolve_mcp(&org, std::slice::from_ref(&v), "https://o.example.com", None).await.unwrap().unwrap();
    seen.push_str(&format!("{got:?}"));
    oauth.revoke(&refresh);
    let err = creds.force_refresh(&org, &got).await.unwrap_err();
    assert!(err.to_string().contains(&ids[1]), "the error names the credential: {err}");
    seen.push_str(&format!("{err} {err:?}"));
    let envs = creds
        .resolve_environment_credentials(
            &org,
            &[serde_json::from_value(json!({"vault_id": v, "credential_id": ids[2]})).unwrap()],
        )
        .await
        .unwrap();
    assert_eq!(envs[0].1.expose(), env, "the resolver itself sees the value");
    seen.push_str(&format!("{envs:?}"));

    CAPTURING.fetch_sub(1, Ordering::SeqCst);
    let logs = String::from_utf8_lossy(&LOGS.lock().unwrap()).into_owned();
    assert!(logs.contains("refreshed an OAuth access token"), "the log capture works");
    for secret in [&bearer, &access, &refresh, &client, &env, &oauth.last_issued()] {
        assert!(!seen.contains(secret.as_str()), "{secret} was emitted: {seen}");
        assert!(!logs.contains(secret.as_str()), "{secret} was logged");
    }
}

/// Runs `rebyte keys rotate-master` on a stopped server's data.
fn rotate_master(dir: &std::path::Path, master_key: Option<&str>) -> std::process::Output {
    let mut cmd = std::process::Command::new(crate::support::rebyte_bin());
    cmd.args(["keys", "rotate-master", "--data-dir"]).arg(dir).env_remove("REBYTE_MASTER_KEY");
    if let Some(url) = crate::support::test_database(dir) {
        cmd.args(["--database-url", &url]);
    }
    if let Some(key) = master_key {
        cmd.env("REBYTE_MASTER_KEY", key);
    }
    cmd.output().unwrap()
}

#[tokio::test]
async fn rotate_master_seals_everything_again_under_a_new_key_file() {
    let s = TestServer::start().await;
    let v = vault(&s).await;
    credential(&s, &v, json!({"type": "static_bearer", "token": "t0k", "mcp_server_url": "https://m.example.com"}))
        .await;
    let http = json!([{"type": "mcp", "server_label": "h", "transport": {"type": "http",
        "server_url": "https://h.example.com/mcp", "authorization": "Bearer inline-secret"}}]);
    let session = s.session(json!({"agent": {"model": "m", "tools": http}, "environment": {"type": "none"}})).await;
    let stdio = json!([{"type": "mcp", "server_label": "s", "transport": {"type": "stdio", "command": "node",
        "cwd": "/workspace", "env": {"K": "agent-secret"}}}]);
    let agent = s.agent(json!({"model": "m", "tools": stdio})).await;
    let key = s.key.clone();
    let dir = s.stop().await;
    let file = dir.path().join("master.key");
    let before = std::fs::read_to_string(&file).unwrap();

    let wrong = secrets::MasterKey::generate().to_base64();
    let refused = rotate_master(dir.path(), Some(wrong.expose()));
    assert!(!refused.status.success(), "a wrong current key rotates nothing");
    assert!(String::from_utf8_lossy(&refused.stderr).contains("does not match"), "{refused:?}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), before);

    let out = rotate_master(dir.path(), None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("1 credentials, 1 sessions' and 1 agents'"), "{said}");
    let after = std::fs::read_to_string(&file).unwrap();
    assert_ne!(after, before, "a new key in the key file");
    assert_eq!(std::fs::read_to_string(dir.path().join("master.key.old")).unwrap(), before);
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);

    // The old key no longer opens the database; the new one opens every secret.
    let config = |master: Option<&str>| {
        let mut c = Config::new(dir.path());
        c.database_url = crate::support::test_database(dir.path());
        c.bootstrap_key = Some(key.clone());
        c.master_key = master.map(secrets::Secret::from);
        c
    };
    let stale = server::start(&config(Some(before.trim()))).await.err().expect("the old key must not start");
    assert!(stale.to_string().contains("does not match"), "{stale}");
    let Ok(state) = server::start(&config(None)).await else { panic!("the new key file starts") };
    let org = state_org(&state, &key).await;
    let got = state.app.credentials.resolve_mcp(&org, std::slice::from_ref(&v), "https://m.example.com", None).await;
    assert_eq!(got.unwrap().unwrap().token.expose(), "t0k");
    let sid = protocol::ids::SessionId::parse(session["id"].as_str().unwrap()).unwrap();
    let record = state.app.store.get_session(&org, sid).await.unwrap().unwrap();
    let opened = server::mcp_secrets::open_session_secrets(state.app.credentials.cipher(), &org, &record).unwrap();
    assert_eq!(
        opened["h"].authorization.as_ref().map(|a| a.expose().to_string()).as_deref(),
        Some("Bearer inline-secret")
    );
    let saved = state.app.store.get_agent(&org, agent["id"].as_str().unwrap()).await.unwrap().unwrap();
    let mut tools = saved.config.tools.clone();
    server::mcp_secrets::unseal_agent_secrets(state.app.credentials.cipher(), &org, &saved, &mut tools).unwrap();
    assert!(serde_json::to_string(&tools).unwrap().contains("agent-secret"));
}
