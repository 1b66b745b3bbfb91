-- Turns, history items, the persisted event stream and idempotency keys.
CREATE TABLE turns (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    org_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    status TEXT NOT NULL,
    doc TEXT NOT NULL
);
CREATE INDEX turns_session ON turns(session_id, seq);
CREATE INDEX turns_open ON turns(status) WHERE status IN ('queued', 'in_progress', 'waiting');

CREATE TABLE items (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    org_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    doc TEXT NOT NULL
);
CREATE INDEX items_session ON items(session_id, seq);
CREATE INDEX items_turn ON items(turn_id, seq);

CREATE TABLE events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    doc TEXT NOT NULL
);
CREATE INDEX events_session ON events(session_id, seq);

CREATE TABLE idempotency_keys (
    org_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    key TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (org_id, session_id, key)
);
