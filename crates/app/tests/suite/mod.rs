//! The suites, by service.

mod sessions;
mod skills;
mod support;
