//! Skills and their versions (zips kept byte for byte, numbers minted under
//! the skill's `rev`), uploaded files, and environments' own copies of both.

use super::backend::Backend;
use super::contract;
use super::records::{asc, env, org};
use protocol::file::FileObject;
use protocol::skill::{SkillRecord, SkillVersionRecord};

contract!(
    skills_and_their_versions_belong_to_their_organization,
    a_skill_write_that_lost_a_race_changes_nothing,
    files_keep_their_bytes_and_filter_by_purpose,
    environments_keep_their_own_copies_of_skills_and_files
);

fn skill(id: &str, rev: i64, last: i64) -> SkillRecord {
    SkillRecord {
        id: id.into(),
        created_at: 1,
        name: "pdf-tools".into(),
        description: "Reads PDFs.".into(),
        default_version: 1,
        latest_version: last,
        last_version: last,
        rev,
    }
}

fn version(skill_id: &str, n: i64) -> SkillVersionRecord {
    SkillVersionRecord {
        id: format!("skillver_{skill_id}_{n}"),
        skill_id: skill_id.into(),
        version: n,
        created_at: 1,
        name: "pdf-tools".into(),
        description: "Reads PDFs.".into(),
        size_bytes: 3,
    }
}

fn file(id: &str, purpose: &str) -> FileObject {
    FileObject {
        id: id.into(),
        object: "file".into(),
        bytes: 4,
        created_at: 1,
        filename: "a.txt".into(),
        purpose: purpose.into(),
        status: "processed".into(),
        expires_at: None,
        status_details: None,
    }
}

async fn skills_and_their_versions_belong_to_their_organization(b: &Backend) {
    let store = b.store.as_ref();
    let (mine, theirs) = (org(store, "mine").await, org(store, "theirs").await);
    let zip = vec![b'P', b'K', 0, 255];
    store.create_skill(&mine, &skill("skill_1", 1, 1), &version("skill_1", 1), &zip).await.unwrap();
    assert_eq!(store.get_skill(&mine, "skill_1").await.unwrap(), Some(skill("skill_1", 1, 1)));
    assert!(store.get_skill(&theirs, "skill_1").await.unwrap().is_none());
    assert_eq!(store.skill_version_content(&mine, "skill_1", 1).await.unwrap(), Some(zip.clone()));
    assert!(store.skill_version_content(&theirs, "skill_1", 1).await.unwrap().is_none());
    assert!(store.get_skill_version(&theirs, "skill_1", 1).await.unwrap().is_none());

    assert!(store.add_skill_version(&mine, &skill("skill_1", 2, 2), &version("skill_1", 2), b"v2").await.unwrap());
    let versions = store.list_skill_versions(&mine, "skill_1", &asc()).await.unwrap().items;
    assert_eq!(versions, vec![version("skill_1", 1), version("skill_1", 2)]);
    assert!(store.list_skill_versions(&theirs, "skill_1", &asc()).await.unwrap().items.is_empty());
    assert!(!store.update_skill(&theirs, &skill("skill_1", 3, 2)).await.unwrap());

    assert!(store.delete_skill_version(&mine, &skill("skill_1", 3, 2), 2).await.unwrap());
    assert!(store.get_skill_version(&mine, "skill_1", 2).await.unwrap().is_none());
    assert_eq!(store.get_skill(&mine, "skill_1").await.unwrap().unwrap().rev, 3);
    assert_eq!(store.list_skills(&mine, &asc()).await.unwrap().items.len(), 1);
    assert!(store.list_skills(&theirs, &asc()).await.unwrap().items.is_empty());

    assert!(!store.delete_skill(&theirs, "skill_1").await.unwrap());
    assert!(store.delete_skill(&mine, "skill_1").await.unwrap());
    assert!(store.get_skill(&mine, "skill_1").await.unwrap().is_none());
    assert!(store.skill_version_content(&mine, "skill_1", 1).await.unwrap().is_none(), "versions go with it");
}

async fn a_skill_write_that_lost_a_race_changes_nothing(b: &Backend) {
    let store = b.store.as_ref();
    let mine = org(store, "mine").await;
    store.create_skill(&mine, &skill("skill_1", 1, 1), &version("skill_1", 1), b"v1").await.unwrap();
    assert!(store.add_skill_version(&mine, &skill("skill_1", 2, 2), &version("skill_1", 2), b"v2").await.unwrap());
    // A second writer that read rev 1 too: neither its skill nor its version is written.
    let mut late = version("skill_1", 2);
    late.id = "skillver_late".into();
    assert!(!store.add_skill_version(&mine, &skill("skill_1", 2, 2), &late, b"late").await.unwrap());
    assert_eq!(store.skill_version_content(&mine, "skill_1", 2).await.unwrap(), Some(b"v2".to_vec()));
    assert!(!store.update_skill(&mine, &skill("skill_1", 2, 2)).await.unwrap());
    assert!(store.update_skill(&mine, &skill("skill_1", 3, 2)).await.unwrap());
    // A version number is taken once, whatever the skill's document says.
    let dup = store.add_skill_version(&mine, &skill("skill_1", 4, 2), &late, b"dup").await;
    assert!(dup.is_err() || !dup.unwrap());
    assert_eq!(store.get_skill(&mine, "skill_1").await.unwrap().unwrap().rev, 3, "the failed insert rolled back");
}

async fn files_keep_their_bytes_and_filter_by_purpose(b: &Backend) {
    let store = b.store.as_ref();
    let (mine, theirs) = (org(store, "mine").await, org(store, "theirs").await);
    store.create_file(&mine, &file("file-1", "user_data"), &[0, 1, 2, 255]).await.unwrap();
    store.create_file(&mine, &file("file-2", "assistants"), b"abcd").await.unwrap();
    assert_eq!(store.get_file(&mine, "file-1").await.unwrap(), Some(file("file-1", "user_data")));
    assert!(store.get_file(&theirs, "file-1").await.unwrap().is_none());
    assert_eq!(store.file_content(&mine, "file-1").await.unwrap(), Some(vec![0, 1, 2, 255]));
    assert!(store.file_content(&theirs, "file-1").await.unwrap().is_none());
    let all = store.list_files(&mine, None, &asc()).await.unwrap().items;
    assert_eq!(all.iter().map(|f| f.id.as_str()).collect::<Vec<_>>(), ["file-1", "file-2"]);
    let user = store.list_files(&mine, Some("user_data"), &asc()).await.unwrap().items;
    assert_eq!(user, vec![file("file-1", "user_data")]);
    assert!(store.list_files(&theirs, None, &asc()).await.unwrap().items.is_empty());
    assert!(!store.delete_file(&theirs, "file-1").await.unwrap());
    assert!(store.delete_file(&mine, "file-1").await.unwrap());
    assert!(store.get_file(&mine, "file-1").await.unwrap().is_none());
}

async fn environments_keep_their_own_copies_of_skills_and_files(b: &Backend) {
    let store = b.store.as_ref();
    let (mine, theirs) = (org(store, "mine").await, org(store, "theirs").await);
    store.create_skill(&mine, &skill("skill_1", 1, 1), &version("skill_1", 1), b"zip-v1").await.unwrap();
    store.create_file(&mine, &file("file-1", "user_data"), b"data").await.unwrap();
    assert!(store.copy_skill_version_to_environment(&mine, &env(1), "skill:pdf-tools", "skill_1", 1).await.unwrap());
    assert!(store.copy_file_to_environment(&mine, &env(1), "file:0", "file-1").await.unwrap());
    store.put_environment_content(&mine, &env(1), "skill:inline", &[9, 0, 9]).await.unwrap();
    // Another organization's skill or file is not there to copy.
    assert!(!store.copy_skill_version_to_environment(&theirs, &env(2), "skill:x", "skill_1", 1).await.unwrap());
    assert!(!store.copy_file_to_environment(&theirs, &env(2), "file:0", "file-1").await.unwrap());
    assert!(!store.copy_skill_version_to_environment(&mine, &env(1), "skill:x", "skill_1", 7).await.unwrap());

    // The copies stay when the originals go.
    assert!(store.delete_skill(&mine, "skill_1").await.unwrap());
    assert!(store.delete_file(&mine, "file-1").await.unwrap());
    let env1 = env(1);
    let content = |key: &'static str| store.environment_content(&mine, &env1, key);
    assert_eq!(content("skill:pdf-tools").await.unwrap(), Some(b"zip-v1".to_vec()));
    assert_eq!(content("file:0").await.unwrap(), Some(b"data".to_vec()));
    assert_eq!(content("skill:inline").await.unwrap(), Some(vec![9, 0, 9]));
    assert!(store.environment_content(&theirs, &env(1), "file:0").await.unwrap().is_none());

    store.delete_environment_contents(&theirs, &env(1)).await.unwrap();
    assert!(content("file:0").await.unwrap().is_some(), "only its organization deletes them");
    store.delete_environment_contents(&mine, &env(1)).await.unwrap();
    assert!(content("file:0").await.unwrap().is_none());
    assert!(content("skill:pdf-tools").await.unwrap().is_none());
}
