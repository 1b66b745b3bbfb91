//! Environment templates: scoped to their organization, updated only from
//! the version a writer read, paged in both orders, and counted by the
//! environments made from them.

use super::backend::Backend;
use super::contract;
use super::records::{env, org};
use super::vaults::environment;
use protocol::environment::{EnvironmentConfig, EnvironmentStatus, NetworkAccess, NetworkParam};
use protocol::environment_template::{EnvironmentTemplateRecord, TemplateOrigin, TemplateStatus};
use protocol::ids::EnvironmentTemplateId;
use protocol::list::{Order, PageRequest};

contract!(
    templates_belong_to_their_organization,
    a_template_update_that_lost_a_race_changes_nothing,
    templates_page_in_both_orders_with_cursors,
    environments_are_counted_by_the_template_they_came_from
);

fn template(name: &str) -> EnvironmentTemplateRecord {
    let network = NetworkParam {
        access: NetworkAccess::Restricted,
        allowed_domains: Some(vec!["pypi.org".into()]),
        ..Default::default()
    };
    EnvironmentTemplateRecord {
        id: EnvironmentTemplateId::new(),
        name: Some(name.into()),
        created_at: 1,
        updated_at: 1,
        version: 1,
        config: EnvironmentConfig { network: Some(network), ..Default::default() },
        file_sizes: Vec::new(),
        status: TemplateStatus::Ready,
        preparation_log: None,
        preparation_error: None,
    }
}

async fn templates_belong_to_their_organization(b: &Backend) {
    let store = b.store.as_ref();
    let (mine, theirs) = (org(store, "mine").await, org(store, "theirs").await);
    let t = template("python");
    store.create_environment_template(&mine, &t).await.unwrap();
    assert_eq!(store.get_environment_template(&mine, &t.id).await.unwrap(), Some(t.clone()));
    assert_eq!(store.get_environment_template(&theirs, &t.id).await.unwrap(), None);
    assert!(store.list_environment_templates(&theirs, &PageRequest::default()).await.unwrap().items.is_empty());
    let mut changed = t.clone();
    changed.version = 2;
    changed.name = Some("theirs now".into());
    assert!(!store.update_environment_template(&theirs, &changed).await.unwrap());
    assert!(!store.delete_environment_template(&theirs, &t.id).await.unwrap());
    assert_eq!(store.get_environment_template(&mine, &t.id).await.unwrap(), Some(t.clone()));
    assert!(store.delete_environment_template(&mine, &t.id).await.unwrap());
    assert_eq!(store.get_environment_template(&mine, &t.id).await.unwrap(), None);
    assert!(!store.delete_environment_template(&mine, &t.id).await.unwrap());
}

async fn a_template_update_that_lost_a_race_changes_nothing(b: &Backend) {
    let store = b.store.as_ref();
    let mine = org(store, "mine").await;
    let t = template("python");
    store.create_environment_template(&mine, &t).await.unwrap();
    let (mut first, mut second) = (t.clone(), t.clone());
    (first.version, first.name) = (2, Some("first".into()));
    (second.version, second.name) = (2, Some("second".into()));
    assert!(store.update_environment_template(&mine, &first).await.unwrap());
    assert!(!store.update_environment_template(&mine, &second).await.unwrap(), "both read version 1");
    assert_eq!(store.get_environment_template(&mine, &t.id).await.unwrap(), Some(first.clone()));
    let mut third = first.clone();
    (third.version, third.name) = (3, None);
    assert!(store.update_environment_template(&mine, &third).await.unwrap());
    assert_eq!(store.get_environment_template(&mine, &t.id).await.unwrap(), Some(third));
}

async fn templates_page_in_both_orders_with_cursors(b: &Backend) {
    let store = b.store.as_ref();
    let mine = org(store, "mine").await;
    let mut ids = Vec::new();
    for i in 0..5 {
        let t = template(&format!("t{i}"));
        store.create_environment_template(&mine, &t).await.unwrap();
        ids.push(t.id.to_string());
    }
    let page = |limit, after: Option<&String>, before: Option<&String>, order| PageRequest {
        limit,
        after: after.cloned(),
        before: before.cloned(),
        order,
    };
    let names = |p: store::Page<EnvironmentTemplateRecord>| {
        (p.items.into_iter().map(|t| t.id.to_string()).collect::<Vec<_>>(), p.has_more)
    };
    let mine = mine.as_str();
    let list = |r: PageRequest| async move { names(store.list_environment_templates(mine, &r).await.unwrap()) };
    assert_eq!(list(page(2, None, None, Order::Asc)).await, (ids[0..2].to_vec(), true));
    assert_eq!(list(page(2, Some(&ids[1]), None, Order::Asc)).await, (ids[2..4].to_vec(), true));
    assert_eq!(list(page(2, Some(&ids[3]), None, Order::Asc)).await, (ids[4..].to_vec(), false));
    let desc: Vec<String> = ids.iter().rev().cloned().collect();
    assert_eq!(list(page(2, None, None, Order::Desc)).await, (desc[0..2].to_vec(), true));
    assert_eq!(list(page(2, Some(&ids[3]), None, Order::Desc)).await, (desc[2..4].to_vec(), true));
    assert_eq!(list(page(2, Some(&ids[1]), None, Order::Desc)).await, (desc[4..].to_vec(), false));
    assert_eq!(list(page(2, None, Some(&ids[3]), Order::Asc)).await, (ids[1..3].to_vec(), true));
    let unknown = PageRequest { after: Some(EnvironmentTemplateId::new().to_string()), ..Default::default() };
    assert!(matches!(store.list_environment_templates(mine, &unknown).await, Err(store::Error::UnknownCursor(_))));
}

async fn environments_are_counted_by_the_template_they_came_from(b: &Backend) {
    let store = b.store.as_ref();
    let (mine, theirs) = (org(store, "mine").await, org(store, "theirs").await);
    let (t, other) = (template("python"), template("node"));
    store.create_environment_template(&mine, &t).await.unwrap();
    store.create_environment_template(&mine, &other).await.unwrap();
    for n in [1, 2] {
        let mut e = environment(env(n), EnvironmentStatus::Pending);
        e.template = Some(TemplateOrigin { id: t.id.clone(), version: 1 });
        store.put_environment(&mine, &e).await.unwrap();
        // A later write of the environment keeps where it came from.
        e.status = EnvironmentStatus::Ready;
        store.put_environment(&mine, &e).await.unwrap();
    }
    store.put_environment(&mine, &environment(env(3), EnvironmentStatus::Pending)).await.unwrap();
    assert_eq!(store.environments_from_template(&mine, &t.id).await.unwrap(), 2);
    assert_eq!(store.environments_from_template(&mine, &other.id).await.unwrap(), 0);
    assert_eq!(store.environments_from_template(&theirs, &t.id).await.unwrap(), 0);
    let back = store.get_environment(&mine, &env(1)).await.unwrap().unwrap();
    assert_eq!(back.template, Some(TemplateOrigin { id: t.id.clone(), version: 1 }));
    assert!(store.delete_environment(&mine, &env(1)).await.unwrap());
    assert_eq!(store.environments_from_template(&mine, &t.id).await.unwrap(), 1);
}
