//! The suites, by service.

mod sessions;
mod support;
