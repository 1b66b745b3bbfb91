//! The test-support crate's one integration test binary.
// Helpers outside #[test] functions panic on setup failures too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
