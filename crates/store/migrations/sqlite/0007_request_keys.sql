-- Idempotency keys of creates (Idempotency-Key on POST of agents, sessions,
-- environments, vaults and responses): the first request's fingerprint and,
-- once it succeeded, its answer, kept 24 hours. A row without a status is
-- a request still running.
CREATE TABLE request_keys (
    org_id TEXT NOT NULL,
    operation TEXT NOT NULL,
    key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    status INTEGER,
    response TEXT,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (org_id, operation, key)
);
CREATE INDEX request_keys_created ON request_keys(created_at);
