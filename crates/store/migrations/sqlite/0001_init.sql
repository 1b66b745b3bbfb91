-- Organizations, keys, agents and sessions. Resources are stored as JSON
-- documents beside the columns that queries filter and order on.
CREATE TABLE organizations (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL
);

CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL REFERENCES organizations(id),
    hash TEXT NOT NULL UNIQUE,
    prefix TEXT NOT NULL,
    name TEXT,
    scopes TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
);
CREATE INDEX api_keys_org ON api_keys(org_id);

CREATE TABLE agents (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    org_id TEXT NOT NULL REFERENCES organizations(id),
    version INTEGER NOT NULL,
    doc TEXT NOT NULL
);
CREATE INDEX agents_org ON agents(org_id, seq);

CREATE TABLE agent_versions (
    agent_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    doc TEXT NOT NULL,
    PRIMARY KEY (agent_id, version)
);

CREATE TABLE sessions (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    org_id TEXT NOT NULL REFERENCES organizations(id),
    agent_id TEXT NOT NULL,
    doc TEXT NOT NULL
);
CREATE INDEX sessions_org ON sessions(org_id, seq);
CREATE INDEX sessions_agent ON sessions(org_id, agent_id, seq);
