//! The server's one integration-test binary: every test starts a real server
//! on 127.0.0.1:0 over a real SQLite file (or, with REBYTE_TEST_DATABASE_URL,
//! a fresh PostgreSQL database) and talks HTTP to it.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
mod support;
