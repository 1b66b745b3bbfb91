-- Vaults and their credentials. A credential's `doc` is its public resource
-- (no secrets); `sealed` is the AEAD ciphertext of its secret values, opened
-- only by the server with the master key. `version` increases with every
-- change of the sealed part (rotation, OAuth refresh): writers compare it.
CREATE TABLE vaults (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    org_id TEXT NOT NULL REFERENCES organizations(id),
    doc TEXT NOT NULL
);
CREATE INDEX vaults_org ON vaults(org_id, seq);

CREATE TABLE vault_credentials (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    org_id TEXT NOT NULL REFERENCES organizations(id),
    vault_id TEXT NOT NULL REFERENCES vaults(id) ON DELETE CASCADE,
    version INTEGER NOT NULL,
    doc TEXT NOT NULL,
    sealed BLOB NOT NULL
);
CREATE INDEX vault_credentials_vault ON vault_credentials(org_id, vault_id, seq);

-- One row: a constant sealed with the master key, so that a start with another
-- key fails clearly instead of producing garbage.
CREATE TABLE master_key_check (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    sealed BLOB NOT NULL
);
