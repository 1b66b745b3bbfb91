-- Skills (each version's zip inline), uploaded files (their bytes inline), and
-- environments' own copies of the skill zips and file bytes they were created
-- with (so a later version, or deleting the file, changes nothing in them).
CREATE TABLE skills (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    org_id TEXT NOT NULL,
    rev INTEGER NOT NULL,
    doc TEXT NOT NULL
);
CREATE INDEX skills_org ON skills(org_id, seq);

CREATE TABLE skill_versions (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    org_id TEXT NOT NULL,
    skill_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    doc TEXT NOT NULL,
    content BLOB NOT NULL
);
CREATE UNIQUE INDEX skill_versions_number ON skill_versions(skill_id, version);

CREATE TABLE files (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    org_id TEXT NOT NULL,
    purpose TEXT NOT NULL,
    doc TEXT NOT NULL,
    content BLOB NOT NULL
);
CREATE INDEX files_org ON files(org_id, seq);

CREATE TABLE environment_contents (
    org_id TEXT NOT NULL,
    environment_id TEXT NOT NULL,
    key TEXT NOT NULL,
    content BLOB NOT NULL,
    PRIMARY KEY (environment_id, key)
);
