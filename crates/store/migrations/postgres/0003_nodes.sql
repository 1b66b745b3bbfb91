-- The nodes of a cluster: every `rebyte serve` on this database registers
-- here at start and renews its heartbeat while it runs. Times are the
-- database's clock, never a node's.
CREATE TABLE nodes (
    node_id TEXT PRIMARY KEY,
    slot INTEGER NOT NULL UNIQUE,
    advertise TEXT NOT NULL,
    version TEXT NOT NULL,
    instance TEXT NOT NULL,
    started_at TIMESTAMPTZ NOT NULL,
    heartbeat_at TIMESTAMPTZ NOT NULL,
    stopped_at TIMESTAMPTZ
);
