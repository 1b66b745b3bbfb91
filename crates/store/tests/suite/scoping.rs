//! "A lookup of another organization's id answers 404": every method takes
//! the organization, and another organization's rows are simply not found.

use super::backend::Backend;
use super::contract;
use super::records::{agent, org, stored_session};
use protocol::list::PageRequest;
use store::{ApiKeyRecord, SessionFilter};

contract!(another_organizations_ids_are_invisible, keys_are_found_by_hash_and_revoked_within_their_organization);

async fn another_organizations_ids_are_invisible(b: &Backend) {
    let store = b.store.as_ref();
    let (mine, theirs) = (org(store, "mine").await, org(store, "theirs").await);
    assert_eq!(store.count_organizations().await.unwrap(), 2);
    assert!(matches!(
        store.create_organization(&store.get_organization(&mine).await.unwrap().unwrap()).await,
        Err(store::Error::Conflict(_)) | Err(store::Error::Database(_))
    ));
    assert_eq!(store.find_organization("theirs").await.unwrap().unwrap().id, theirs);

    store.create_agent(&mine, &agent("agent_1")).await.unwrap();
    let session = stored_session(store, &mine).await;
    assert!(store.get_agent(&theirs, "agent_1").await.unwrap().is_none());
    assert!(store.get_session(&theirs, session.id).await.unwrap().is_none());
    let page = PageRequest::default();
    assert!(store.list_agents(&theirs, &page).await.unwrap().items.is_empty());
    assert!(store.list_sessions(&theirs, &SessionFilter::default(), &page).await.unwrap().items.is_empty());
    assert!(!store.delete_agent(&theirs, "agent_1").await.unwrap());
    assert!(!store.delete_session(&theirs, session.id).await.unwrap());
    let mut updated = agent("agent_1");
    updated.version = 2;
    assert!(!store.update_agent(&theirs, &updated).await.unwrap(), "another organization cannot update it");
    assert!(!store.put_session(&theirs, &session).await.unwrap());
    // Still there for its own organization.
    assert_eq!(store.get_agent(&mine, "agent_1").await.unwrap().unwrap().version, 1);
    assert_eq!(store.get_session(&mine, session.id).await.unwrap().unwrap(), session);
    assert!(store.update_agent(&mine, &updated).await.unwrap());
    assert!(!store.update_agent(&mine, &updated).await.unwrap(), "a stale version loses the race");
    assert_eq!(store.get_agent(&mine, "agent_1").await.unwrap().unwrap().version, 2);
    assert!(store.delete_agent(&mine, "agent_1").await.unwrap());
    assert!(store.get_agent(&mine, "agent_1").await.unwrap().is_none());
    assert!(store.delete_session(&mine, session.id).await.unwrap());
    assert!(store.get_session(&mine, session.id).await.unwrap().is_none());
}

async fn keys_are_found_by_hash_and_revoked_within_their_organization(b: &Backend) {
    let store = b.store.as_ref();
    let (mine, theirs) = (org(store, "mine").await, org(store, "theirs").await);
    let key = ApiKeyRecord {
        id: "key_1".into(),
        org_id: mine.clone(),
        hash: "ab".repeat(32),
        prefix: "rbk_abc".into(),
        name: Some("ci".into()),
        scopes: vec![protocol::admin::Scope::TasksRead, protocol::admin::Scope::Admin],
        created_at: 5,
        revoked_at: None,
    };
    store.create_api_key(&key).await.unwrap();
    assert_eq!(store.find_api_key(&key.hash).await.unwrap(), Some(key.clone()));
    assert!(store.find_api_key("cd").await.unwrap().is_none());
    assert_eq!(store.list_api_keys(Some(&mine)).await.unwrap(), vec![key.clone()]);
    assert!(store.list_api_keys(Some(&theirs)).await.unwrap().is_empty());
    assert_eq!(store.list_api_keys(None).await.unwrap().len(), 1);
    assert!(!store.revoke_api_key(Some(&theirs), "key_1", 9).await.unwrap());
    assert!(store.revoke_api_key(Some(&mine), "key_1", 9).await.unwrap());
    assert!(store.revoke_api_key(None, "key_1", 10).await.unwrap(), "revoking again keeps the first time");
    assert_eq!(store.find_api_key(&key.hash).await.unwrap().unwrap().revoked_at, Some(9));
}
