//! The OpenAPI operations of running agents: turns, items, events,
//! environments, artifacts, vaults and the Responses view.

use super::Doc;
use protocol::environment::{Environment, EnvironmentCreate, EnvironmentDeleted, EnvironmentFile};
use protocol::event::{Event, EventsCreate};
use protocol::item::Item;
use protocol::list::List;
use protocol::turn::Turn;
use protocol::vault::{Credential, CredentialCreate, CredentialUpdate, Deleted, Vault, VaultCreate, VaultUpdate};
use serde_json::json;

/// Adds the runtime operations to `doc`.
pub(super) fn add(doc: &mut Doc) {
    let any = json!({"type": "object"});
    let (turn, turns, items, events_create, event) = (
        doc.schema::<Turn>(),
        doc.schema::<List<Turn>>(),
        doc.schema::<List<Item>>(),
        doc.schema::<EventsCreate>(),
        doc.schema::<Event>(),
    );
    let s = "/v1/agents/sessions/{session_id}";
    doc.op(
        "post",
        &format!("{s}/events"),
        "Submit inputs (Idempotency-Key honoured); 202",
        Some(events_create),
        any.clone(),
    );
    doc.op(
        "get",
        &format!("{s}/events"),
        "The standing event stream (text/event-stream; Last-Event-ID resumes)",
        None,
        event,
    );
    doc.op("get", &format!("{s}/turns"), "List turns", None, turns);
    doc.op("get", &format!("{s}/turns/{{turn_id}}"), "Retrieve a turn", None, turn);
    doc.op("get", &format!("{s}/turns/{{turn_id}}/items"), "List a turn's items", None, items.clone());
    doc.op("get", &format!("{s}/items"), "List a session's items", None, items);
    doc.op("get", &format!("{s}/artifacts"), "List a session's artifacts", None, any.clone());
    doc.op("get", &format!("{s}/artifacts/{{artifact_id}}"), "Retrieve an artifact", None, any.clone());
    doc.op("get", &format!("{s}/artifacts/{{artifact_id}}/content"), "An artifact's bytes", None, any.clone());
    doc.op("delete", &format!("{s}/artifacts/{{artifact_id}}"), "Delete an artifact", None, any.clone());

    let (env, envs, env_create, env_deleted, file) = (
        doc.schema::<Environment>(),
        doc.schema::<List<Environment>>(),
        doc.schema::<EnvironmentCreate>(),
        doc.schema::<EnvironmentDeleted>(),
        doc.schema::<EnvironmentFile>(),
    );
    let e = "/v1/agents/environments";
    doc.op("post", e, "Create an environment (201, pending)", Some(env_create), env.clone());
    doc.op("get", e, "List environments", None, envs);
    doc.op("get", &format!("{e}/{{environment_id}}"), "Retrieve an environment", None, env);
    doc.op("delete", &format!("{e}/{{environment_id}}"), "Delete an environment (Rebyte extension)", None, env_deleted);
    doc.op(
        "post",
        &format!("{e}/{{environment_id}}/files"),
        "Write a file (initializes the sandbox)",
        Some(any.clone()),
        file,
    );
    doc.op("get", &format!("{e}/{{environment_id}}/files"), "List live files", None, any.clone());

    let (vault, vaults, vault_create, vault_update, deleted, cred, creds, cred_create, cred_update) = (
        doc.schema::<Vault>(),
        doc.schema::<List<Vault>>(),
        doc.schema::<VaultCreate>(),
        doc.schema::<VaultUpdate>(),
        doc.schema::<Deleted>(),
        doc.schema::<Credential>(),
        doc.schema::<List<Credential>>(),
        doc.schema::<CredentialCreate>(),
        doc.schema::<CredentialUpdate>(),
    );
    doc.op("post", "/v1/vaults", "Create a vault", Some(vault_create), vault.clone());
    doc.op("get", "/v1/vaults", "List vaults", None, vaults);
    doc.op("get", "/v1/vaults/{vault_id}", "Retrieve a vault", None, vault.clone());
    doc.op("post", "/v1/vaults/{vault_id}", "Update a vault", Some(vault_update), vault);
    doc.op("delete", "/v1/vaults/{vault_id}", "Delete a vault", None, deleted.clone());
    let c = "/v1/vaults/{vault_id}/credentials";
    doc.op("post", c, "Create a credential (secrets are write-only)", Some(cred_create), cred.clone());
    doc.op("get", c, "List credentials", None, creds);
    doc.op("get", &format!("{c}/{{credential_id}}"), "Retrieve a credential", None, cred.clone());
    doc.op("post", &format!("{c}/{{credential_id}}"), "Update or rotate a credential", Some(cred_update), cred);
    doc.op("delete", &format!("{c}/{{credential_id}}"), "Delete a credential", None, deleted);

    doc.op("post", "/v1/responses", "Create a response (a turn of a conversation)", Some(any.clone()), any.clone());
    doc.op("get", "/v1/responses/{response_id}", "Retrieve a response", None, any.clone());
    doc.op("post", "/v1/responses/{response_id}/cancel", "Cancel a response", None, any.clone());
    doc.op("get", "/v1/responses/{response_id}/input_items", "A response's input items", None, any.clone());
    doc.op("get", "/v1/conversations/{conversation_id}/items", "List a conversation's items", None, any.clone());
    doc.op("post", "/v1/conversations/{conversation_id}/items", "Add items to a conversation", Some(any.clone()), any);
}
