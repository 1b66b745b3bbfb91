-- Which node runs a session's turns: one lease per busy session, renewed
-- with its holder's heartbeat (the database's clock). A lease whose
-- expires_at has passed belongs to a lost node: another takes it over and
-- fails the turns it left. Every acquisition gets a new epoch, so a release
-- that raced a new acquisition deletes nothing.
CREATE SEQUENCE session_lease_epochs;
CREATE TABLE session_leases (
    session_id TEXT PRIMARY KEY,
    node_id TEXT NOT NULL,
    epoch BIGINT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX session_leases_node ON session_leases(node_id);

-- What a node that does not run a session asks of the node that does (new
-- input, a cancel, a function's result), picked up in id order.
CREATE TABLE session_inbox (
    id BIGSERIAL PRIMARY KEY,
    session_id TEXT NOT NULL,
    org_id TEXT NOT NULL,
    doc TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX session_inbox_session ON session_inbox(session_id, id);
