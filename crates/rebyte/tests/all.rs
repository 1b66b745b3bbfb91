//! The `rebyte` binary's one integration-test binary: its command line as a
//! user meets it (help, errors, the keys commands on a data directory).

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
