-- Environments and session artifacts.
CREATE TABLE environments (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    org_id TEXT NOT NULL,
    doc TEXT NOT NULL
);
CREATE INDEX environments_org ON environments(org_id, seq);

CREATE TABLE artifacts (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    org_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    path TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    doc TEXT NOT NULL,
    content BLOB NOT NULL
);
CREATE INDEX artifacts_session ON artifacts(session_id, seq);
CREATE UNIQUE INDEX artifacts_session_path ON artifacts(session_id, path);
