//! The store's error type.

/// What can go wrong in a store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("database error: {0}")]
    Database(#[source] sqlx::Error),
    /// The database cannot be reached now (down, restarting, connections
    /// broken); the same request may succeed once it is back.
    #[error("the database is unavailable: {0}")]
    Unavailable(#[source] sqlx::Error),
    /// The database named at start cannot be reached.
    #[error("cannot connect to PostgreSQL at {target}: {source}")]
    Connect {
        /// `host:port`, or the socket's path.
        target: String,
        #[source]
        source: sqlx::Error,
    },
    #[error("database error (journal writer): {0}")]
    Writer(String),
    #[error("migration failed: {0}")]
    Migrate(#[source] sqlx::migrate::MigrateError),
    /// The database was migrated by a newer build: nothing is written to it.
    #[error(
        "the database's schema is newer than this build knows (it has migration {version}, this build \
         knows up to {known}): run a newer rebyte"
    )]
    NewerSchema { version: i64, known: i64 },
    #[error("stored document is corrupt: {0}")]
    Corrupt(#[from] serde_json::Error),
    #[error("a cursor names no item of this list: {0}")]
    UnknownCursor(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    Config(String),
}

impl Error {
    /// Whether the database is unreachable for now (the caller may retry later).
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Error::Unavailable(_) | Error::Connect { .. })
    }
}

impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Self {
        if unavailable(&e) { Error::Unavailable(e) } else { Error::Database(e) }
    }
}

impl From<sqlx::migrate::MigrateError> for Error {
    fn from(e: sqlx::migrate::MigrateError) -> Self {
        match e {
            sqlx::migrate::MigrateError::Execute(e) => e.into(),
            e => Error::Migrate(e),
        }
    }
}

/// Errors that say the database is not there rather than that a statement
/// failed: broken or refused connections, a pool with none to give, and
/// PostgreSQL's connection-exception and shutdown states.
pub(crate) fn unavailable(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Tls(_) => true,
        sqlx::Error::Protocol(_) | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(d) => d.code().is_some_and(|code| {
            // 08: connection exception; 57P01–57P03: shutting down, crashed, starting up.
            code.starts_with("08") || matches!(code.as_ref(), "57P01" | "57P02" | "57P03")
        }),
        _ => false,
    }
}

pub type Result<T> = std::result::Result<T, Error>;
