//! `rebyte serve --help` names every environment variable the server reads:
//! the variables are found in the workspace's sources (`env = "…"` on an
//! option, `std::env::var("…")`, and the provider variables of the models
//! crate), so a new one cannot be added without its help line.

use regex::Regex;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The variables read by the code that runs in `rebyte serve` (each crate's
/// `src/`, test modules left out).
fn variables_read() -> BTreeSet<String> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let read = Regex::new(r#"(?:env::var(?:_os)?\(|env = |from_env\()"([A-Z][A-Z0-9_]+)""#).unwrap();
    let provider = Regex::new(r#""((?:OPENAI|ANTHROPIC)_[A-Z_]+)""#).unwrap();
    let mut found = BTreeSet::new();
    for krate in ["protocol", "store", "models", "sandbox", "mcp", "engine", "server", "secrets", "rebyte"] {
        let mut files = Vec::new();
        sources(&crates.join(krate).join("src"), &mut files);
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            // Unit tests sit at the end of a file, behind #[cfg(test)].
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            found.extend(read.captures_iter(code).map(|c| c[1].to_string()));
            if krate == "models" {
                found.extend(provider.captures_iter(code).map(|c| c[1].to_string()));
            }
        }
    }
    found
}

#[test]
fn serve_help_names_every_environment_variable_the_server_reads() {
    let out = Command::new(env!("CARGO_BIN_EXE_rebyte")).args(["serve", "--help"]).output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    let read = variables_read();
    for must in ["REBYTE_LISTEN", "REBYTE_DATA_DIR", "REBYTE_BOOTSTRAP_KEY", "OPENAI_BASE_URL"] {
        assert!(read.contains(must), "the scan finds {must}: {read:?}");
    }
    let missing: Vec<&String> = read.iter().filter(|v| !help.contains(v.as_str())).collect();
    assert!(missing.is_empty(), "not in `rebyte serve --help`: {missing:?}\n{help}");
}
