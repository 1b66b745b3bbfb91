//! The operations of agents, sessions, their events, turns, items and
//! artifacts.

use super::op::{Op, of};
use super::{Doc, views};
use protocol::agent::{Agent, AgentCreate, AgentDeleted, AgentUpdate};
use protocol::event::EventsCreate;
use protocol::item::Item;
use protocol::list::List;
use protocol::session::{Session, SessionCreate, SessionDeleted, SessionUpdate};
use protocol::turn::Turn;
use serde_json::json;

const SESSION: &str = "/v1/agents/sessions/{session_id}";

pub(super) fn add(doc: &mut Doc) {
    doc.tag("Agents", "Saved, versioned agent definitions.");
    doc.add(
        Op::post("/v1/agents", "createAgent", "Create an agent").idempotent().body(of::<AgentCreate>).json(of::<Agent>),
    );
    doc.add(Op::get("/v1/agents", "listAgents", "List agents").list().json(of::<List<Agent>>));
    doc.add(Op::get("/v1/agents/{agent_id}", "retrieveAgent", "Retrieve an agent").json(of::<Agent>));
    doc.add(
        Op::post("/v1/agents/{agent_id}", "updateAgent", "Update an agent")
            .about("Stores a new version; sessions keep the version they were created with.")
            .body(of::<AgentUpdate>)
            .json(of::<Agent>)
            .errors(&[409]),
    );
    doc.add(Op::delete("/v1/agents/{agent_id}", "deleteAgent", "Delete an agent").json(of::<AgentDeleted>));

    doc.tag("Sessions", "A session pins an agent configuration and owns the history of its turns.");
    doc.add(
        Op::post("/v1/agents/sessions", "createSession", "Create a session")
            .idempotent()
            .about(
                "With `input`, the first turn is queued before the answer. With `stream: true` (and input) \
                 the answer is the session's event stream until that turn ends.",
            )
            .body(of::<SessionCreate>)
            .json(of::<Session>)
            .stream(views::session_event)
            .errors(&[404, 409]),
    );
    doc.add(
        Op::get("/v1/agents/sessions", "listSessions", "List sessions")
            .list()
            .query("agent_id", json!({"type": "string"}), "Only sessions of this agent.")
            .metadata_filter()
            .json(of::<List<Session>>),
    );
    doc.add(Op::get(SESSION, "retrieveSession", "Retrieve a session").json(of::<Session>));
    doc.add(Op::post(SESSION, "updateSession", "Update a session").body(of::<SessionUpdate>).json(of::<Session>));
    doc.add(
        Op::delete(SESSION, "deleteSession", "Delete a session")
            .about("Stops its turns; its private environment goes with it, a shared one stays.")
            .json(of::<SessionDeleted>),
    );

    doc.tag("Events", "Inputs in, the standing stream of `agent.session.*` events out.");
    doc.add(
        Op::post("/v1/agents/sessions/{session_id}/events", "createSessionEvents", "Submit inputs")
            .about(
                "Each message becomes a turn, committed before the answer. A retry with the same key changes nothing.",
            )
            .header(
                "Idempotency-Key",
                json!({"type": "string", "minLength": 1, "maxLength": 256}),
                "Applies the submission at most once (1 to 256 characters).",
            )
            .body(of::<EventsCreate>)
            .status(202),
    );
    doc.add(
        Op::get("/v1/agents/sessions/{session_id}/events", "streamSessionEvents", "Stream a session's events")
            .about("Server-sent events, each `data:` one event; `Last-Event-ID` replays what came after it.")
            .header("Last-Event-ID", json!({"type": "string"}), "Resume after this event id.")
            .stream(views::session_event),
    );

    doc.tag("Turns", "One agent run each: its status, usage and items.");
    doc.add(Op::get("/v1/agents/sessions/{session_id}/turns", "listTurns", "List turns").list().json(of::<List<Turn>>));
    doc.add(
        Op::get("/v1/agents/sessions/{session_id}/turns/{turn_id}", "retrieveTurn", "Retrieve a turn").json(of::<Turn>),
    );
    doc.add(
        Op::get("/v1/agents/sessions/{session_id}/turns/{turn_id}/items", "listTurnItems", "List a turn's items")
            .list()
            .json(of::<List<Item>>),
    );
    doc.tag("Items", "A session's history: messages, calls and their outputs, command executions.");
    doc.add(
        Op::get("/v1/agents/sessions/{session_id}/items", "listSessionItems", "List a session's items")
            .list()
            .json(of::<List<Item>>),
    );

    doc.tag("Artifacts", "Files a session published from its output directory.");
    let artifact = "/v1/agents/sessions/{session_id}/artifacts/{artifact_id}";
    doc.add(
        Op::get("/v1/agents/sessions/{session_id}/artifacts", "listArtifacts", "List a session's artifacts")
            .list()
            .query("environment_id", json!({"type": "string"}), "Only artifacts from this environment.")
            .json(views::artifact_list),
    );
    doc.add(Op::get(artifact, "retrieveArtifact", "Retrieve an artifact").json(views::artifact));
    doc.add(
        Op::get(
            "/v1/agents/sessions/{session_id}/artifacts/{artifact_id}/content",
            "retrieveArtifactContent",
            "An artifact's bytes",
        )
        .answers("application/octet-stream", views::bytes),
    );
    doc.add(Op::delete(artifact, "deleteArtifact", "Delete an artifact").json(views::artifact_deleted));
}
