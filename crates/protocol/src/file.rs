//! Uploaded files (`/v1/files`): bytes an organization uploads once and
//! places into environments by id (`{"type": "file_id", …}`), shaped as the
//! client's `FileObject` and `FileDeleted`.

use serde::{Deserialize, Serialize};

/// The purposes the client's `FilePurpose` names.
pub const PURPOSES: &[&str] = &["assistants", "batch", "fine-tune", "vision", "user_data", "evals"];

/// The file resource (`file`), which is also what the server keeps (its
/// bytes are stored beside it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FileObject {
    pub id: String,
    pub object: String,
    /// The size in bytes.
    pub bytes: u64,
    pub created_at: i64,
    pub filename: String,
    pub purpose: String,
    /// Always `processed`: nothing is done to a file after upload.
    pub status: String,
    /// Unix seconds, when `expires_after` was given; an expired file is gone.
    pub expires_at: Option<i64>,
    pub status_details: Option<String>,
}

impl FileObject {
    /// Whether the file expired by `now` (Unix seconds).
    pub fn expired(&self, now: i64) -> bool {
        self.expires_at.is_some_and(|at| at <= now)
    }
}

/// `DELETE /v1/files/{file_id}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FileDeleted {
    pub id: String,
    /// Always `file`, as the client's `FileDeleted` has it.
    pub object: String,
    pub deleted: bool,
}
