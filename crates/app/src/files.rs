//! Uploaded files (`/v1/files`): bytes an organization uploads once (at most
//! [`MAX_FILE_BYTES`], 413 beyond; kept in the database) and places into
//! environments by id: `{"type": "file_id", …}` in an environment's `files`
//! (copied when it is created) or `environments.files.create` (written into
//! the running sandbox). An expired file (`expires_after`) is gone.

use crate::{App, Error, Result, now};
use protocol::file::{FileObject, PURPOSES};
use protocol::ids::Kind;
use protocol::list::PageRequest;
use store::Page;

/// Largest uploaded file, in bytes: what an environment file may be.
pub const MAX_FILE_BYTES: usize = crate::environments::MAX_FILE_BYTES;
/// Longest file name kept.
const MAX_FILENAME_CHARS: usize = 255;

/// A file upload's fields.
#[derive(Debug, Clone)]
pub struct NewFile {
    pub filename: Option<String>,
    pub data: Vec<u8>,
    pub purpose: Option<String>,
    /// `expires_after[anchor]`, `expires_after[seconds]`.
    pub expires_after: Option<(String, String)>,
}

fn check_expiry(expires_after: Option<(String, String)>, created_at: i64) -> Result<Option<i64>> {
    let Some((anchor, seconds)) = expires_after else { return Ok(None) };
    if anchor != "created_at" {
        return Err(Error::invalid("expires_after.anchor", "the only anchor is created_at"));
    }
    let seconds: i64 = seconds
        .parse()
        .ok()
        .filter(|s| (3600..=2_592_000).contains(s))
        .ok_or_else(|| Error::invalid("expires_after.seconds", "must be between 3600 and 2592000 seconds"))?;
    Ok(Some(created_at + seconds))
}

/// The files of one organization.
pub struct Service<'a> {
    pub(crate) app: &'a App,
    pub(crate) org: &'a str,
}

impl Service<'_> {
    pub async fn create(&self, new: NewFile) -> Result<FileObject> {
        let purpose = new.purpose.ok_or_else(|| Error::invalid("purpose", "purpose is required"))?;
        if !PURPOSES.contains(&purpose.as_str()) {
            return Err(Error::invalid("purpose", format!("purpose must be one of {}", PURPOSES.join(", "))));
        }
        if new.data.len() > MAX_FILE_BYTES {
            return Err(Error::TooLarge(format!("files are limited to {MAX_FILE_BYTES} bytes")));
        }
        let filename = new.filename.filter(|f| !f.is_empty()).ok_or_else(|| {
            Error::invalid("file", "file is required: a multipart part named `file` with a file name")
        })?;
        if filename.chars().count() > MAX_FILENAME_CHARS || filename.contains('\0') {
            return Err(Error::invalid("file", format!("file names are at most {MAX_FILENAME_CHARS} characters")));
        }
        let created_at = now();
        let file = FileObject {
            id: Kind::File.mint(),
            object: "file".into(),
            bytes: new.data.len() as u64,
            created_at,
            filename,
            purpose,
            status: "processed".into(),
            expires_at: check_expiry(new.expires_after, created_at)?,
            status_details: None,
        };
        self.app.store.create_file(self.org, &file, &new.data).await?;
        Ok(file)
    }

    /// The file, or 404 (also once it expired).
    pub async fn get(&self, id: &str) -> Result<FileObject> {
        let file = self.app.store.get_file(self.org, id).await?;
        file.filter(|f| !f.expired(now())).ok_or_else(|| Error::not_found("file", id))
    }

    /// The file and its bytes.
    pub async fn content(&self, id: &str) -> Result<(FileObject, Vec<u8>)> {
        let file = self.get(id).await?;
        let data = self.app.store.file_content(self.org, id).await?.ok_or_else(|| Error::not_found("file", id))?;
        Ok((file, data))
    }

    pub async fn list(&self, purpose: Option<&str>, page: &PageRequest) -> Result<Page<FileObject>> {
        let mut page = self.app.store.list_files(self.org, purpose, page).await?;
        let at = now();
        page.items.retain(|f| !f.expired(at));
        Ok(page)
    }

    pub async fn delete(&self, id: &str) -> Result<()> {
        if !self.app.store.delete_file(self.org, id).await? {
            return Err(Error::not_found("file", id));
        }
        Ok(())
    }
}
