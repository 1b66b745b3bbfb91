//! Migrations, for both backends: each backend's own files
//! (`migrations/sqlite`, `migrations/postgres`), applied on open. sqlx takes
//! a lock around them (PostgreSQL: an advisory lock), so servers starting at
//! once migrate once. A database that has a migration this build does not
//! know was written by a newer build: that is a clear error, and nothing is
//! applied or written.

use crate::{Error, Result};
use sqlx::migrate::{Migrate, MigrateError, Migrator};

/// Applies `migrator`'s migrations that `conn` has not seen yet.
pub(crate) async fn run<'a, A>(migrator: &Migrator, conn: A) -> Result<()>
where
    A: sqlx::Acquire<'a>,
    <A::Connection as std::ops::Deref>::Target: Migrate,
{
    migrator.run(conn).await.map_err(|e| match e {
        MigrateError::VersionMissing(version) => {
            Error::NewerSchema { version, known: migrator.iter().map(|m| m.version).max().unwrap_or(0) }
        }
        e => e.into(),
    })
}
