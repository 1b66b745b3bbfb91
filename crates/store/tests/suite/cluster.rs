//! The nodes of a cluster (PostgreSQL): registration, a second start under a
//! live node's id refused, distinct slots, heartbeats, a clean leave and a
//! crashed node's id taken over; an agent changed through another node is
//! read fresh.
//! SQLite has no cluster: one process uses its file.

use super::backend::{Backend, Kind};
use super::contract;
use super::records::{agent, event_write, org, stored_session};
use protocol::ids::SessionId;
use std::time::Duration;
use store::cluster::leases::InboxEntry;
use store::cluster::notices::{Heard, Notice};
use store::{Fence, NodeSpec, Write};
use tokio::sync::broadcast;

contract!(nodes_register_under_distinct_ids_and_a_live_id_is_refused);
contract!(a_lease_holds_a_session_for_one_node_and_notices_carry_what_others_commit);
contract!(writes_made_under_a_lease_commit_only_while_the_lease_is_still_this_nodes);
contract!(an_agent_a_node_has_read_is_read_fresh_after_another_node_changes_it);

/// The next notice `rx` hears that `want` picks, within 5 s.
async fn hear(rx: &mut broadcast::Receiver<Heard>, want: impl Fn(&Heard) -> bool) -> Heard {
    let found = async {
        loop {
            let heard = rx.recv().await.unwrap();
            if want(&heard) {
                return heard;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(5), found).await.expect("the notice arrives")
}

async fn a_lease_holds_a_session_for_one_node_and_notices_carry_what_others_commit(b: &Backend) {
    let Some(a) = b.store.join_cluster(&node("a", 1)).await.unwrap() else {
        assert_eq!(b.kind, Kind::Sqlite);
        return;
    };
    let other = store::open(&b.url).await.unwrap();
    let c = other.join_cluster(&node("c", 2)).await.unwrap().unwrap();
    let (mut a_hears, mut c_hears) = (a.notices(), c.notices());
    let org_id = org(b.store.as_ref(), "o").await;
    let session = stored_session(b.store.as_ref(), &org_id).await;
    let id = session.id;

    // One holder at a time; a new acquisition by the holder outlives a release of the old one.
    let first = a.acquire(id).await.unwrap().unwrap();
    assert_eq!(first.last_seq, 0);
    assert_eq!(c.acquire(id).await.unwrap(), None, "a holds it");
    assert_eq!(c.holder(id).await.unwrap().as_deref(), Some("a"));
    let second = a.acquire(id).await.unwrap().unwrap();
    assert!(second.epoch > first.epoch);
    assert!(!a.release(id, first.epoch).await.unwrap());
    assert_eq!(c.holder(id).await.unwrap().as_deref(), Some("a"), "a stale release keeps the lease");

    // c's request reaches a through the inbox; a's answer reaches c.
    let request = c.push(id, &org_id, r#"{"op":1}"#, Some("a")).await.unwrap();
    let heard = hear(&mut a_hears, |h| matches!(&h.notice, Notice::Inbox { session, .. } if *session == id)).await;
    assert_eq!(heard.notice, Notice::Inbox { session: id, org: org_id.clone(), target: Some("a".into()) });
    assert_eq!(heard.from, Some(c.slot()));
    let taken = a.take_inbox(id).await.unwrap();
    assert_eq!(taken, [InboxEntry { id: request, org_id: org_id.clone(), doc: r#"{"op":1}"#.into() }]);
    assert!(a.take_inbox(id).await.unwrap().is_empty(), "taken once");
    a.reply(request, r#"{"ok":"x y"}"#).await.unwrap();
    let heard = hear(&mut c_hears, |h| matches!(h.notice, Notice::Reply { .. })).await;
    assert_eq!(heard.notice, Notice::Reply { request, outcome: r#"{"ok":"x y"}"#.into() });
    // A release with a request waiting says so; the lease is free then.
    c.push(id, &org_id, "{}", None).await.unwrap();
    assert!(a.release(id, second.epoch).await.unwrap());
    assert_eq!(c.holder(id).await.unwrap(), None);
    assert!(c.acquire(id).await.unwrap().unwrap().epoch > second.epoch);

    // What a's journal commits, c hears of (after the commit): the last event, the state.
    b.commit(vec![
        event_write(1 << 6, id, "a"),
        event_write(2 << 6, id, "b"),
        Write::SessionState { org_id: org_id.clone(), session_id: id, state: session.state() },
    ])
    .unwrap();
    let heard = hear(&mut c_hears, |h| matches!(h.notice, Notice::Events { .. })).await;
    assert_eq!(heard, Heard { from: Some(a.slot()), notice: Notice::Events { session: id, seq: 2 << 6 } });
    assert_eq!(b.store.events_after(id, 0, 10).await.unwrap().len(), 2, "committed before it was heard");
    hear(&mut c_hears, |h| h.notice == Notice::Session(id)).await;
    // A configuration change made through the pool is heard too, and so is a revocation.
    other.put_session(&org_id, &session).await.unwrap();
    hear(&mut a_hears, |h| h.notice == Notice::Session(id) && h.from == Some(c.slot())).await;
    other.revoke_api_key(None, "key_none", 1).await.unwrap();
    hear(&mut a_hears, |h| h.notice == Notice::Keys).await;
    assert_eq!(a.acquire(id).await.unwrap(), None, "c holds it");
    assert_eq!(c.acquire(id).await.unwrap().unwrap().last_seq, 2 << 6, "an acquisition sees the session's last event");

    // A node that stops leaves its leases to be taken over at once.
    let lost = SessionId::new();
    a.acquire(lost).await.unwrap().unwrap();
    assert!(c.take_expired(10).await.unwrap().is_empty(), "a's lease is live");
    a.leave().await.unwrap();
    let taken = c.take_expired(10).await.unwrap();
    assert_eq!(taken.iter().map(|t| (t.session, t.node.as_str())).collect::<Vec<_>>(), [(lost, "a")]);
    assert_eq!(c.holder(lost).await.unwrap().as_deref(), Some("c"));
    assert!(!c.release(lost, taken[0].lease.epoch).await.unwrap());
    assert_eq!(c.holder(lost).await.unwrap(), None);
}

/// The journal's fence: a node cut off past its lease (here: one that left)
/// finds its writes to the session another node took over refused, and
/// only those; a later acquisition of its own keeps earlier epochs' writes.
async fn writes_made_under_a_lease_commit_only_while_the_lease_is_still_this_nodes(b: &Backend) {
    let org_id = org(b.store.as_ref(), "o").await;
    let session = stored_session(b.store.as_ref(), &org_id).await;
    let (fenced, free) = (session.id, SessionId::new());
    let fence = |epoch| vec![Fence { session_id: fenced, epoch }];
    let Some(a) = b.store.join_cluster(&node("a", 1)).await.unwrap() else {
        assert_eq!(b.kind, Kind::Sqlite);
        let refused = b.commit_fenced(vec![event_write(1 << 6, fenced, "x")], fence(7)).unwrap();
        assert!(refused.is_empty(), "one process alone fences nothing out");
        assert_eq!(b.store.events_after(fenced, 0, 10).await.unwrap().len(), 1);
        return;
    };
    let c = store::open(&b.url).await.unwrap().join_cluster(&node("c", 2)).await.unwrap().unwrap();
    let first = a.acquire(fenced).await.unwrap().unwrap();
    let refused = b.commit_fenced(vec![event_write(1 << 6, fenced, "held")], fence(first.epoch)).unwrap();
    assert!(refused.is_empty(), "{refused:?}");
    let second = a.acquire(fenced).await.unwrap().unwrap();
    let refused = b.commit_fenced(vec![event_write(2 << 6, fenced, "older epoch")], fence(first.epoch)).unwrap();
    assert!(refused.is_empty(), "this node's later lease keeps its earlier writes: {refused:?}");

    // Acquisitions racing on one node: the row keeps the largest epoch any of them returned.
    let mut racing = tokio::task::JoinSet::new();
    for _ in 0..16 {
        let a = a.clone();
        racing.spawn(async move { a.acquire(fenced).await.unwrap().unwrap().epoch });
    }
    let latest = racing.join_all().await.into_iter().max().unwrap();
    let refused = b.commit_fenced(vec![event_write(5 << 6, fenced, "raced")], fence(latest)).unwrap();
    assert!(refused.is_empty(), "the row's epoch is below one an acquisition returned: {refused:?}");

    // a is cut off; c takes the session over. a's late writes to it are left out, not the others'.
    a.leave().await.unwrap();
    let taken = c.take_expired(10).await.unwrap();
    assert_eq!(taken.iter().map(|t| t.session).collect::<Vec<_>>(), [fenced]);
    let late = vec![
        event_write(3 << 6, fenced, "late"),
        event_write(4 << 6, free, "unfenced"),
        Write::SessionState { org_id: org_id.clone(), session_id: fenced, state: session.state() },
    ];
    let refused = b.commit_fenced(late, fence(second.epoch)).unwrap();
    assert_eq!(refused, [fenced]);
    let stored = b.store.events_after(fenced, 0, 10).await.unwrap();
    assert_eq!(stored.len(), 3, "nothing of the refused batch's writes to the session: {stored:?}");
    assert_eq!(b.store.events_after(free, 0, 10).await.unwrap().len(), 1, "other sessions' writes commit");
    assert!(c.release(fenced, taken[0].lease.epoch).await.is_ok());
}

/// The agents' read cache serves nothing while another node shares the
/// database: an agent read (and cached) through one node, then changed
/// through another, is read as changed through the first.
async fn an_agent_a_node_has_read_is_read_fresh_after_another_node_changes_it(b: &Backend) {
    let Some(a) = b.store.join_cluster(&node("a", 1)).await.unwrap() else {
        assert_eq!(b.kind, Kind::Sqlite);
        return;
    };
    let mut a_hears = a.notices();
    let org_id = org(b.store.as_ref(), "o").await;
    b.store.create_agent(&org_id, &agent("agent_1")).await.unwrap();
    assert_eq!(b.store.get_agent(&org_id, "agent_1").await.unwrap().unwrap().version, 1);
    let other = store::open(&b.url).await.unwrap();
    let c = other.join_cluster(&node("c", 2)).await.unwrap().unwrap();
    hear(&mut a_hears, |h| h.notice == Notice::Joined && h.from == Some(c.slot())).await;
    let mut updated = agent("agent_1");
    updated.version = 2;
    assert!(other.update_agent(&org_id, &updated).await.unwrap());
    assert_eq!(b.store.get_agent(&org_id, "agent_1").await.unwrap().unwrap().version, 2, "not the cached version 1");
}

fn node(id: &str, port: u16) -> NodeSpec {
    NodeSpec { id: id.into(), advertise: format!("http://127.0.0.1:{port}"), version: "test".into() }
}

async fn nodes_register_under_distinct_ids_and_a_live_id_is_refused(b: &Backend) {
    let joined = b.store.join_cluster(&node("a", 1)).await.unwrap();
    if b.kind == Kind::Sqlite {
        assert!(joined.is_none(), "SQLite is one process's");
        return;
    }
    let a = joined.unwrap();
    assert_eq!(a.peers(), 0);
    a.keep_alive();
    // Another process (its own store) under the same id while `a` is alive: refused, saying so.
    let other = store::open(&b.url).await.unwrap();
    let error = other.join_cluster(&node("a", 2)).await.err().unwrap().to_string();
    assert!(error.contains("node id 'a' is already in use") && error.contains("http://127.0.0.1:1"), "{error}");
    let bad = other.join_cluster(&NodeSpec { id: "a b".into(), ..node("x", 3) }).await.err().unwrap().to_string();
    assert!(bad.contains("node id 'a b' is not valid"), "{bad}");
    let second = other.join_cluster(&node("b", 2)).await.unwrap().unwrap();
    assert_ne!(a.slot(), second.slot(), "slots never collide");
    assert_eq!(second.peers(), 1, "b sees a");
    assert_eq!(a.heartbeat().await.unwrap(), 1, "a sees b");
    let nodes = a.nodes().await.unwrap();
    let ids: Vec<(&str, bool)> = nodes.iter().map(|n| (n.id.as_str(), n.alive)).collect();
    assert_eq!(ids, [("a", true), ("b", true)]);
    assert_eq!(nodes[1].advertise, "http://127.0.0.1:2");
    // A clean leave frees the id at once; the node that comes back keeps its slot.
    second.leave().await.unwrap();
    assert_eq!(a.heartbeat().await.unwrap(), 0);
    let back = other.join_cluster(&node("b", 4)).await.unwrap().unwrap();
    assert_eq!(back.slot(), second.slot());
    // The registration `second` held is another's now: its heartbeat says so.
    let taken = second.heartbeat().await.err().unwrap().to_string();
    assert!(taken.contains("registered again"), "{taken}");
    // A registration whose heartbeat stopped without a leave (a crash) is taken over, after a
    // look for a renewal: the restarted node is not refused.
    drop(back);
    let again = other.join_cluster(&node("b", 5)).await.unwrap().unwrap();
    assert_eq!(again.slot(), second.slot());
}
