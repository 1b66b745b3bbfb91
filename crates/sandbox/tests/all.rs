//! The sandbox crate's integration tests: one binary, modules under `suite/`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
