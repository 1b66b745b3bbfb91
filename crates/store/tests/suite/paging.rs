//! Lists: `after`/`before`/`limit`/`order`, `has_more`, and an unknown cursor.

use super::backend::Backend;
use super::contract;
use super::records::{agent, org};
use protocol::list::{Order, PageRequest};

contract!(lists_page_in_both_orders_with_cursors, a_cursor_of_no_item_of_the_list_is_an_error);

fn page(limit: u32, after: Option<&str>, before: Option<&str>, order: Order) -> PageRequest {
    PageRequest { limit, after: after.map(Into::into), before: before.map(Into::into), order }
}

async fn ids(b: &Backend, org_id: &str, request: PageRequest) -> (Vec<String>, bool) {
    let page = b.store.list_agents(org_id, &request).await.unwrap();
    (page.items.into_iter().map(|a| a.id).collect(), page.has_more)
}

async fn lists_page_in_both_orders_with_cursors(b: &Backend) {
    let org_id = org(b.store.as_ref(), "o").await;
    for i in 0..5 {
        b.store.create_agent(&org_id, &agent(&format!("a{i}"))).await.unwrap();
    }
    let v = |ids: &[&str]| ids.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    use Order::{Asc, Desc};
    assert_eq!(ids(b, &org_id, page(2, None, None, Asc)).await, (v(&["a0", "a1"]), true));
    assert_eq!(ids(b, &org_id, page(2, Some("a1"), None, Asc)).await, (v(&["a2", "a3"]), true));
    assert_eq!(ids(b, &org_id, page(2, Some("a3"), None, Asc)).await, (v(&["a4"]), false));
    assert_eq!(ids(b, &org_id, page(10, None, None, Asc)).await, (v(&["a0", "a1", "a2", "a3", "a4"]), false));
    assert_eq!(ids(b, &org_id, page(2, None, None, Desc)).await, (v(&["a4", "a3"]), true));
    assert_eq!(ids(b, &org_id, page(2, Some("a3"), None, Desc)).await, (v(&["a2", "a1"]), true));
    assert_eq!(ids(b, &org_id, page(2, Some("a1"), None, Desc)).await, (v(&["a0"]), false));
    // `before` walks back from its cursor; the page keeps the requested order.
    assert_eq!(ids(b, &org_id, page(2, None, Some("a3"), Asc)).await, (v(&["a1", "a2"]), true));
    assert_eq!(ids(b, &org_id, page(2, None, Some("a1"), Asc)).await, (v(&["a0"]), false));
    assert_eq!(ids(b, &org_id, page(2, None, Some("a1"), Desc)).await, (v(&["a3", "a2"]), true));
    assert_eq!(ids(b, &org_id, page(5, None, Some("a0"), Desc)).await, (v(&["a4", "a3", "a2", "a1"]), false));
}

async fn a_cursor_of_no_item_of_the_list_is_an_error(b: &Backend) {
    let (mine, theirs) = (org(b.store.as_ref(), "mine").await, org(b.store.as_ref(), "theirs").await);
    b.store.create_agent(&theirs, &agent("theirs_1")).await.unwrap();
    for cursor in ["nope", "theirs_1"] {
        for request in [page(2, Some(cursor), None, Order::Asc), page(2, None, Some(cursor), Order::Desc)] {
            let error = b.store.list_agents(&mine, &request).await.unwrap_err();
            assert!(matches!(&error, store::Error::UnknownCursor(c) if c == cursor), "{error:?}");
        }
    }
}
