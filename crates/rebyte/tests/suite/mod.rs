//! The suites, by what they exercise.

mod cli;
mod help;
