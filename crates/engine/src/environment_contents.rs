//! Placing what an environment was created with, at its first
//! initialization: its skills before its files and setup commands, and the
//! bytes of its uploaded (`file_id`) files for setup to write. Each skill's zip (the environment's own copy,
//! stored when it was created) is unpacked on the host into
//! `<data-dir>/environments/<id>/skills/<name>/`, which the sandbox sees
//! read-only at `/workspace/.agents/skills/<name>/` (a read-only bind, see
//! [`sandbox::SandboxSpec::read_only`]); files are mode 0444, scripts 0555.
//! The zips were checked on upload; unpacking checks the bounds again.

use protocol::environment::{EnvironmentRecord, FileParam};
use protocol::skill::{SKILLS_DIR, content_key};
use std::io::{Cursor, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use store::Store;
use zip::ZipArchive;

/// Most bytes unpacked from one skill (the upload limit).
const MAX_BYTES: u64 = 64 << 20;
/// Most entries in one skill's zip (the upload limit).
const MAX_ENTRIES: usize = 2000;

/// A skill that could not be placed: the step (`skills[i]`) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallError {
    pub step: String,
    pub message: String,
}

/// The host directory of an environment's skills (under its own directory).
pub fn skills_dir(env_dir: &Path) -> PathBuf {
    env_dir.join("skills")
}

/// The read-only bind that shows `env_dir`'s skills in the sandbox.
pub fn bind(env_dir: &Path) -> (PathBuf, String) {
    (skills_dir(env_dir), SKILLS_DIR.to_string())
}

/// Unpacks one skill's zip into `dir` (created); returns the bytes written.
pub fn unpack(zip: &[u8], dir: &Path) -> Result<u64, String> {
    let mut archive = ZipArchive::new(Cursor::new(zip)).map_err(|e| format!("its zip cannot be read: {e}"))?;
    if archive.len() > MAX_ENTRIES {
        return Err(format!("its zip has more than {MAX_ENTRIES} entries"));
    }
    let io = |what: &str, p: &Path, e: std::io::Error| format!("cannot {what} {}: {e}", p.display());
    std::fs::create_dir_all(dir).map_err(|e| io("create", dir, e))?;
    let mut total = 0u64;
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).map_err(|e| format!("its zip cannot be read: {e}"))?;
        let Some(relative) = entry.enclosed_name() else {
            return Err(format!("'{}' escapes the skill's directory", entry.name()));
        };
        let mode = entry.unix_mode();
        if mode.is_some_and(|m| m & 0o170000 == 0o120000) {
            return Err(format!("'{}' is a symlink", entry.name()));
        }
        let path = dir.join(relative);
        if entry.is_dir() {
            std::fs::create_dir_all(&path).map_err(|e| io("create", &path, e))?;
            continue;
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io("create", parent, e))?;
        }
        let mut out = std::fs::File::create_new(&path).map_err(|e| io("create", &path, e))?;
        let written = std::io::copy(&mut (&mut entry).take(MAX_BYTES - total + 1), &mut out)
            .map_err(|e| io("write", &path, e))?;
        total += written;
        if total > MAX_BYTES {
            return Err(format!("it unpacks to more than {MAX_BYTES} bytes"));
        }
        let executable = mode.is_some_and(|m| m & 0o111 != 0);
        let perms = std::fs::Permissions::from_mode(if executable { 0o555 } else { 0o444 });
        std::fs::set_permissions(&path, perms).map_err(|e| io("set the mode of", &path, e))?;
    }
    Ok(total)
}

/// Unpacks every skill of `record` into the skills directory of `env_dir`,
/// replacing whatever an interrupted earlier attempt left there.
pub async fn install(
    store: &dyn Store,
    org_id: &str,
    record: &EnvironmentRecord,
    env_dir: &Path,
) -> Result<(), InstallError> {
    let mut zips = Vec::with_capacity(record.skills.len());
    for (i, skill) in record.skills.iter().enumerate() {
        let step = format!("skills[{i}]");
        let zip = store.environment_content(org_id, &record.id, &content_key(skill.name())).await.map_err(|e| {
            InstallError { step: step.clone(), message: format!("cannot read skill '{}': {e}", skill.name()) }
        })?;
        let zip = zip.ok_or_else(|| InstallError {
            step: step.clone(),
            message: format!("the files of skill '{}' are missing", skill.name()),
        })?;
        zips.push((step, skill.name().to_string(), zip));
    }
    let root = skills_dir(env_dir);
    let unpacked = tokio::task::spawn_blocking(move || {
        if root.exists() {
            std::fs::remove_dir_all(&root).map_err(|e| InstallError {
                step: "skills".into(),
                message: format!("cannot clear {}: {e}", root.display()),
            })?;
        }
        std::fs::create_dir_all(&root).map_err(|e| InstallError {
            step: "skills".into(),
            message: format!("cannot create {}: {e}", root.display()),
        })?;
        for (step, name, zip) in zips {
            unpack(&zip, &root.join(&name))
                .map_err(|e| InstallError { step, message: format!("skill '{name}' cannot be unpacked: {e}") })?;
        }
        Ok(())
    });
    unpacked
        .await
        .unwrap_or_else(|e| Err(InstallError { step: "skills".into(), message: format!("unpacking failed: {e}") }))
}

/// Fills in the data of the `file_id` entries of `spec.files` (one per entry
/// of the configuration's `files`) from the environment's contents; on
/// failure, the step (`files[i]`) and why.
pub async fn uploaded_files(
    store: &dyn Store,
    org_id: &str,
    record: &EnvironmentRecord,
    spec: &mut sandbox::SetupSpec,
) -> Result<(), (String, String)> {
    use base64::Engine as _;
    for (i, f) in record.config.files.iter().flatten().enumerate() {
        let FileParam::FileId { file_id, .. } = f else { continue };
        let step = format!("files[{i}]");
        let data = match store.environment_content(org_id, &record.id, &protocol::skill::file_content_key(i)).await {
            Ok(Some(data)) => data,
            Ok(None) => return Err((step, format!("the bytes of file '{file_id}' are missing"))),
            Err(e) => return Err((step, format!("cannot read file '{file_id}': {e}"))),
        };
        if let Some(file) = spec.files.get_mut(i) {
            file.data = base64::engine::general_purpose::STANDARD.encode(data);
        }
    }
    Ok(())
}
