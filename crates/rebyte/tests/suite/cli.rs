//! Errors on the command line: one line, no backtrace, nothing written.

use std::path::Path;
use std::process::{Command, Output};

fn rebyte(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rebyte"))
        .args(args)
        .current_dir(dir)
        .env("RUST_BACKTRACE", "1")
        .env_remove("REBYTE_DATA_DIR")
        .env_remove("REBYTE_DATABASE_URL")
        .env_remove("REBYTE_CONFIG")
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Everything below `dir`, relative, sorted.
fn tree(dir: &Path) -> Vec<String> {
    let mut all = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            all.push(path.strip_prefix(dir).unwrap().display().to_string());
            if path.is_dir() {
                stack.push(path);
            }
        }
    }
    all.sort();
    all
}

#[test]
fn keys_commands_on_a_directory_without_a_database_say_so_and_create_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["keys", "list", "--data-dir", "data"][..],
        &["keys", "revoke", "key_0", "--data-dir", "data"],
        &["keys", "create", "--org", "acme", "--data-dir", "data"],
    ] {
        let out = rebyte(args, dir.path());
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = stderr(&out);
        let expected =
            "error: no database at data/rebyte.db (is --data-dir right? `rebyte serve` creates it on first start)\n";
        assert_eq!(err, expected, "{args:?}: one line, no backtrace");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    assert_eq!(tree(dir.path()), Vec::<String>::new(), "nothing was created");
}

#[test]
fn a_models_config_that_does_not_parse_stops_the_start_before_any_key_is_printed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("rebyte.toml"), "[providers.local\nkind = \"openai\"\n").unwrap();
    // `./rebyte.toml` is read when present, as the README says.
    let out = rebyte(&["serve", "--listen", "127.0.0.1:0", "--data-dir", "data"], dir.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "no key, no listening line: {}", String::from_utf8_lossy(&out.stdout));
    let err = stderr(&out);
    let last = err.lines().last().unwrap();
    assert!(last.starts_with("error: model configuration: rebyte.toml: TOML parse error at line 1"), "{err}");
    assert!(!err.contains("stack backtrace") && !err.contains("panicked"), "{err}");
    assert_eq!(tree(dir.path()), vec!["rebyte.toml".to_string()], "no data directory, no database, no key file");
}

#[test]
fn a_server_that_cannot_listen_says_where_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = rebyte(&["serve", "--listen", &addr, "--data-dir", "data"], dir.path());
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    let last = err.lines().last().unwrap();
    assert!(last.starts_with(&format!("error: cannot listen on {addr}: ")), "{err}");
    assert!(last.contains("in use"), "the cause, once: {err}");
    assert!(!err.contains("stack backtrace") && !err.contains("Caused by"), "{err}");
}

#[test]
fn a_sandbox_allow_range_that_is_not_a_range_stops_the_start_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    for bad in ["10.1.2.3/8", "fd00::/8", "10.0.0.0/33"] {
        let out = rebyte(
            &["serve", "--listen", "127.0.0.1:0", "--data-dir", "data", "--sandbox-allow-cidr", bad],
            dir.path(),
        );
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(stderr(&out).contains("--sandbox-allow-cidr"), "{}", stderr(&out));
    }
    assert!(tree(dir.path()).is_empty(), "nothing written");
}
