//! The journal's batches: applied in order in one transaction; a batch that
//! fails leaves nothing; state writes keep the session's configuration and
//! configuration writes keep the engine's state.

use super::backend::{Backend, Kind};
use super::contract;
use super::records::{event_write, item_write, message, org, stored_session, turn, turn_write};

use protocol::ids::EventId;
use protocol::session::SessionStatus;
use protocol::turn::TurnStatus;
use sqlx::Connection;
use store::{SessionFilter, Write};

contract!(
    a_batch_applies_its_writes_in_order,
    a_created_session_reads_the_same_from_the_cache_and_from_the_database,
    rows_written_twice_in_a_batch_keep_their_first_place_and_last_content,
    a_failing_batch_leaves_nothing,
    configuration_and_state_writes_keep_each_others_fields,
    a_writer_writes_states_over_documents_changed_since_its_last_batch,
    a_writer_commits_from_a_task_as_from_its_thread,
    deleting_a_session_deletes_its_turns_items_and_events
);

async fn a_batch_applies_its_writes_in_order(b: &Backend) {
    let org_id = org(b.store.as_ref(), "o").await;
    let session = stored_session(b.store.as_ref(), &org_id).await;
    // Read once so the session cache holds it: the state write must reach the cached copy too.
    b.store.get_session(&org_id, session.id).await.unwrap();
    let queued = turn(session.id, TurnStatus::Queued);
    let mut done = queued.clone();
    done.status = TurnStatus::Completed;
    let item = message(queued.id, "hello");
    let mut state = session.state();
    state.status = SessionStatus::InProgress;
    state.last_active_at = 42;
    b.commit(vec![
        turn_write(&org_id, &queued),
        item_write(&org_id, session.id, &item),
        Write::SessionState { org_id: org_id.clone(), session_id: session.id, state: state.clone() },
        event_write(1, session.id, "a"),
        turn_write(&org_id, &done),
        event_write(2, session.id, "b"),
    ])
    .unwrap();
    let id = queued.id;
    assert_eq!(b.store.get_turn(&org_id, id).await.unwrap(), Some(done.clone()), "the later write wins");
    assert!(b.store.open_turns().await.unwrap().is_empty());
    assert_eq!(b.store.turn_items(&org_id, session.id, queued.id).await.unwrap(), vec![item.clone()]);
    assert_eq!(b.store.history(&org_id, session.id).await.unwrap(), vec![item]);
    let events = b.store.events_after(session.id, 0, 10).await.unwrap();
    assert_eq!(events.iter().map(|e| e.event_id).collect::<Vec<_>>(), [EventId::from_seq(1), EventId::from_seq(2)]);
    let stored = b.store.get_session(&org_id, session.id).await.unwrap().unwrap();
    assert_eq!((stored.status, stored.last_active_at), (SessionStatus::InProgress, 42));
    // Read around the cache: another store over the same database.
    let fresh = store::open(&b.url).await.unwrap();
    let stored = fresh.get_session(&org_id, session.id).await.unwrap().unwrap();
    assert_eq!((stored.status, stored.last_active_at), (SessionStatus::InProgress, 42));
    assert_eq!(b.store.max_event_seq().await.unwrap(), 2);
    // A batch of one write.
    let mut failed = done;
    failed.status = TurnStatus::Failed;
    b.commit(vec![turn_write(&org_id, &failed)]).unwrap();
    assert_eq!(b.store.get_turn(&org_id, id).await.unwrap().unwrap().status, TurnStatus::Failed);
}

async fn a_created_session_reads_the_same_from_the_cache_and_from_the_database(b: &Backend) {
    let org_id = org(b.store.as_ref(), "o").await;
    let session = stored_session(b.store.as_ref(), &org_id).await;
    let cached = b.store.get_session(&org_id, session.id).await.unwrap().unwrap();
    let fresh = store::open(&b.url).await.unwrap();
    let stored = fresh.get_session(&org_id, session.id).await.unwrap().unwrap();
    assert_eq!(cached, stored);
    assert_eq!(cached, session);
    // Another organization does not see it through the cache either.
    let other = org(b.store.as_ref(), "p").await;
    assert_eq!(b.store.get_session(&other, session.id).await.unwrap(), None);
}

async fn rows_written_twice_in_a_batch_keep_their_first_place_and_last_content(b: &Backend) {
    let org_id = org(b.store.as_ref(), "o").await;
    let session = stored_session(b.store.as_ref(), &org_id).await;
    let t = turn(session.id, TurnStatus::InProgress);
    let (first, second) = (message(t.id, "one"), message(t.id, "two"));
    let grown = message_with_id(&first, "one, grown");
    let mut busy = session.state();
    busy.status = SessionStatus::InProgress;
    let mut later = busy.clone();
    later.last_active_at = 99;
    b.commit(vec![
        turn_write(&org_id, &t),
        item_write(&org_id, session.id, &first),
        Write::SessionState { org_id: org_id.clone(), session_id: session.id, state: busy },
        item_write(&org_id, session.id, &second),
        item_write(&org_id, session.id, &grown),
        Write::SessionState { org_id: org_id.clone(), session_id: session.id, state: later },
    ])
    .unwrap();
    let items = b.store.list_items(&org_id, session.id, None, &super::records::asc()).await.unwrap().items;
    assert_eq!(items, vec![grown, second]);
    let fresh = store::open(&b.url).await.unwrap();
    let stored = fresh.get_session(&org_id, session.id).await.unwrap().unwrap();
    assert_eq!((stored.status, stored.last_active_at), (SessionStatus::InProgress, 99), "the batch's last state");
}

/// `item` (a message) with another text and the same id.
fn message_with_id(item: &protocol::item::Item, text: &str) -> protocol::item::Item {
    let mut grown = item.clone();
    if let protocol::item::Item::Message { content, .. } = &mut grown {
        *content = vec![protocol::item::Content::InputText { text: text.into() }];
    }
    grown
}

async fn a_failing_batch_leaves_nothing(b: &Backend) {
    let org_id = org(b.store.as_ref(), "o").await;
    let session = stored_session(b.store.as_ref(), &org_id).await;
    // The database refuses the event of sequence 666.
    b.execute(match b.kind {
        Kind::Sqlite => {
            "CREATE TRIGGER poison BEFORE INSERT ON events WHEN NEW.seq = 666 \
             BEGIN SELECT RAISE(ABORT, 'poisoned'); END;"
        }
        Kind::Postgres => "ALTER TABLE events ADD CONSTRAINT poison CHECK (seq <> 666)",
    })
    .await;
    let t = turn(session.id, TurnStatus::Queued);
    let item = message(t.id, "lost");
    let mut state = session.state();
    state.status = SessionStatus::Failed;
    let batch = vec![
        turn_write(&org_id, &t),
        item_write(&org_id, session.id, &item),
        Write::SessionState { org_id: org_id.clone(), session_id: session.id, state },
        event_write(665, session.id, "a"),
        event_write(666, session.id, "b"),
    ];
    assert!(b.commit(batch).is_err());
    assert!(b.store.get_turn(&org_id, t.id).await.unwrap().is_none());
    assert!(b.store.list_items(&org_id, session.id, None, &super::records::asc()).await.unwrap().items.is_empty());
    assert!(b.store.events_after(session.id, 0, 10).await.unwrap().is_empty());
    assert_eq!(b.store.get_session(&org_id, session.id).await.unwrap().unwrap().status, SessionStatus::Idle);
    // The writer goes on with the next batch.
    b.commit(vec![turn_write(&org_id, &t), event_write(667, session.id, "c")]).unwrap();
    assert!(b.store.get_turn(&org_id, t.id).await.unwrap().is_some());
}

async fn configuration_and_state_writes_keep_each_others_fields(b: &Backend) {
    let org_id = org(b.store.as_ref(), "o").await;
    let session = stored_session(b.store.as_ref(), &org_id).await;
    let mut state = session.state();
    state.status = SessionStatus::InProgress;
    b.commit(vec![Write::SessionState { org_id: org_id.clone(), session_id: session.id, state }]).unwrap();
    // A metadata update racing a turn does not roll its status back.
    let mut changed = session.clone();
    changed.metadata.insert("team".into(), "blue".into());
    // Any string the API accepts, U+0000 and all (PostgreSQL's jsonb could not hold it).
    changed.metadata.insert("ключ 🔑".into(), "a\u{0}b e\u{301}".into());
    changed.status = SessionStatus::Idle;
    assert!(b.store.put_session(&org_id, &changed).await.unwrap());
    let stored = b.store.get_session(&org_id, session.id).await.unwrap().unwrap();
    assert_eq!(stored.status, SessionStatus::InProgress);
    assert_eq!(stored.metadata.get("team").map(String::as_str), Some("blue"));
    let mut state = stored.state();
    state.status = SessionStatus::Idle;
    state.last_active_at = 7;
    b.commit(vec![Write::SessionState { org_id: org_id.clone(), session_id: session.id, state }]).unwrap();
    let fresh = store::open(&b.url).await.unwrap();
    let stored = fresh.get_session(&org_id, session.id).await.unwrap().unwrap();
    assert_eq!((stored.status, stored.last_active_at), (SessionStatus::Idle, 7));
    assert_eq!(stored.metadata, changed.metadata, "kept through both writes");
    // Lists filter on the stored metadata and agent.
    let filter = |agent: Option<&str>, metadata: &[(&str, &str)]| SessionFilter {
        agent_id: agent.map(Into::into),
        metadata: metadata.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
    };
    let other = stored_session(b.store.as_ref(), &org_id).await;
    let org_ref = &org_id;
    let list = |f: SessionFilter| async move {
        let page = b.store.list_sessions(org_ref, &f, &super::records::asc()).await.unwrap();
        page.items.into_iter().map(|s| s.id).collect::<Vec<_>>()
    };
    assert_eq!(list(filter(None, &[("team", "blue")])).await, vec![session.id]);
    assert!(list(filter(None, &[("team", "red")])).await.is_empty());
    assert_eq!(list(filter(Some("agent_1"), &[])).await, vec![session.id, other.id]);
    assert!(list(filter(Some("agent_2"), &[])).await.is_empty());
}

/// One writer, batch after batch (as the journal's): its state writes keep
/// what else changed the document between them, and a deleted session's
/// state is not written back.
async fn a_writer_writes_states_over_documents_changed_since_its_last_batch(b: &Backend) {
    let org_id = org(b.store.as_ref(), "o").await;
    let session = stored_session(b.store.as_ref(), &org_id).await;
    let other = stored_session(b.store.as_ref(), &org_id).await;
    let mut writer = b.writer();
    let state_write = |session_id, status, last_active_at| {
        let mut state = session.state();
        (state.status, state.last_active_at) = (status, last_active_at);
        Write::SessionState { org_id: org_id.clone(), session_id, state }
    };
    let read = || async { b.store.get_session(&org_id, session.id).await.unwrap().unwrap() };
    for (n, status) in [(1, SessionStatus::InProgress), (2, SessionStatus::Idle), (3, SessionStatus::InProgress)] {
        let writes =
            vec![state_write(session.id, status, n), state_write(other.id, status, n), event_write(n, session.id, "s")];
        writer.commit(writes).unwrap();
        assert_eq!((read().await.status, read().await.last_active_at), (status, n));
    }
    // The configuration changes under the writer, twice between two of its batches.
    for (key, value) in [("team", "blue"), ("nul", "a\u{0}b")] {
        let mut changed = read().await;
        changed.metadata.insert(key.into(), value.into());
        assert!(b.store.put_session(&org_id, &changed).await.unwrap());
    }
    writer
        .commit(vec![state_write(session.id, SessionStatus::Idle, 4), state_write(other.id, SessionStatus::Idle, 4)])
        .unwrap();
    let stored = store::open(&b.url).await.unwrap().get_session(&org_id, session.id).await.unwrap().unwrap();
    assert_eq!((stored.status, stored.last_active_at), (SessionStatus::Idle, 4));
    assert_eq!(stored.metadata.get("team").map(String::as_str), Some("blue"), "{:?}", stored.metadata);
    assert_eq!(stored.metadata.get("nul").map(String::as_str), Some("a\u{0}b"));
    writer.commit(vec![state_write(session.id, SessionStatus::InProgress, 5)]).unwrap();
    assert_eq!(read().await.metadata, stored.metadata, "kept by the next batch too");
    // A session deleted under the writer stays deleted; the batch's other writes land.
    assert!(b.store.delete_session(&org_id, other.id).await.unwrap());
    writer.commit(vec![state_write(other.id, SessionStatus::Failed, 6), event_write(6, session.id, "s")]).unwrap();
    assert!(b.store.get_session(&org_id, other.id).await.unwrap().is_none());
    assert_eq!(b.store.events_after(session.id, 5, 10).await.unwrap().len(), 1);
}

/// A writer whose commits are futures of the caller's runtime (PostgreSQL's)
/// commits what it would on the journal's thread, with one memory of the
/// sessions' documents between the two; a commit cut off while the database
/// holds it leaves the writer usable and its batch can be written again. A writer
/// without such commits (SQLite's) says so and writes nothing through them.
async fn a_writer_commits_from_a_task_as_from_its_thread(b: &Backend) {
    let org_id = org(b.store.as_ref(), "o").await;
    let session = stored_session(b.store.as_ref(), &org_id).await;
    let mut writer = b.writer();
    let state_write = |status, last_active_at| {
        let mut state = session.state();
        (state.status, state.last_active_at) = (status, last_active_at);
        Write::SessionState { org_id: org_id.clone(), session_id: session.id, state }
    };
    let t = turn(session.id, TurnStatus::InProgress);
    let item = message(t.id, "hello");
    let first = vec![
        turn_write(&org_id, &t),
        item_write(&org_id, session.id, &item),
        state_write(SessionStatus::InProgress, 1),
        event_write(1, session.id, "a"),
    ];
    let seqs = || async {
        let events = b.store.events_after(session.id, 0, 10).await.unwrap();
        events.iter().map(|e| e.event_id.seq()).collect::<Vec<_>>()
    };
    if b.kind == Kind::Sqlite {
        assert!(!writer.in_task());
        assert!(writer.commit_in_task(first).await.is_err());
        assert!(seqs().await.is_empty() && b.store.get_turn(&org_id, t.id).await.unwrap().is_none());
        return;
    }
    assert!(writer.in_task());
    writer.commit_in_task(first).await.unwrap();
    writer.commit(vec![state_write(SessionStatus::Idle, 2), event_write(2, session.id, "b")]).unwrap();
    // A commit cut off while the database holds it (a lock on its table); it
    // may still commit once the lock goes, before or after the next one.
    let mut blocker = sqlx::PgConnection::connect(&b.url).await.unwrap();
    sqlx::raw_sql("BEGIN; LOCK TABLE events IN EXCLUSIVE MODE").execute(&mut blocker).await.unwrap();
    let abandoned = vec![state_write(SessionStatus::Failed, 3), event_write(3, session.id, "c")];
    writer.abandon_in_task(abandoned, std::time::Duration::from_millis(200)).await;
    sqlx::raw_sql("COMMIT").execute(&mut blocker).await.unwrap();
    let last = vec![
        state_write(SessionStatus::InProgress, 4),
        event_write(3, session.id, "c"),
        event_write(4, session.id, "d"),
    ];
    writer.commit_in_task(last).await.unwrap();
    assert_eq!(seqs().await, [1, 2, 3, 4]);
    assert_eq!(b.store.get_turn(&org_id, t.id).await.unwrap(), Some(t.clone()));
    assert_eq!(b.store.turn_items(&org_id, session.id, t.id).await.unwrap(), vec![item]);
    let stored = store::open(&b.url).await.unwrap().get_session(&org_id, session.id).await.unwrap().unwrap();
    assert_eq!((stored.status, stored.last_active_at), (SessionStatus::InProgress, 4));
}

async fn deleting_a_session_deletes_its_turns_items_and_events(b: &Backend) {
    let org_id = org(b.store.as_ref(), "o").await;
    let session = stored_session(b.store.as_ref(), &org_id).await;
    let t = turn(session.id, TurnStatus::Completed);
    b.commit(vec![
        turn_write(&org_id, &t),
        item_write(&org_id, session.id, &message(t.id, "x")),
        event_write(1, session.id, "x"),
    ])
    .unwrap();
    assert!(b.store.claim_idempotency_key(&org_id, session.id, "k", 1).await.unwrap());
    assert!(b.store.delete_session(&org_id, session.id).await.unwrap());
    assert!(b.store.get_turn(&org_id, t.id).await.unwrap().is_none());
    assert!(b.store.turn_items(&org_id, session.id, t.id).await.unwrap().is_empty());
    assert!(b.store.events_after(session.id, 0, 10).await.unwrap().is_empty());
    assert!(b.store.claim_idempotency_key(&org_id, session.id, "k", 2).await.unwrap(), "its keys went too");
}
