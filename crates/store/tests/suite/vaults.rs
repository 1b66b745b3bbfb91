//! Vaults, credentials (sealed secrets, versioned updates), the master key
//! check, environments and artifacts.

use super::backend::Backend;
use super::contract;
use super::records::{agent, env, org, session, stored_session};
use protocol::environment::{EnvironmentRecord, EnvironmentStatus};
use protocol::ids::EnvironmentId;
use store::{Sealed, SealedKind};

use protocol::vault::{Credential, CredentialAuth, CredentialRecord, Vault};
use store::Artifact;

contract!(
    vaults_and_credentials_belong_to_their_organization,
    the_master_key_check_keeps_the_first_value,
    every_sealed_value_is_listed_and_replaced_in_one_transaction,
    environments_are_replaced_only_by_their_organization,
    artifacts_are_immutable_and_keep_their_bytes
);

fn vault(id: &str, team: &str) -> Vault {
    Vault {
        id: id.into(),
        created_at: 1,
        metadata: [("team".to_string(), team.to_string())].into(),
        name: Some(id.into()),
        object: "vault".into(),
    }
}

fn credential(id: &str, vault_id: &str, version: i64) -> CredentialRecord {
    CredentialRecord {
        credential: Credential {
            id: id.into(),
            auth: CredentialAuth::StaticBearer { mcp_server_url: "https://mcp.example/mcp".into() },
            created_at: 1,
            metadata: [("env".to_string(), "prod".to_string())].into(),
            name: id.into(),
            object: "vault.credential".into(),
            updated_at: version,
            vault_id: vault_id.into(),
        },
        version,
        sealed: vec![0, 1, 2, 255, version as u8],
    }
}

async fn vaults_and_credentials_belong_to_their_organization(b: &Backend) {
    let store = b.store.as_ref();
    let (mine, theirs) = (org(store, "mine").await, org(store, "theirs").await);
    store.create_vault(&mine, &vault("vlt_1", "blue")).await.unwrap();
    store.create_vault(&mine, &vault("vlt_2", "red")).await.unwrap();
    store.create_vault(&theirs, &vault("vlt_3", "blue")).await.unwrap();
    assert_eq!(store.get_vault(&mine, "vlt_1").await.unwrap(), Some(vault("vlt_1", "blue")));
    assert!(store.get_vault(&theirs, "vlt_1").await.unwrap().is_none());
    let page = super::records::asc();
    let blue = store.list_vaults(&mine, &[("team".into(), "blue".into())], &page).await.unwrap().items;
    assert_eq!(blue, vec![vault("vlt_1", "blue")]);
    assert_eq!(store.list_vaults(&mine, &[], &page).await.unwrap().items.len(), 2);
    assert!(!store.put_vault(&theirs, &vault("vlt_1", "green")).await.unwrap());
    assert!(store.put_vault(&mine, &vault("vlt_1", "green")).await.unwrap());
    assert_eq!(store.get_vault(&mine, "vlt_1").await.unwrap(), Some(vault("vlt_1", "green")));
    let ids = ["vlt_1", "vlt_3", "vlt_9"].map(String::from);
    assert_eq!(store.existing_vaults(&mine, &ids).await.unwrap(), vec!["vlt_1".to_string()]);
    assert!(store.existing_vaults(&mine, &[]).await.unwrap().is_empty());

    store.create_credential(&mine, &credential("cred_1", "vlt_1", 1)).await.unwrap();
    store.create_credential(&mine, &credential("cred_2", "vlt_2", 1)).await.unwrap();
    assert_eq!(store.get_credential(&mine, "vlt_1", "cred_1").await.unwrap(), Some(credential("cred_1", "vlt_1", 1)));
    assert!(store.get_credential(&theirs, "vlt_1", "cred_1").await.unwrap().is_none());
    let ids = ["cred_2", "cred_1", "cred_9"].map(String::from);
    let mut found = store.existing_credentials(&mine, &ids).await.unwrap();
    found.sort();
    assert_eq!(found, vec!["cred_1".to_string(), "cred_2".to_string()]);
    assert!(store.existing_credentials(&theirs, &ids).await.unwrap().is_empty(), "another organization's");
    assert!(store.existing_credentials(&mine, &[]).await.unwrap().is_empty());
    assert!(store.get_credential(&mine, "vlt_2", "cred_1").await.unwrap().is_none(), "another vault's");
    assert!(store.update_credential(&mine, &credential("cred_1", "vlt_1", 2)).await.unwrap());
    assert!(!store.update_credential(&mine, &credential("cred_1", "vlt_1", 2)).await.unwrap(), "a stale version");
    assert!(!store.update_credential(&theirs, &credential("cred_1", "vlt_1", 3)).await.unwrap());
    assert_eq!(store.get_credential(&mine, "vlt_1", "cred_1").await.unwrap(), Some(credential("cred_1", "vlt_1", 2)));
    let listed = store.list_credentials(&mine, "vlt_1", &[("env".into(), "prod".into())], &page).await.unwrap();
    assert_eq!(listed.items, vec![credential("cred_1", "vlt_1", 2).credential]);
    assert!(
        store.list_credentials(&mine, "vlt_1", &[("env".into(), "dev".into())], &page).await.unwrap().items.is_empty()
    );
    let both = store.vault_credentials(&mine, &["vlt_2".into(), "vlt_1".into()]).await.unwrap();
    assert_eq!(both, vec![credential("cred_1", "vlt_1", 2), credential("cred_2", "vlt_2", 1)], "oldest first");
    assert!(store.vault_credentials(&theirs, &["vlt_1".into()]).await.unwrap().is_empty());
    assert!(!store.delete_credential(&theirs, "vlt_2", "cred_2").await.unwrap());
    assert!(store.delete_credential(&mine, "vlt_2", "cred_2").await.unwrap());
    assert!(!store.delete_vault(&theirs, "vlt_1").await.unwrap());
    assert!(store.delete_vault(&mine, "vlt_1").await.unwrap());
    assert!(store.get_credential(&mine, "vlt_1", "cred_1").await.unwrap().is_none(), "its credentials went too");
}

async fn the_master_key_check_keeps_the_first_value(b: &Backend) {
    assert_eq!(b.store.master_key_check().await.unwrap(), None);
    assert_eq!(b.store.init_master_key_check(&[1, 2, 0, 3]).await.unwrap(), vec![1, 2, 0, 3]);
    assert_eq!(b.store.init_master_key_check(&[9]).await.unwrap(), vec![1, 2, 0, 3], "the first writer wins");
    assert_eq!(b.store.master_key_check().await.unwrap(), Some(vec![1, 2, 0, 3]));
}

async fn every_sealed_value_is_listed_and_replaced_in_one_transaction(b: &Backend) {
    let store = b.store.as_ref();
    let (mine, theirs) = (org(store, "mine").await, org(store, "theirs").await);
    store.init_master_key_check(&[1]).await.unwrap();
    store.create_vault(&mine, &vault("vlt_1", "blue")).await.unwrap();
    store.create_credential(&mine, &credential("cred_1", "vlt_1", 1)).await.unwrap();
    let mut s = session("agent_1");
    s.sealed_mcp_secrets = Some("c2Vzc2lvbg==".into());
    store.create_session(&theirs, &s).await.unwrap();
    stored_session(store, &mine).await; // none sealed: not listed
    let mut a = agent("agent_s");
    store.create_agent(&mine, &a).await.unwrap();
    a.version = 2;
    a.sealed_mcp_secrets = Some("djI=".into());
    assert!(store.update_agent(&mine, &a).await.unwrap());

    let mut found = store.sealed_values().await.unwrap();
    let kinds: Vec<(SealedKind, &str, &str)> =
        found.iter().map(|v| (v.kind, v.org_id.as_str(), v.key[0].as_str())).collect();
    assert!(kinds.contains(&(SealedKind::Credential, mine.as_str(), "vlt_1")), "{kinds:?}");
    assert!(kinds.contains(&(SealedKind::Session, theirs.as_str(), s.id.to_string().as_str())), "{kinds:?}");
    assert!(kinds.contains(&(SealedKind::Agent, mine.as_str(), "agent_s")), "{kinds:?}");
    let versions: Vec<&Sealed> = found.iter().filter(|v| v.kind == SealedKind::AgentVersion).collect();
    assert_eq!(versions.len(), 2, "each stored version of the agent: {versions:?}");
    assert_eq!(found.len(), 5, "{found:?}");

    for v in &mut found {
        v.value = [b"new-".as_slice(), &v.value].concat();
    }
    assert!(!store.replace_sealed(&[9], &[2], &found).await.unwrap(), "a stale key check changes nothing");
    assert_eq!(store.master_key_check().await.unwrap(), Some(vec![1]));
    assert!(store.sealed_values().await.unwrap().iter().all(|v| !v.value.starts_with(b"new-")));

    assert!(store.replace_sealed(&[1], &[2], &found).await.unwrap());
    assert_eq!(store.master_key_check().await.unwrap(), Some(vec![2]));
    let mut after = store.sealed_values().await.unwrap();
    after.sort_by(|x, y| x.key.cmp(&y.key));
    found.sort_by(|x, y| x.key.cmp(&y.key));
    assert_eq!(after, found);
    let got = store.get_session(&theirs, s.id).await.unwrap().unwrap();
    assert_eq!(got.sealed_mcp_secrets.as_deref(), Some("new-c2Vzc2lvbg=="), "the session read sees the new value");
    let cred = store.get_credential(&mine, "vlt_1", "cred_1").await.unwrap().unwrap();
    assert_eq!(cred.sealed, [b"new-".as_slice(), &credential("cred_1", "vlt_1", 1).sealed].concat());
}

pub(crate) fn environment(id: EnvironmentId, status: EnvironmentStatus) -> EnvironmentRecord {
    EnvironmentRecord {
        id,
        created_at: 1,
        status,
        error: None,
        owner_session: None,
        shared: false,
        metadata: Default::default(),
        config: Default::default(),
        files: Vec::new(),
        setup_log: None,
        vault_ids: Vec::new(),
        setup: None,
        skills: Vec::new(),
        node: Some("node-1".into()),
        template: None,
        forked_from: None,
        name: None,
    }
}

async fn environments_are_replaced_only_by_their_organization(b: &Backend) {
    let store = b.store.as_ref();
    let (mine, theirs) = (org(store, "mine").await, org(store, "theirs").await);
    store.put_environment(&mine, &environment(env(1), EnvironmentStatus::Pending)).await.unwrap();
    store.put_environment(&mine, &environment(env(1), EnvironmentStatus::Ready)).await.unwrap();
    store.put_environment(&theirs, &environment(env(1), EnvironmentStatus::Initializing)).await.unwrap();
    assert_eq!(
        store.get_environment(&mine, &env(1)).await.unwrap(),
        Some(environment(env(1), EnvironmentStatus::Ready))
    );
    assert!(store.get_environment(&theirs, &env(1)).await.unwrap().is_none());
    store.put_environment(&mine, &environment(env(2), EnvironmentStatus::Pending)).await.unwrap();
    let page = store.list_environments(&mine, &super::records::asc()).await.unwrap();
    assert_eq!(page.items.iter().map(|e| e.id.clone()).collect::<Vec<_>>(), [env(1), env(2)]);
    assert_eq!(store.sessions_on_environment(&mine, &env(1)).await.unwrap(), 0);
    assert!(store.environment_sessions(&mine, &env(1)).await.unwrap().is_empty());
    // Sessions on it, oldest first; another organization's are not its.
    let on = |n: u8| {
        let mut s = super::records::session("agent_1");
        s.environment = protocol::session::SessionEnvironment::OpenaiHosted {
            id: env(n),
            capability_directories: Vec::new(),
            files: Vec::new(),
            network: protocol::environment::NetworkView { access: Default::default(), allowed_domains: Vec::new() },
            packages: protocol::environment::PackagesView { npm: Vec::new(), python: Vec::new(), system: Vec::new() },
            plugins: Vec::new(),
            skills: Vec::new(),
        };
        s
    };
    let (first, second, elsewhere, theirs_too) = (on(1), on(1), on(2), on(1));
    for s in [&first, &second, &elsewhere] {
        store.create_session(&mine, s).await.unwrap();
    }
    store.create_session(&theirs, &theirs_too).await.unwrap();
    assert_eq!(store.environment_sessions(&mine, &env(1)).await.unwrap(), [first.id, second.id]);
    assert_eq!(store.environment_sessions(&mine, &env(2)).await.unwrap(), [elsewhere.id]);
    assert_eq!(store.sessions_on_environment(&mine, &env(1)).await.unwrap(), 2);
    assert!(!store.delete_environment(&theirs, &env(1)).await.unwrap());
    assert!(store.delete_environment(&mine, &env(1)).await.unwrap());
    assert!(store.get_environment(&mine, &env(1)).await.unwrap().is_none());
}

async fn artifacts_are_immutable_and_keep_their_bytes(b: &Backend) {
    let store = b.store.as_ref();
    let (mine, theirs) = (org(store, "mine").await, org(store, "theirs").await);
    let session = stored_session(store, &mine).await;
    let (t1, t2) = (protocol::ids::TurnId::new(), protocol::ids::TurnId::new());
    let artifact = |id: &str, turn: protocol::ids::TurnId, sha: &str| Artifact {
        id: id.into(),
        object: "agent.session.artifact".into(),
        created_at: 1,
        environment_id: env(1),
        session_id: session.id,
        turn_id: turn,
        path: "report.bin".into(),
        size_bytes: 4,
        sha256: sha.into(),
    };
    let bytes = vec![0u8, 159, 146, 150];
    store.put_artifact(&mine, &artifact("art_1", t1, "aa"), &bytes).await.unwrap();
    store.put_artifact(&mine, &artifact("art_2", t1, "bb"), b"later").await.unwrap();
    store.put_artifact(&mine, &artifact("art_3", t2, "cc"), b"next").await.unwrap();
    assert_eq!(
        store.artifact_hashes(&mine, session.id).await.unwrap(),
        vec![("report.bin".to_string(), "aa".to_string()), ("report.bin".to_string(), "cc".to_string())],
        "a second one for the same path in the same turn is ignored"
    );
    assert_eq!(store.get_artifact(&mine, session.id, "art_1").await.unwrap(), Some((artifact("art_1", t1, ""), bytes)));
    assert!(store.get_artifact(&mine, session.id, "art_2").await.unwrap().is_none());
    assert!(store.get_artifact(&theirs, session.id, "art_1").await.unwrap().is_none());
    let page = store.list_artifacts(&mine, session.id, &super::records::asc()).await.unwrap();
    assert_eq!(page.items.iter().map(|a| a.id.as_str()).collect::<Vec<_>>(), ["art_1", "art_3"]);
    assert!(store.list_artifacts(&theirs, session.id, &super::records::asc()).await.unwrap().items.is_empty());
    assert!(!store.delete_artifact(&theirs, session.id, "art_1").await.unwrap());
    assert!(store.delete_artifact(&mine, session.id, "art_1").await.unwrap());
    assert!(store.get_artifact(&mine, session.id, "art_1").await.unwrap().is_none());
}
