//! The host toolchain a sandbox sees read-only: system directories, the
//! symlinks of a merged-/usr layout, a pyenv or out-of-tree Python/Node
//! install, the `PATH` that finds them, and host secrets masked under `/etc`.

use std::path::{Path, PathBuf};

/// What of the host is visible inside every sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolchain {
    /// Host directories bound read-only at the same path, in mount order.
    pub dirs: Vec<PathBuf>,
    /// Host symlinks recreated as is (e.g. `/bin -> usr/bin`).
    pub symlinks: Vec<(PathBuf, PathBuf)>,
    /// Host files or directories hidden behind an empty one.
    pub masks: Vec<PathBuf>,
    /// `PATH` inside the sandbox.
    pub path: String,
    /// Extra variables the toolchain needs (`PYENV_ROOT`).
    pub env: Vec<(String, String)>,
}

const SYSTEM: &[&str] = &["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"];
const MASKS: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssh",
    "/etc/ssl/private",
    "/etc/security/opasswd",
];
/// Where `pip install --user` and `npm install -g` put commands (the home
/// directory is the sandbox's own).
const USER_BINS: &[&str] = &["/root/.local/bin", "/root/.npm-global/bin"];
const SYSTEM_PATH: &[&str] = &["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"];

impl Toolchain {
    /// Looks at this host: the system directories that exist, pyenv (from
    /// `PYENV_ROOT` or `~/.pyenv`) and `python3`, `pip3`, `node`, `npm`,
    /// `npx` found on `PATH` outside them.
    pub fn detect() -> Toolchain {
        let mut t = Toolchain {
            dirs: Vec::new(),
            symlinks: Vec::new(),
            masks: Vec::new(),
            path: String::new(),
            env: Vec::new(),
        };
        for dir in SYSTEM {
            let p = Path::new(dir);
            match p.symlink_metadata() {
                Ok(m) if m.file_type().is_symlink() => {
                    if let Ok(to) = std::fs::read_link(p) {
                        t.symlinks.push((p.to_path_buf(), to));
                    }
                }
                Ok(m) if m.is_dir() => t.dirs.push(p.to_path_buf()),
                _ => {}
            }
        }
        t.masks = MASKS.iter().map(PathBuf::from).collect();
        let mut front: Vec<PathBuf> = Vec::new();
        let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/root"));
        let pyenv = std::env::var_os("PYENV_ROOT").map(PathBuf::from).unwrap_or_else(|| home.join(".pyenv"));
        if pyenv.is_dir() {
            let version = std::env::var("PYENV_VERSION")
                .ok()
                .or_else(|| std::fs::read_to_string(pyenv.join("version")).ok())
                .and_then(|v| v.lines().next().map(|l| l.trim().to_string()))
                .filter(|v| !v.is_empty() && v != "system");
            if let Some(bin) = version.map(|v| pyenv.join("versions").join(v).join("bin")).filter(|b| b.is_dir()) {
                front.push(bin);
            }
            front.push(pyenv.join("shims"));
            t.env.push(("PYENV_ROOT".into(), pyenv.display().to_string()));
            t.dirs.push(pyenv);
        }
        // `npm -g` installs into the sandbox home (NPM_CONFIG_PREFIX), which
        // would also move npm's global config away from the host's.
        if Path::new("/etc/npmrc").is_file() {
            t.env.push(("NPM_CONFIG_GLOBALCONFIG".into(), "/etc/npmrc".into()));
        }
        let search = std::env::var_os("PATH").unwrap_or_default();
        for tool in ["python3", "pip3", "node", "npm", "npx"] {
            let Some(found) = std::env::split_paths(&search).map(|d| d.join(tool)).find(|p| p.is_file()) else {
                continue;
            };
            let Ok(real) = found.canonicalize() else { continue };
            if t.dirs.iter().any(|d| real.starts_with(d)) {
                continue;
            }
            // An install of its own (/srv/node/bin/node): bind its root.
            if let (Some(bin), Some(root)) = (real.parent(), real.parent().and_then(Path::parent))
                && root != Path::new("/")
            {
                front.push(bin.to_path_buf());
                t.dirs.push(root.to_path_buf());
            }
        }
        let mut path: Vec<String> = USER_BINS.iter().map(|s| s.to_string()).collect();
        for p in front.iter().map(|p| p.display().to_string()).chain(SYSTEM_PATH.iter().map(|s| s.to_string())) {
            if !path.contains(&p) {
                path.push(p);
            }
        }
        t.path = path.join(":");
        t
    }

    /// The host's system directories among [`Toolchain::dirs`] (`/usr`,
    /// `/etc` …), in order: what a writable system overlays.
    pub fn system_dirs(&self) -> impl Iterator<Item = &PathBuf> {
        self.dirs.iter().filter(|d| SYSTEM.iter().any(|s| d.as_path() == Path::new(s)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detection_finds_usr_and_a_path_that_ends_in_the_system_dirs() {
        let t = Toolchain::detect();
        assert!(t.dirs.contains(&PathBuf::from("/usr")));
        assert!(t.path.starts_with("/root/.local/bin:"));
        assert!(t.path.ends_with("/usr/bin:/sbin:/bin"));
        assert!(!t.path.contains(".cargo"));
    }
}
