//! The store's error type.

/// What can go wrong in a store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("database error (journal writer): {0}")]
    Writer(String),
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("stored document is corrupt: {0}")]
    Corrupt(#[from] serde_json::Error),
    #[error("a cursor names no item of this list: {0}")]
    UnknownCursor(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    Config(String),
}

pub type Result<T> = std::result::Result<T, Error>;
