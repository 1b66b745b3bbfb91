//! Records to store: the smallest valid one of each kind.

use protocol::admin::Organization;
use protocol::agent::{AgentConfig, AgentRecord};
use protocol::event::{Event, EventBody};
use protocol::ids::{EnvironmentId, SessionId, TurnId};
use protocol::item::{Content, Item, ItemStatus, Role};
use protocol::session::{SessionAgent, SessionRecord};
use protocol::turn::{Turn, TurnStatus};
use std::sync::Arc;
use store::{Store, Write};
use uuid::Uuid;

/// The environment id numbered `n` (ids in creation order sort by number).
pub fn env(n: u8) -> EnvironmentId {
    EnvironmentId::parse(&format!("env_{n:032x}")).unwrap()
}

/// Creates an organization and returns its id.
pub async fn org(store: &dyn Store, name: &str) -> String {
    let id = format!("org_{}", Uuid::new_v4().simple());
    let org = Organization { id: id.clone(), object: "organization".into(), name: name.into(), created_at: 1 };
    store.create_organization(&org).await.unwrap();
    id
}

pub fn agent(id: &str) -> AgentRecord {
    AgentRecord {
        id: id.into(),
        version: 1,
        created_at: 1,
        updated_at: 1,
        name: Some(id.into()),
        metadata: Default::default(),
        config: AgentConfig::default(),
        sealed_mcp_secrets: Some("c2VhbGVk".into()),
    }
}

pub fn session(agent_id: &str) -> SessionRecord {
    let agent = SessionAgent { id: agent_id.into(), version: None, name: None, config: AgentConfig::default() };
    SessionRecord::new(agent, Default::default(), 1)
}

/// Creates a session of `org_id` and returns it.
pub async fn stored_session(store: &dyn Store, org_id: &str) -> SessionRecord {
    let session = session("agent_1");
    store.create_session(org_id, &session).await.unwrap();
    session
}

pub fn turn(session_id: SessionId, status: TurnStatus) -> Turn {
    let mut turn = Turn::queued(TurnId::new(), session_id, "agent_1", 1);
    turn.status = status;
    turn
}

pub fn message(turn_id: TurnId, text: &str) -> Item {
    Item::Message {
        id: format!("msg_{}", Uuid::new_v4().simple()),
        turn_id,
        role: Role::User,
        status: ItemStatus::Completed,
        content: vec![Content::InputText { text: text.into() }],
        phase: None,
    }
}

pub fn event(seq: i64, session_id: SessionId, delta: &str) -> Event {
    Event::new(
        protocol::ids::EventId::from_seq(seq),
        EventBody::OutputTextDelta {
            session_id,
            turn_id: TurnId::from_uuid(Uuid::nil()),
            item_id: "i".into(),
            output_index: 0,
            content_index: 0,
            delta: delta.into(),
        },
    )
}

pub fn turn_write(org_id: &str, turn: &Turn) -> Write {
    Write::Turn { org_id: org_id.into(), turn: turn.clone() }
}

pub fn item_write(org_id: &str, session_id: SessionId, item: &Item) -> Write {
    Write::Item { org_id: org_id.into(), session_id, item: item.clone() }
}

pub fn event_write(seq: i64, session_id: SessionId, delta: &str) -> Write {
    Write::Event { session_id, event: Arc::new(event(seq, session_id, delta)) }
}

/// The first page of a list, oldest first.
pub fn asc() -> protocol::list::PageRequest {
    protocol::list::PageRequest { order: protocol::list::Order::Asc, ..Default::default() }
}
