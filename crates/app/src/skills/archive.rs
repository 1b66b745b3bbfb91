//! A skill's files as uploaded — one zip, or a list of files forming one
//! directory — checked and read with bounds before anything is kept: paths
//! stay inside the skill (no absolute paths, no `..`), no symlinks, at most
//! [`MAX_FILES`] files and [`MAX_UNPACKED_BYTES`] unpacked (a zip's declared
//! sizes are not trusted: reading stops one byte past the limit), and a
//! `SKILL.md` at the top (or at the top of the one directory everything is
//! in, which is then stripped). What is kept is a canonical zip of the files
//! ([`Bundle::to_zip`]), whose executable bits say which are scripts.

use std::io::{Cursor, Read, Write};
use zip::ZipArchive;
use zip::result::ZipError;
use zip::write::SimpleFileOptions;

/// Largest upload of one skill (a zip or its files together), in bytes (413 beyond).
pub const MAX_UPLOAD_BYTES: usize = 32 << 20;
/// Largest unpacked size of a skill's files, in bytes (400 beyond: a zip bomb).
pub const MAX_UNPACKED_BYTES: u64 = 64 << 20;
/// Most files in one skill.
pub const MAX_FILES: usize = 1000;

/// One file of a skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleFile {
    /// Relative, `/`-separated, normalized (no `.`, `..` or empty components).
    pub path: String,
    pub executable: bool,
    pub data: Vec<u8>,
}

/// A skill's files, checked, sorted by path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bundle {
    pub files: Vec<BundleFile>,
}

/// Why an upload is not a skill; the message names the file at fault.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error("the upload is not a readable zip archive: {0}")]
    NotZip(#[source] ZipError),
    #[error("the zip entry '{path}' cannot be read: {source}")]
    Entry {
        path: String,
        #[source]
        source: ZipError,
    },
    #[error("the zip entry '{path}' cannot be read: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("'{0}' is a symlink; a skill cannot contain symlinks")]
    Symlink(String),
    #[error("'{0}' escapes the skill's directory: paths must be relative, without `..`")]
    Escapes(String),
    #[error("the skill unpacks to more than {MAX_UNPACKED_BYTES} bytes (the limit of a skill's files)")]
    TooBig,
    #[error("the skill has more than {MAX_FILES} files")]
    TooMany,
    #[error("'{0}' appears twice in the skill")]
    Duplicate(String),
    #[error("the skill has no files")]
    Empty,
    #[error("the skill has no SKILL.md at its top (or at the top of its one directory)")]
    NoSkillMd,
}

/// Checks and normalizes a path inside the skill.
fn normalize(raw: &str) -> Result<String, BundleError> {
    let escapes = || BundleError::Escapes(raw.to_string());
    if raw.starts_with('/') || raw.contains('\\') || raw.contains('\0') {
        return Err(escapes());
    }
    let mut parts = Vec::new();
    for part in raw.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err(escapes()),
            p if p.len() >= 2 && p.as_bytes()[1] == b':' && parts.is_empty() => return Err(escapes()),
            p => parts.push(p),
        }
    }
    Ok(parts.join("/"))
}

/// Whether a file is an archiver's leftover, not part of the skill.
fn is_junk(path: &str) -> bool {
    path.starts_with("__MACOSX/") || path == ".DS_Store" || path.ends_with("/.DS_Store")
}

/// Whether a file should run as a program: marked so, or a script with a `#!` line.
fn executable(mode: Option<u32>, data: &[u8]) -> bool {
    mode.is_some_and(|m| m & 0o111 != 0) || data.starts_with(b"#!")
}

impl Bundle {
    /// The files of one uploaded zip.
    pub fn from_zip(bytes: &[u8]) -> Result<Self, BundleError> {
        let mut archive = ZipArchive::new(Cursor::new(bytes)).map_err(BundleError::NotZip)?;
        if archive.len() > MAX_FILES * 2 {
            return Err(BundleError::TooMany);
        }
        let mut files = Vec::new();
        let mut total = 0u64;
        for i in 0..archive.len() {
            let mut entry =
                archive.by_index(i).map_err(|source| BundleError::Entry { path: format!("#{i}"), source })?;
            let raw = entry.name().to_string();
            let mode = entry.unix_mode();
            if mode.is_some_and(|m| m & 0o170000 == 0o120000) {
                return Err(BundleError::Symlink(raw));
            }
            let path = normalize(&raw)?;
            if entry.is_dir() || path.is_empty() || is_junk(&path) {
                continue;
            }
            let left = MAX_UNPACKED_BYTES - total;
            if entry.size() > left {
                return Err(BundleError::TooBig);
            }
            let mut data = Vec::with_capacity(entry.size() as usize);
            (&mut entry)
                .take(left + 1)
                .read_to_end(&mut data)
                .map_err(|source| BundleError::Read { path: raw.clone(), source })?;
            if data.len() as u64 > left {
                return Err(BundleError::TooBig);
            }
            total += data.len() as u64;
            files.push(BundleFile { path, executable: executable(mode, &data), data });
        }
        Self::new(files)
    }

    /// The files of a directory upload: `(relative path, bytes)` each.
    pub fn from_files(uploaded: Vec<(String, Vec<u8>)>) -> Result<Self, BundleError> {
        let mut files = Vec::new();
        let mut total = 0u64;
        for (raw, data) in uploaded {
            let path = normalize(&raw)?;
            if path.is_empty() {
                return Err(BundleError::Escapes(raw));
            }
            if is_junk(&path) {
                continue;
            }
            total += data.len() as u64;
            if total > MAX_UNPACKED_BYTES {
                return Err(BundleError::TooBig);
            }
            files.push(BundleFile { path, executable: executable(None, &data), data });
        }
        Self::new(files)
    }

    /// Checks the file set and strips a single top-level directory.
    fn new(mut files: Vec<BundleFile>) -> Result<Self, BundleError> {
        if files.is_empty() {
            return Err(BundleError::Empty);
        }
        if files.len() > MAX_FILES {
            return Err(BundleError::TooMany);
        }
        if !files.iter().any(|f| f.path == "SKILL.md") {
            let top = files[0].path.split('/').next().unwrap_or_default().to_string();
            let prefix = format!("{top}/");
            if !files.iter().all(|f| f.path.starts_with(&prefix))
                || !files.iter().any(|f| f.path == prefix.clone() + "SKILL.md")
            {
                return Err(BundleError::NoSkillMd);
            }
            for f in &mut files {
                f.path = f.path[prefix.len()..].to_string();
            }
        }
        files.sort_by(|a, b| a.path.cmp(&b.path));
        let mut seen = std::collections::HashSet::new();
        for f in &files {
            if !seen.insert(f.path.as_str()) {
                return Err(BundleError::Duplicate(f.path.clone()));
            }
        }
        // A file cannot also be the directory of other files.
        for f in &files {
            let mut dir = f.path.as_str();
            while let Some((parent, _)) = dir.rsplit_once('/') {
                if seen.contains(parent) {
                    return Err(BundleError::Duplicate(parent.to_string()));
                }
                dir = parent;
            }
        }
        Ok(Bundle { files })
    }

    /// The `SKILL.md` (present by construction).
    pub fn skill_md(&self) -> &[u8] {
        self.files.iter().find(|f| f.path == "SKILL.md").map_or(&[], |f| f.data.as_slice())
    }

    /// The unpacked size of the files.
    pub fn size(&self) -> u64 {
        self.files.iter().map(|f| f.data.len() as u64).sum()
    }

    /// The canonical zip kept for the skill: the files at its top, deflated,
    /// scripts mode 0755 and the rest 0644.
    pub fn to_zip(&self) -> Result<Vec<u8>, ZipError> {
        let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
        for f in &self.files {
            let mode = if f.executable { 0o755 } else { 0o644 };
            let options = SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Deflated)
                .unix_permissions(mode);
            zip.start_file(f.path.as_str(), options)?;
            zip.write_all(&f.data)?;
        }
        Ok(zip.finish()?.into_inner())
    }
}
