//! The models crate's one integration test binary: every provider runs
//! against the scripted model server over real HTTP.
// Helpers outside #[test] functions panic on setup failures too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
