//! File operations: confined to `/workspace` (escapes → 400), bounded in
//! size (→ 413), and consistent with what commands see.

use super::support::*;
use sandbox::{Error, FileKind, Sandbox};

#[tokio::test]
async fn files_written_through_the_api_are_seen_by_commands_and_back() {
    let sb = start("files").await;
    sb.write_file("dir/sub/a.txt", b"alpha".to_vec()).await.unwrap();
    assert_eq!(sh(&*sb.sandbox, "cat /workspace/dir/sub/a.txt").await, "alpha");
    sh(&*sb.sandbox, "printf beta > dir/b.bin; ln -s sub/a.txt dir/link").await;
    assert_eq!(sb.read_file("/workspace/dir/b.bin").await.unwrap(), b"beta");
    assert_eq!(sb.read_file("dir/link").await.unwrap(), b"alpha");
    let names: Vec<(String, FileKind)> =
        sb.list_dir("dir").await.unwrap().into_iter().map(|e| (e.name, e.kind)).collect();
    assert_eq!(
        names,
        [("b.bin".into(), FileKind::File), ("link".into(), FileKind::Symlink), ("sub".into(), FileKind::Dir)]
    );
    sb.delete("dir/link").await.unwrap();
    assert_eq!(sb.read_file("dir/sub/a.txt").await.unwrap(), b"alpha", "deleting a link kept its target");
    sb.delete("dir").await.unwrap();
    assert!(matches!(sb.read_file("dir/b.bin").await, Err(Error::NotFound(_))));
    assert!(!sb.host_path("dir").exists());
}

#[tokio::test]
async fn make_dir_makes_parents_keeps_what_exists_and_stays_in_the_workspace() {
    let sb = start("mkdir").await;
    sb.make_dir("/workspace/outputs/sessions/s1").await.unwrap();
    assert!(sb.host_path("outputs/sessions/s1").is_dir());
    sb.write_file("outputs/sessions/s1/a.txt", b"kept".to_vec()).await.unwrap();
    sb.make_dir("outputs/sessions/s1").await.unwrap();
    assert_eq!(sb.read_file("outputs/sessions/s1/a.txt").await.unwrap(), b"kept", "an existing directory was kept");
    let err = sb.make_dir("outputs/sessions/s1/a.txt").await.unwrap_err();
    assert!(matches!(err, Error::InvalidPath { ref reason, .. } if reason == "is not a directory"), "{err}");
    sh(&*sb.sandbox, "ln -s /etc out").await;
    for path in ["out/new", "../x", "/tmp/x"] {
        let err = sb.make_dir(path).await.err().unwrap_or_else(|| panic!("{path} was made"));
        assert_eq!(err.http_status(), 400, "{path}: {err}");
    }
    assert!(!std::path::Path::new("/etc/new").exists());
}

#[tokio::test]
async fn paths_that_escape_workspace_are_rejected_with_400() {
    let sb = start("escape").await;
    sh(&*sb.sandbox, "ln -s /etc out; ln -s ../../etc/passwd up; ln -s /etc/passwd abs; mkdir d").await;
    for path in ["../etc/passwd", "/etc/passwd", "d/../../etc/passwd", "out/passwd", "up", "abs", "/workspacex/a"] {
        let err = sb.read_file(path).await.err().unwrap_or_else(|| panic!("{path} was read"));
        assert!(matches!(err, Error::PathEscape(_)), "{path}: {err}");
        assert_eq!(err.http_status(), 400);
    }
    for path in ["out/new.txt", "../x", "/tmp/x"] {
        let err = sb.write_file(path, b"x".to_vec()).await.err().unwrap_or_else(|| panic!("{path} was written"));
        assert_eq!(err.http_status(), 400, "{path}: {err}");
    }
    assert!(matches!(sb.list_dir("out").await, Err(Error::PathEscape(_))));
    assert!(matches!(sb.delete("/workspace").await, Err(Error::InvalidPath { .. })));
    let err = sb.read_file("d").await.err().unwrap();
    assert!(
        matches!(err, Error::InvalidPath { ref path, ref reason } if path == "/workspace/d" && reason == "is a directory"),
        "{err}"
    );
    assert_eq!(err.http_status(), 400);
    assert!(matches!(sb.delete("..").await, Err(Error::PathEscape(_))));
}

#[tokio::test]
async fn a_file_over_the_transfer_limit_is_rejected_with_413() {
    let sb = start_with("large", |s| s.limits.max_transfer_bytes = 1 << 20).await;
    let err = sb.write_file("big", vec![0u8; (1 << 20) + 1]).await.err().unwrap();
    assert!(matches!(err, Error::TooLarge { size, limit: 1048576 } if size == (1 << 20) + 1), "{err}");
    assert_eq!(err.http_status(), 413);
    sh(&*sb.sandbox, "head -c 2000000 /dev/zero > big.bin").await;
    let err = sb.read_file("big.bin").await.err().unwrap();
    assert!(matches!(err, Error::TooLarge { size: 2000000, .. }), "{err}");
    assert_eq!(err.http_status(), 413);
    // Exactly at the limit is fine.
    sb.write_file("ok", vec![1u8; 1 << 20]).await.unwrap();
    assert_eq!(sb.read_file("ok").await.unwrap().len(), 1 << 20);
}
