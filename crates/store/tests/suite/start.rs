//! Opening a store: bad URLs, an unreachable server, a newer schema, and two
//! servers migrating one new database at once.

use super::backend::{Backend, Kind};
use super::contract;
use super::records::org;

contract!(a_database_of_a_newer_schema_is_refused_and_left_as_it_was, reopening_keeps_everything);

async fn a_database_of_a_newer_schema_is_refused_and_left_as_it_was(b: &Backend) {
    org(b.store.as_ref(), "o").await;
    b.execute(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES (9999, 'from the future', TRUE, X'00', 1)"
            .replace("X'00'", if b.kind == Kind::Postgres { "'\\x00'::bytea" } else { "X'00'" })
            .as_str(),
    )
    .await;
    let error = store::open(&b.url).await.err().unwrap();
    assert!(matches!(error, store::Error::NewerSchema { version: 9999, .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("newer") && message.contains("9999"), "{message}");
    // Nothing was written: the store still opens for what it knows once the newer row is gone.
    b.execute("DELETE FROM _sqlx_migrations WHERE version = 9999").await;
    let reopened = store::open(&b.url).await.unwrap();
    assert_eq!(reopened.count_organizations().await.unwrap(), 1);
}

async fn reopening_keeps_everything(b: &Backend) {
    let id = org(b.store.as_ref(), "kept").await;
    let reopened = store::open(&b.url).await.unwrap();
    assert_eq!(reopened.get_organization(&id).await.unwrap().unwrap().name, "kept");
}

#[tokio::test]
async fn a_url_of_an_unknown_scheme_or_none_at_all_is_refused_by_name() {
    for (url, says) in
        [("mysql://localhost/rebyte", "scheme 'mysql' is not supported"), ("rebyte.db", "is not a database URL")]
    {
        let error = store::open(url).await.err().unwrap().to_string();
        assert!(error.contains(says), "{url}: {error}");
    }
}

#[tokio::test]
async fn a_malformed_postgres_url_is_a_clear_error() {
    let error = store::open("postgres://user:secret@host:notaport/db").await.err().unwrap().to_string();
    assert!(error.starts_with("malformed PostgreSQL URL"), "{error}");
    assert!(!error.contains("secret"), "the password is not repeated: {error}");
}

#[tokio::test]
async fn an_unreachable_server_is_named_by_host_and_port() {
    // A port nobody listens on: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let error = store::open(&format!("postgres://rebyte@127.0.0.1:{port}/rebyte")).await.err().unwrap();
    assert!(error.is_unavailable(), "{error:?}");
    let message = error.to_string();
    assert!(message.starts_with(&format!("cannot connect to PostgreSQL at 127.0.0.1:{port}: ")), "{message}");
    assert!(!message.contains('\n'), "one line: {message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_migrating_a_new_database_at_once_both_start() {
    let Some(url) = test_support::postgres::fresh().await else { return };
    let (a, b) = tokio::join!(store::open(&url), store::open(&url));
    let (a, b) = (a.unwrap(), b.unwrap());
    let id = org(a.as_ref(), "shared").await;
    assert!(b.get_organization(&id).await.unwrap().is_some());
}
