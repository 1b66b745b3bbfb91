//! The protocol crate's one integration-test binary: request bodies exactly
//! as the `openai==3.57.0` client sends them (captured from the client into
//! `fixtures/client_requests.json`) parse into our types, and what we send
//! back re-serializes to the same fields.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use protocol::agent::{AgentCreate, AgentRecord, AgentUpdate, Patch};
use protocol::conversation::ConversationCreate;
use protocol::environment::EnvironmentCreate;
use protocol::event::{EventsCreate, InputEvent};
use protocol::session::{EnvironmentParam, SessionCreate};
use serde_json::Value;

fn body(path: &str) -> Value {
    let all: Vec<Value> = serde_json::from_str(include_str!("fixtures/client_requests.json")).unwrap();
    all.into_iter().find(|r| r["path"] == path).map(|r| r["body"].clone()).unwrap()
}

#[test]
fn agent_create_from_the_client_round_trips_into_the_resource() {
    let sent = body("/v1/agents");
    let create: AgentCreate = serde_json::from_value(sent.clone()).unwrap();
    let (name, metadata, config) = create.into_parts();
    let record = AgentRecord {
        id: "agent_x".into(),
        version: 1,
        created_at: 1,
        updated_at: 1,
        name,
        metadata,
        config,
        sealed_mcp_secrets: None,
    };
    let resource = serde_json::to_value(record.resource()).unwrap();
    for field in ["model", "instructions", "metadata"] {
        assert_eq!(resource[field], sent[field], "{field}");
    }
    assert_eq!(resource["reasoning"]["effort"], "high");
    assert_eq!(resource["text"]["verbosity"], "low");
    assert_eq!(resource["tools"][0]["transport"]["args"], sent["tools"][0]["transport"]["args"]);
    assert_eq!(resource["tools"][0]["connection_origin"], "environment", "stdio is environment-origin");
    assert_eq!(resource["tools"][1]["parameters"], sent["tools"][1]["parameters"]);
}

#[test]
fn agent_update_nulls_from_the_client_clear_and_omissions_keep() {
    let update: AgentUpdate = serde_json::from_value(body("/v1/agents/agent_x")).unwrap();
    assert!(matches!(update.instructions, Patch::Null));
    assert!(matches!(update.tools, Patch::Null));
    assert!(update.model.is_absent());
    assert_eq!(update.experimental.unwrap().time_awareness, Some(true));
}

#[test]
fn session_create_and_events_from_the_client_parse() {
    let create: SessionCreate = serde_json::from_value(body("/v1/agents/sessions")).unwrap();
    assert_eq!(create.agent_id.as_deref(), Some("agent_x"));
    assert!(matches!(create.environment, EnvironmentParam::None));
    let events: EventsCreate = serde_json::from_value(body("/v1/agents/sessions/s/events")).unwrap();
    assert!(matches!(events.events[0], InputEvent::Message { .. }));
    assert!(matches!(&events.events[1], InputEvent::ToolResult { success: true, call_id, .. } if call_id == "c"));
    assert!(matches!(events.events[2], InputEvent::Cancel {}));
}

#[test]
fn environment_and_conversation_creates_from_the_client_parse() {
    let env: EnvironmentCreate = serde_json::from_value(body("/v1/agents/environments")).unwrap();
    assert_eq!(env.environment.config.files.as_ref().unwrap().len(), 1);
    assert_eq!(env.environment.config.packages.as_ref().unwrap().python.as_ref().unwrap(), &["pandas".to_string()]);
    let conv: ConversationCreate = serde_json::from_value(body("/v1/conversations")).unwrap();
    assert_eq!(conv.metadata.unwrap()["t"], "1");
}
