//! `GET /v1/openapi.json`: an OpenAPI 3 document whose schemas are generated
//! from the `protocol` types, so that it cannot drift from what the handlers
//! accept and answer.

use protocol::admin::{ApiKey, ApiKeyCreate, ApiKeyCreated, Organization, OrganizationCreate};
use protocol::agent::{Agent, AgentCreate, AgentDeleted, AgentUpdate};
use protocol::conversation::{Conversation, ConversationCreate, ConversationDeleted, ConversationUpdate};
use protocol::error::ErrorBody;
use protocol::list::List;
use protocol::session::{Session, SessionCreate, SessionDeleted, SessionUpdate};
use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Map, Value, json};
use std::sync::OnceLock;

mod runtime;

struct Doc {
    generator: SchemaGenerator,
    paths: Map<String, Value>,
}

impl Doc {
    fn schema<T: JsonSchema>(&mut self) -> Value {
        self.generator.subschema_for::<T>().to_value()
    }

    /// Adds one operation; `request` is the body schema, if any.
    fn op(&mut self, method: &str, path: &str, summary: &str, request: Option<Value>, response: Value) {
        let mut op = json!({
            "summary": summary,
            "responses": {
                "200": {"description": "OK", "content": {"application/json": {"schema": response}}},
                "default": {"description": "Error", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}}
            }
        });
        if let Some(body) = request {
            op["requestBody"] = json!({"required": true, "content": {"application/json": {"schema": body}}});
        }
        let params: Vec<Value> = path
            .split('/')
            .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
            .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
            .collect();
        if !params.is_empty() {
            op["parameters"] = Value::Array(params);
        }
        let entry = self.paths.entry(path.to_string()).or_insert_with(|| json!({}));
        entry[method] = op;
    }
}

fn build() -> Value {
    let mut doc = Doc { generator: SchemaSettings::openapi3().into_generator(), paths: Map::new() };
    doc.schema::<ErrorBody>();
    let (agent, agents, agent_create, agent_update, agent_deleted) = (
        doc.schema::<Agent>(),
        doc.schema::<List<Agent>>(),
        doc.schema::<AgentCreate>(),
        doc.schema::<AgentUpdate>(),
        doc.schema::<AgentDeleted>(),
    );
    doc.op("post", "/v1/agents", "Create an agent", Some(agent_create), agent.clone());
    doc.op("get", "/v1/agents", "List agents", None, agents);
    doc.op("get", "/v1/agents/{agent_id}", "Retrieve an agent", None, agent.clone());
    doc.op("post", "/v1/agents/{agent_id}", "Update an agent (a new version)", Some(agent_update), agent);
    doc.op("delete", "/v1/agents/{agent_id}", "Delete an agent", None, agent_deleted);

    let (session, sessions, session_create, session_update, session_deleted) = (
        doc.schema::<Session>(),
        doc.schema::<List<Session>>(),
        doc.schema::<SessionCreate>(),
        doc.schema::<SessionUpdate>(),
        doc.schema::<SessionDeleted>(),
    );
    doc.op("post", "/v1/agents/sessions", "Create a session", Some(session_create), session.clone());
    doc.op("get", "/v1/agents/sessions", "List sessions", None, sessions);
    doc.op("get", "/v1/agents/sessions/{session_id}", "Retrieve a session", None, session.clone());
    doc.op("post", "/v1/agents/sessions/{session_id}", "Update a session", Some(session_update), session);
    doc.op("delete", "/v1/agents/sessions/{session_id}", "Delete a session", None, session_deleted);

    let (conv, conv_create, conv_update, conv_deleted) = (
        doc.schema::<Conversation>(),
        doc.schema::<ConversationCreate>(),
        doc.schema::<ConversationUpdate>(),
        doc.schema::<ConversationDeleted>(),
    );
    doc.op("post", "/v1/conversations", "Create a conversation", Some(conv_create), conv.clone());
    doc.op("get", "/v1/conversations/{conversation_id}", "Retrieve a conversation", None, conv.clone());
    doc.op("post", "/v1/conversations/{conversation_id}", "Update a conversation", Some(conv_update), conv);
    doc.op("delete", "/v1/conversations/{conversation_id}", "Delete a conversation", None, conv_deleted);

    let (org, org_create, key, keys, key_create, key_created) = (
        doc.schema::<Organization>(),
        doc.schema::<OrganizationCreate>(),
        doc.schema::<ApiKey>(),
        doc.schema::<List<ApiKey>>(),
        doc.schema::<ApiKeyCreate>(),
        doc.schema::<ApiKeyCreated>(),
    );
    doc.op("post", "/v1/admin/organizations", "Create an organization", Some(org_create), org);
    doc.op("post", "/v1/admin/keys", "Create an API key", Some(key_create), key_created);
    doc.op("get", "/v1/admin/keys", "List API keys", None, keys);
    doc.op("delete", "/v1/admin/keys/{key_id}", "Revoke an API key", None, key);

    runtime::add(&mut doc);
    let schemas = doc.generator.take_definitions(true);
    json!({
        "openapi": "3.0.3",
        "info": {"title": "rebyte", "version": env!("CARGO_PKG_VERSION"),
                 "description": "Self-hosted agent platform: the OpenAI Agents API (beta) and its Rebyte extensions."},
        "servers": [{"url": "/"}],
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer_auth": {"type": "http", "scheme": "bearer"}}
        },
        "security": [{"bearer_auth": []}],
        "paths": doc.paths,
    })
}

/// The document, built once.
pub fn document() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(build)
}
