//! The store's contract suite: every behaviour, against SQLite (a real
//! temporary file) and against PostgreSQL (a real server, a fresh database
//! per test; see `scripts/postgres`).

mod suite;
