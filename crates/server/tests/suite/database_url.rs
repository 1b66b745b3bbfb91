//! `--database-url`: a database that cannot be used is a clear one-line
//! error at start, and nothing is written (no bootstrap key, no database).

use server::Config;

async fn start_error(url: &str) -> (String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::new(dir.path().join("data"));
    config.database_url = Some(url.to_string());
    let error = server::start(&config).await.err().expect("the start must fail");
    (error.to_string(), dir)
}

fn nothing_written(dir: &tempfile::TempDir) {
    let data = dir.path().join("data");
    let files: Vec<_> =
        std::fs::read_dir(&data).map(|d| d.flatten().map(|e| e.file_name()).collect()).unwrap_or_default();
    assert!(files.is_empty(), "nothing is written: {files:?}");
}

#[tokio::test]
async fn an_unreachable_postgres_names_its_host_and_port() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let (error, dir) = start_error(&format!("postgres://rebyte@127.0.0.1:{port}/rebyte")).await;
    assert!(error.contains(&format!("cannot connect to PostgreSQL at 127.0.0.1:{port}: ")), "{error}");
    assert!(!error.contains('\n'), "one line: {error}");
    nothing_written(&dir);
}

#[tokio::test]
async fn a_malformed_url_or_an_unknown_scheme_is_refused_by_name() {
    for (url, says) in [
        ("postgres://rebyte:hunter2@localhost:port/db", "malformed PostgreSQL URL"),
        ("mysql://localhost/rebyte", "database URL scheme 'mysql' is not supported"),
    ] {
        let (error, dir) = start_error(url).await;
        assert!(error.contains(says), "{url}: {error}");
        assert!(!error.contains("hunter2"), "the password is not repeated: {error}");
        nothing_written(&dir);
    }
}
