//! The operations of environments and their live files, and of vaults and
//! their credentials.

use super::op::{Op, of};
use super::{Doc, views};
use app::environments::FileCreate;
use protocol::environment::{Environment, EnvironmentCreate, EnvironmentDeleted, EnvironmentFile, EnvironmentFork};
use protocol::list::List;
use protocol::vault::{Credential, CredentialCreate, CredentialUpdate, Deleted, Vault, VaultCreate, VaultUpdate};
use serde_json::json;

const ENVIRONMENT: &str = "/v1/agents/environments/{environment_id}";
const RESTART: &str = "/v1/agents/environments/{environment_id}/restart";
const FORK: &str = "/v1/agents/environments/{environment_id}/fork";
const FILES: &str = "/v1/agents/environments/{environment_id}/files";
const CREDENTIALS: &str = "/v1/vaults/{vault_id}/credentials";
const CREDENTIAL: &str = "/v1/vaults/{vault_id}/credentials/{credential_id}";

pub(super) fn add(doc: &mut Doc) {
    doc.tag("Environments", "One sandbox each, with its files, packages and setup, shareable by many sessions.");
    doc.add(
        Op::post("/v1/agents/environments", "createEnvironment", "Create an environment")
            .idempotent()
            .about("Answers at once with `status: pending`; setup runs at first use.")
            .body(of::<EnvironmentCreate>)
            .status(201)
            .json(of::<Environment>)
            .errors(&[404, 409]),
    );
    doc.add(
        Op::get("/v1/agents/environments", "listEnvironments", "List environments")
            .list()
            .query("type", json!({"type": "string", "enum": ["openai_hosted"]}), "The only type offered.")
            .json(of::<List<Environment>>),
    );
    doc.add(
        Op::get(ENVIRONMENT, "retrieveEnvironment", "Retrieve an environment")
            .about("While setup runs: `status: pending`, `setup` says which step, `setup_log` grows.")
            .json(of::<Environment>),
    );
    doc.add(
        Op::delete(ENVIRONMENT, "deleteEnvironment", "Delete an environment (Rebyte extension)")
            .about("Stops everything in it; refused while sessions are attached.")
            .json(of::<EnvironmentDeleted>)
            .errors(&[409]),
    );
    doc.add(
        Op::post(RESTART, "restartEnvironment", "Restart an environment's sandbox (Rebyte extension)")
            .about(
                "Stops every process in the sandbox (commands, background jobs, stdio MCP servers, which then \
                 answer as dead) and starts it again over the same files; setup is not repeated. 409 while it \
                 initializes or when it failed.",
            )
            .json(of::<Environment>)
            .errors(&[409]),
    );
    doc.add(
        Op::post(FORK, "forkEnvironment", "Fork an environment (Rebyte extension)")
            .about(
                "A new environment of the same organization and configuration, `ready` without running setup, \
                 whose files (workspace, home, skills, writable system) are a copy-on-write copy of this one's \
                 now: the source is frozen for a few milliseconds and keeps running; its processes are not \
                 copied. The body is optional (`name`, `metadata`). 409 unless the source is ready.",
            )
            .body(of::<EnvironmentFork>)
            .status(201)
            .json(of::<Environment>)
            .errors(&[409]),
    );
    doc.add(
        Op::post(FILES, "createEnvironmentFile", "Write a file into the environment")
            .about("Initializes the sandbox if it is not running.")
            .body(of::<FileCreate>)
            .json(of::<EnvironmentFile>)
            .errors(&[409]),
    );
    doc.add(
        Op::get(FILES, "listEnvironmentFiles", "List the environment's live files")
            .query("limit", json!({"type": "integer", "minimum": 1, "maximum": 100, "default": 20}), "Page size.")
            .query("order", json!({"type": "string", "enum": ["asc", "desc"], "default": "desc"}), "By path.")
            .query("page", json!({"type": "string"}), "The `next` token of the previous page.")
            .query("path", json!({"type": "string", "default": "/workspace"}), "The directory to list below.")
            .json(views::environment_file_list)
            .errors(&[409]),
    );

    doc.tag("Vaults", "Credentials for MCP servers and environments; secret values are write-only.");
    doc.add(
        Op::post("/v1/vaults", "createVault", "Create a vault").idempotent().body(of::<VaultCreate>).json(of::<Vault>),
    );
    doc.add(vault_list(Op::get("/v1/vaults", "listVaults", "List vaults")).json(of::<List<Vault>>));
    doc.add(Op::get("/v1/vaults/{vault_id}", "retrieveVault", "Retrieve a vault").json(of::<Vault>));
    doc.add(
        Op::post("/v1/vaults/{vault_id}", "updateVault", "Update a vault").body(of::<VaultUpdate>).json(of::<Vault>),
    );
    doc.add(Op::delete("/v1/vaults/{vault_id}", "deleteVault", "Delete a vault").json(of::<Deleted>));
    doc.add(
        Op::post(CREDENTIALS, "createCredential", "Create a credential")
            .body(of::<CredentialCreate>)
            .json(of::<Credential>),
    );
    doc.add(vault_list(Op::get(CREDENTIALS, "listCredentials", "List credentials")).json(of::<List<Credential>>));
    doc.add(Op::get(CREDENTIAL, "retrieveCredential", "Retrieve a credential").json(of::<Credential>));
    doc.add(
        Op::post(CREDENTIAL, "updateCredential", "Update or rotate a credential")
            .body(of::<CredentialUpdate>)
            .json(of::<Credential>)
            .errors(&[409]),
    );
    doc.add(Op::delete(CREDENTIAL, "deleteCredential", "Delete a credential").json(of::<Deleted>));
}

/// The filters of vault and credential lists.
fn vault_list(op: Op) -> Op {
    let status = json!({"type": "string", "enum": ["active", "archived"]});
    op.list().metadata_filter().query("status", status, "Only `active` ones exist here.")
}
