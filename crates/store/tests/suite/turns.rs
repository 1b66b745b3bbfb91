//! Turns, items, events and idempotency keys as the engine and the routes read them.

use super::backend::Backend;
use super::contract;
use super::records::{event_write, item_write, message, org, stored_session, turn, turn_write};
use protocol::list::{Order, PageRequest};
use protocol::turn::TurnStatus;

contract!(
    events_replay_after_a_sequence_for_their_session_only,
    open_turns_are_those_of_every_organization_not_finished,
    history_holds_finished_turns_only_and_items_page_by_turn,
    an_idempotency_key_is_claimed_once_per_session_until_released,
    an_item_is_read_and_deleted_by_id_and_a_turn_with_its_items_in_its_organization_only
);

async fn an_item_is_read_and_deleted_by_id_and_a_turn_with_its_items_in_its_organization_only(b: &Backend) {
    let (o1, o2) = (org(b.store.as_ref(), "a").await, org(b.store.as_ref(), "b").await);
    let session = stored_session(b.store.as_ref(), &o1).await;
    let (kept, gone) = (turn(session.id, TurnStatus::Completed), turn(session.id, TurnStatus::Completed));
    let (first, second, third) = (message(kept.id, "one"), message(kept.id, "two"), message(gone.id, "three"));
    b.commit(vec![
        turn_write(&o1, &kept),
        turn_write(&o1, &gone),
        item_write(&o1, session.id, &first),
        item_write(&o1, session.id, &second),
        item_write(&o1, session.id, &third),
    ])
    .unwrap();
    let store = b.store.as_ref();
    assert_eq!(store.get_item(&o1, session.id, first.id()).await.unwrap(), Some(first.clone()));
    assert_eq!(store.get_item(&o2, session.id, first.id()).await.unwrap(), None, "another organization's");
    assert!(!store.delete_item(&o2, session.id, first.id()).await.unwrap());
    assert!(store.delete_item(&o1, session.id, first.id()).await.unwrap());
    assert!(!store.delete_item(&o1, session.id, first.id()).await.unwrap(), "once");
    assert_eq!(store.turn_items(&o1, session.id, kept.id).await.unwrap(), vec![second.clone()]);
    assert!(!store.delete_turn(&o2, gone.id).await.unwrap());
    assert!(store.delete_turn(&o1, gone.id).await.unwrap());
    assert_eq!(store.get_turn(&o1, gone.id).await.unwrap(), None);
    assert_eq!(store.get_item(&o1, session.id, third.id()).await.unwrap(), None, "its items went with it");
    assert_eq!(store.history(&o1, session.id).await.unwrap(), vec![second]);
}

async fn events_replay_after_a_sequence_for_their_session_only(b: &Backend) {
    let org_id = org(b.store.as_ref(), "o").await;
    let (s1, s2) = (stored_session(b.store.as_ref(), &org_id).await, stored_session(b.store.as_ref(), &org_id).await);
    assert_eq!(b.store.max_event_seq().await.unwrap(), 0);
    let writes = (1..=6).map(|seq| event_write(seq, if seq % 3 == 0 { s2.id } else { s1.id }, &seq.to_string()));
    b.commit(writes.collect()).unwrap();
    let seqs = |events: Vec<protocol::event::Event>| events.iter().map(|e| e.event_id.seq()).collect::<Vec<_>>();
    assert_eq!(seqs(b.store.events_after(s1.id, 0, 100).await.unwrap()), [1, 2, 4, 5]);
    assert_eq!(seqs(b.store.events_after(s1.id, 2, 100).await.unwrap()), [4, 5]);
    assert_eq!(seqs(b.store.events_after(s1.id, 1, 2).await.unwrap()), [2, 4]);
    assert_eq!(seqs(b.store.events_after(s2.id, 0, 100).await.unwrap()), [3, 6]);
    assert!(b.store.events_after(s1.id, 5, 100).await.unwrap().is_empty());
    assert_eq!(b.store.events_after(s1.id, 3, 1).await.unwrap(), vec![super::records::event(4, s1.id, "4")]);
    assert_eq!(b.store.max_event_seq().await.unwrap(), 6);
}

async fn open_turns_are_those_of_every_organization_not_finished(b: &Backend) {
    let (o1, o2) = (org(b.store.as_ref(), "a").await, org(b.store.as_ref(), "b").await);
    let (s1, s2) = (stored_session(b.store.as_ref(), &o1).await, stored_session(b.store.as_ref(), &o2).await);
    let turns = [
        (o1.clone(), turn(s1.id, TurnStatus::Queued)),
        (o1.clone(), turn(s1.id, TurnStatus::Completed)),
        (o2.clone(), turn(s2.id, TurnStatus::InProgress)),
        (o2.clone(), turn(s2.id, TurnStatus::Failed)),
        (o1.clone(), turn(s1.id, TurnStatus::Waiting)),
        (o1.clone(), turn(s1.id, TurnStatus::Cancelled)),
    ];
    b.commit(turns.iter().map(|(o, t)| turn_write(o, t)).collect()).unwrap();
    let open = b.store.open_turns().await.unwrap();
    let expected: Vec<_> = [0, 2, 4].iter().map(|&i| turns[i].clone()).collect();
    assert_eq!(open, expected);
    // Queued and running ones count as active, per organization; waiting ones do not.
    assert_eq!(b.store.count_active_turns(&o1).await.unwrap(), 1);
    assert_eq!(b.store.count_active_turns(&o2).await.unwrap(), 1);
    b.commit(vec![turn_write(&o1, &turn(s1.id, TurnStatus::InProgress))]).unwrap();
    assert_eq!(b.store.count_active_turns(&o1).await.unwrap(), 2);
    assert_eq!(b.store.count_active_turns("org_unknown").await.unwrap(), 0);
}

async fn history_holds_finished_turns_only_and_items_page_by_turn(b: &Backend) {
    let org_id = org(b.store.as_ref(), "o").await;
    let session = stored_session(b.store.as_ref(), &org_id).await;
    let (first, second) = (turn(session.id, TurnStatus::Completed), turn(session.id, TurnStatus::Queued));
    let (a, b_, c) = (message(first.id, "a"), message(second.id, "b"), message(first.id, "c"));
    b.commit(vec![
        turn_write(&org_id, &first),
        turn_write(&org_id, &second),
        item_write(&org_id, session.id, &a),
        item_write(&org_id, session.id, &b_),
        item_write(&org_id, session.id, &c),
    ])
    .unwrap();
    assert_eq!(b.store.history(&org_id, session.id).await.unwrap(), vec![a.clone(), c.clone()]);
    let all = super::records::asc();
    let items = b.store.list_items(&org_id, session.id, None, &all).await.unwrap().items;
    assert_eq!(items, vec![a.clone(), b_.clone(), c.clone()]);
    let of_first = b.store.list_items(&org_id, session.id, Some(first.id), &all).await.unwrap().items;
    assert_eq!(of_first, vec![a.clone(), c.clone()]);
    let desc = PageRequest { limit: 1, order: Order::Desc, ..PageRequest::default() };
    let page = b.store.list_items(&org_id, session.id, None, &desc).await.unwrap();
    assert_eq!((page.items, page.has_more), (vec![c], true));
    let turns = b.store.list_turns(&org_id, session.id, &all).await.unwrap().items;
    assert_eq!(turns, vec![first, second]);
    let other = org(b.store.as_ref(), "other").await;
    assert!(b.store.list_items(&other, session.id, None, &all).await.unwrap().items.is_empty());
    assert!(b.store.history(&other, session.id).await.unwrap().is_empty());
}

async fn an_idempotency_key_is_claimed_once_per_session_until_released(b: &Backend) {
    let org_id = org(b.store.as_ref(), "o").await;
    let (s1, s2) = (stored_session(b.store.as_ref(), &org_id).await, stored_session(b.store.as_ref(), &org_id).await);
    let store = b.store.as_ref();
    assert!(store.claim_idempotency_key(&org_id, s1.id, "key", 1).await.unwrap());
    assert!(!store.claim_idempotency_key(&org_id, s1.id, "key", 2).await.unwrap());
    assert!(store.claim_idempotency_key(&org_id, s2.id, "key", 2).await.unwrap(), "another session's own");
    assert!(store.claim_idempotency_key("org_other", s1.id, "key", 2).await.unwrap(), "another org's own");
    store.release_idempotency_key(&org_id, s1.id, "key").await.unwrap();
    assert!(store.claim_idempotency_key(&org_id, s1.id, "key", 3).await.unwrap());
}
