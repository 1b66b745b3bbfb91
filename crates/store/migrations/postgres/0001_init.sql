-- The whole schema of the SQLite migrations 0001–0005, in PostgreSQL's
-- terms: resources are JSON documents beside the columns that queries filter
-- and order on; `seq` gives creation order for cursor pagination. Documents
-- are TEXT, not jsonb: jsonb cannot hold U+0000, which the API accepts in any
-- string (queries read them with `doc::json`, which can).
CREATE TABLE organizations (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL
);

CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL REFERENCES organizations(id),
    hash TEXT NOT NULL UNIQUE,
    prefix TEXT NOT NULL,
    name TEXT,
    scopes TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);
CREATE INDEX api_keys_org ON api_keys(org_id);

CREATE TABLE agents (
    seq BIGSERIAL PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    org_id TEXT NOT NULL REFERENCES organizations(id),
    version BIGINT NOT NULL,
    doc TEXT NOT NULL
);
CREATE INDEX agents_org ON agents(org_id, seq);

CREATE TABLE agent_versions (
    agent_id TEXT NOT NULL,
    version BIGINT NOT NULL,
    doc TEXT NOT NULL,
    PRIMARY KEY (agent_id, version)
);

CREATE TABLE sessions (
    seq BIGSERIAL PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    org_id TEXT NOT NULL REFERENCES organizations(id),
    agent_id TEXT NOT NULL,
    doc TEXT NOT NULL
);
CREATE INDEX sessions_org ON sessions(org_id, seq);
CREATE INDEX sessions_agent ON sessions(org_id, agent_id, seq);

CREATE TABLE turns (
    seq BIGSERIAL PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    org_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    status TEXT NOT NULL,
    doc TEXT NOT NULL
);
CREATE INDEX turns_session ON turns(session_id, seq);
CREATE INDEX turns_open ON turns(status) WHERE status IN ('queued', 'in_progress', 'waiting');

CREATE TABLE items (
    seq BIGSERIAL PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    org_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    doc TEXT NOT NULL
);
CREATE INDEX items_session ON items(session_id, seq);
CREATE INDEX items_turn ON items(turn_id, seq);

-- `seq` is assigned by the engine's bus (`evt_<seq>`), not here.
CREATE TABLE events (
    seq BIGINT PRIMARY KEY,
    session_id TEXT NOT NULL,
    doc TEXT NOT NULL
);
CREATE INDEX events_session ON events(session_id, seq);

CREATE TABLE idempotency_keys (
    org_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    key TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (org_id, session_id, key)
);

-- A credential's `doc` is its public resource (no secrets); `sealed` is the
-- AEAD ciphertext of its secret values; `version` increases with every change
-- of the sealed part: writers compare it.
CREATE TABLE vaults (
    seq BIGSERIAL PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    org_id TEXT NOT NULL REFERENCES organizations(id),
    doc TEXT NOT NULL
);
CREATE INDEX vaults_org ON vaults(org_id, seq);

CREATE TABLE vault_credentials (
    seq BIGSERIAL PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    org_id TEXT NOT NULL REFERENCES organizations(id),
    vault_id TEXT NOT NULL REFERENCES vaults(id) ON DELETE CASCADE,
    version BIGINT NOT NULL,
    doc TEXT NOT NULL,
    sealed BYTEA NOT NULL
);
CREATE INDEX vault_credentials_vault ON vault_credentials(org_id, vault_id, seq);

-- One row: a constant sealed with the master key.
CREATE TABLE master_key_check (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    sealed BYTEA NOT NULL
);

CREATE TABLE environments (
    seq BIGSERIAL PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    org_id TEXT NOT NULL,
    doc TEXT NOT NULL
);
CREATE INDEX environments_org ON environments(org_id, seq);

-- Artifacts are immutable: a changed output is a new artifact beside the old.
-- Content is inline (bytea) for now; see ARCHITECTURE.md.
CREATE TABLE artifacts (
    seq BIGSERIAL PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    org_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    path TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    doc TEXT NOT NULL,
    content BYTEA NOT NULL
);
CREATE INDEX artifacts_session ON artifacts(session_id, seq);
CREATE UNIQUE INDEX artifacts_session_path_turn ON artifacts(session_id, path, turn_id);
