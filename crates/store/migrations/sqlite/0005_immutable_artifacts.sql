-- Artifacts are immutable: a changed output is a new artifact beside the old
-- (and content that comes back in a later turn is published again by that turn).
DROP INDEX artifacts_session_path;
ALTER TABLE artifacts ADD COLUMN turn_id TEXT NOT NULL DEFAULT '';
CREATE UNIQUE INDEX artifacts_session_path_turn ON artifacts(session_id, path, turn_id);
