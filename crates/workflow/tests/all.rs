//! The workflow crate's tests: one binary, modules under `suite/`. Programs run in the real
//! interpreter; the host answering their nested calls is a small one written here.

// Helpers outside #[test] functions unwrap too; clippy.toml's test allowance does not reach them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
