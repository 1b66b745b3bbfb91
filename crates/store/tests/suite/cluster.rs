//! The nodes of a cluster (PostgreSQL): registration, a second start under a
//! live node's id refused, distinct slots, heartbeats, a clean leave and a
//! crashed node's id taken over.
//! SQLite has no cluster: one process uses its file.

use super::backend::{Backend, Kind};
use super::contract;
use store::NodeSpec;

contract!(nodes_register_under_distinct_ids_and_a_live_id_is_refused);

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
