//! The application layer's one integration-test binary: each test builds a
//! real `App` (a SQLite file, the engine and its journal, the environments
//! manager, sealed credentials) and calls its services as the HTTP handlers do.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
