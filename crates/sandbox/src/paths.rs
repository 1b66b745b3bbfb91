//! Lexical confinement of caller paths to `/workspace`: a pure function the
//! host and the agent both apply. Symlinks are checked by the agent, which
//! sees the sandbox's filesystem.

use crate::api::WORKSPACE;
use crate::error::{Error, Result};

/// Turns a caller's path (absolute under `/workspace`, or relative to it)
/// into a normalized absolute sandbox path. Rejects `..` anywhere and
/// absolute paths elsewhere with [`Error::PathEscape`].
pub fn workspace_path(path: &str) -> Result<String> {
    if path.is_empty() {
        return Err(invalid(path, "empty path"));
    }
    if path.contains('\0') {
        return Err(invalid(path, "contains a NUL byte"));
    }
    let rest = if let Some(abs) = path.strip_prefix('/') {
        let trimmed = abs.trim_start_matches('/');
        match trimmed.strip_prefix(&WORKSPACE[1..]) {
            Some("") => "",
            Some(r) if r.starts_with('/') => r,
            _ => return Err(Error::PathEscape(path.to_string())),
        }
    } else {
        path
    };
    let mut out = String::from(WORKSPACE);
    for part in rest.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err(Error::PathEscape(path.to_string())),
            p => {
                out.push('/');
                out.push_str(p);
            }
        }
    }
    Ok(out)
}

/// Like [`workspace_path`], but refuses `/workspace` itself (it cannot be
/// written, deleted or replaced).
pub fn workspace_file(path: &str) -> Result<String> {
    let p = workspace_path(path)?;
    if p == WORKSPACE {
        return Err(invalid(path, "names /workspace itself"));
    }
    Ok(p)
}

/// A command's working directory: absolute anywhere in the sandbox, or
/// relative to `/workspace`.
pub fn cwd_path(cwd: Option<&str>) -> String {
    match cwd {
        None | Some("") => WORKSPACE.to_string(),
        Some(c) if c.starts_with('/') => c.to_string(),
        Some(c) => format!("{WORKSPACE}/{c}"),
    }
}

fn invalid(path: &str, reason: &str) -> Error {
    Error::InvalidPath { path: path.to_string(), reason: reason.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_and_absolute_workspace_paths_normalize() {
        assert_eq!(workspace_path("a/b.txt").unwrap(), "/workspace/a/b.txt");
        assert_eq!(workspace_path("/workspace/a//./b").unwrap(), "/workspace/a/b");
        assert_eq!(workspace_path("//workspace/x").unwrap(), "/workspace/x");
        assert_eq!(workspace_path("/workspace").unwrap(), "/workspace");
        assert_eq!(workspace_path(".").unwrap(), "/workspace");
    }

    #[test]
    fn dot_dot_and_foreign_absolute_paths_escape() {
        for p in ["../etc/passwd", "a/../../x", "/workspace/../etc", "/etc/passwd", "/workspacefoo/x", "/", "a/.."] {
            assert!(matches!(workspace_path(p), Err(Error::PathEscape(_))), "{p}");
        }
    }

    #[test]
    fn empty_nul_and_root_are_invalid() {
        assert!(matches!(workspace_path(""), Err(Error::InvalidPath { .. })));
        assert!(matches!(workspace_path("a\0b"), Err(Error::InvalidPath { .. })));
        assert!(matches!(workspace_file("/workspace/"), Err(Error::InvalidPath { .. })));
    }
}
