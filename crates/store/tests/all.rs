//! The store's contract suite: every behaviour, against SQLite (a real
//! temporary file) and against PostgreSQL (a real server, a fresh database
//! per test; see `scripts/postgres`).

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
