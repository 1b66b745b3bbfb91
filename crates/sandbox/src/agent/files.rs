//! File operations confined to `/workspace`, as the sandbox sees it. Paths
//! are checked lexically ([`crate::paths`]) and then resolved: a symlink
//! that leads out of `/workspace` is refused. The agent runs with no more
//! privilege than the sandbox's own processes, so these checks give the
//! API its meaning (400 for an escape), not a security boundary.

use crate::api::{DirEntry, FileKind, WORKSPACE};
use crate::paths::{workspace_file, workspace_path};
use crate::wire::{ErrorKind, WireError};
use std::io::ErrorKind as IoKind;
use std::path::{Path, PathBuf};

/// A resolved path: the canonical existing part plus what does not exist yet.
struct Resolved {
    path: PathBuf,
    exists: bool,
}

fn err_from_io(path: &str, e: std::io::Error) -> WireError {
    match e.kind() {
        IoKind::NotFound => WireError::new(ErrorKind::NotFound, path),
        _ => WireError::new(ErrorKind::Io, format!("{path}: {e}")),
    }
}

fn escape(path: &str) -> WireError {
    WireError::new(ErrorKind::PathEscape, path)
}

fn invalid(path: &str, why: &str) -> WireError {
    WireError::invalid_path(path, why)
}

/// Resolves every symlink in the longest existing prefix of `path` and
/// checks the result stays under `/workspace`.
fn resolve(original: &str, normalized: &str) -> Result<Resolved, WireError> {
    let full = Path::new(normalized);
    let mut existing = full.to_path_buf();
    let mut missing: Vec<std::ffi::OsString> = Vec::new();
    while existing.symlink_metadata().is_err() {
        let Some(name) = existing.file_name() else { break };
        missing.push(name.to_os_string());
        if !existing.pop() {
            break;
        }
    }
    let canonical = match existing.canonicalize() {
        Ok(c) => c,
        // A dangling symlink: where it points cannot be checked.
        Err(e) if e.kind() == IoKind::NotFound => return Err(invalid(original, "dangling symlink")),
        Err(e) => return Err(err_from_io(original, e)),
    };
    if !canonical.starts_with(WORKSPACE) {
        return Err(escape(original));
    }
    let exists = missing.is_empty();
    let mut path = canonical;
    for name in missing.into_iter().rev() {
        path.push(name);
    }
    Ok(Resolved { path, exists })
}

pub(super) fn read(path: &str, max_bytes: u64) -> Result<Vec<u8>, WireError> {
    let r = resolve(path, &workspace_path(path).map_err(|e| map_lexical(path, e))?)?;
    if !r.exists {
        return Err(WireError::new(ErrorKind::NotFound, path));
    }
    let meta = std::fs::metadata(&r.path).map_err(|e| err_from_io(path, e))?;
    if meta.is_dir() {
        return Err(invalid(path, "is a directory"));
    }
    if meta.len() > max_bytes {
        return Err(WireError::too_large(meta.len(), max_bytes));
    }
    let data = std::fs::read(&r.path).map_err(|e| err_from_io(path, e))?;
    if data.len() as u64 > max_bytes {
        return Err(WireError::too_large(data.len() as u64, max_bytes));
    }
    Ok(data)
}

pub(super) fn write(path: &str, max_bytes: u64, data: &[u8]) -> Result<(), WireError> {
    if data.len() as u64 > max_bytes {
        return Err(WireError::too_large(data.len() as u64, max_bytes));
    }
    let normalized = workspace_file(path).map_err(|e| map_lexical(path, e))?;
    let r = resolve(path, &normalized)?;
    if r.exists && r.path.is_dir() {
        return Err(invalid(path, "is a directory"));
    }
    if let Some(parent) = r.path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| err_from_io(path, e))?;
    }
    std::fs::write(&r.path, data).map_err(|e| err_from_io(path, e))
}

pub(super) fn list(path: &str) -> Result<Vec<DirEntry>, WireError> {
    let r = resolve(path, &workspace_path(path).map_err(|e| map_lexical(path, e))?)?;
    if !r.exists {
        return Err(WireError::new(ErrorKind::NotFound, path));
    }
    if !r.path.is_dir() {
        return Err(invalid(path, "is not a directory"));
    }
    let mut entries = Vec::new();
    for entry in std::fs::read_dir(&r.path).map_err(|e| err_from_io(path, e))? {
        let entry = entry.map_err(|e| err_from_io(path, e))?;
        let Ok(meta) = entry.path().symlink_metadata() else { continue };
        let kind = if meta.file_type().is_symlink() {
            FileKind::Symlink
        } else if meta.is_dir() {
            FileKind::Dir
        } else if meta.is_file() {
            FileKind::File
        } else {
            FileKind::Other
        };
        entries.push(DirEntry { name: entry.file_name().to_string_lossy().into_owned(), kind, size: meta.len() });
    }
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(entries)
}

/// Creates a directory and its parents (`mkdir -p`, without a process).
pub(super) fn make_dir(path: &str) -> Result<(), WireError> {
    let normalized = workspace_file(path).map_err(|e| map_lexical(path, e))?;
    let r = resolve(path, &normalized)?;
    if r.exists && !r.path.is_dir() {
        return Err(invalid(path, "is not a directory"));
    }
    std::fs::create_dir_all(&r.path).map_err(|e| err_from_io(path, e))
}

/// Deletes a file, a symlink (not what it points to) or a directory tree.
pub(super) fn delete(path: &str) -> Result<(), WireError> {
    let normalized = workspace_file(path).map_err(|e| map_lexical(path, e))?;
    let full = Path::new(&normalized);
    let (Some(parent), Some(name)) = (full.parent(), full.file_name()) else {
        return Err(invalid(path, "no file name"));
    };
    let parent = parent.to_str().unwrap_or(WORKSPACE);
    let r = resolve(path, parent)?;
    if !r.exists {
        return Err(WireError::new(ErrorKind::NotFound, path));
    }
    let target = r.path.join(name);
    let meta = target.symlink_metadata().map_err(|e| err_from_io(path, e))?;
    let result = if meta.is_dir() { std::fs::remove_dir_all(&target) } else { std::fs::remove_file(&target) };
    result.map_err(|e| err_from_io(path, e))
}

fn map_lexical(path: &str, e: crate::error::Error) -> WireError {
    match e {
        crate::error::Error::PathEscape(_) => escape(path),
        crate::error::Error::InvalidPath { reason, .. } => invalid(path, &reason),
        other => invalid(path, &other.to_string()),
    }
}
