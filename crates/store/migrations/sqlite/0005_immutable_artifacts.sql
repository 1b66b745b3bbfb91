-- Artifacts are immutable: a changed output is a new artifact beside the old.
DROP INDEX artifacts_session_path;
CREATE UNIQUE INDEX artifacts_session_path_content ON artifacts(session_id, path, sha256);
